"""`kmock certs`, `kmock serve --add-scram` on a SASL_SSL listener reached by kafka-python,
and secrets kept out of the log and out of DescribeConfigs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import trio
from kafka import KafkaAdminClient, KafkaProducer
from kafka.admin import ConfigResource

from broker.security.authenticator import STORE_FILE
from tests.broker.handlers.helpers import BROKER
from tests.cli.harness import SCENARIO_S, cli
from tests.cli.test_serve import _read_until
from tests.reliability.process import child_env

JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="plain-hush";'


async def test_certs_then_serve_with_add_scram_over_sasl_ssl(tmp_path: Path) -> None:
    code, out, err = await cli("certs", str(tmp_path / "certs"))
    assert code == 0, err
    written = dict(line.split("\t") for line in out.splitlines())
    assert set(written) == {"ca", "server", "client_cert", "client_key", "client_keystore"}
    assert (tmp_path / "certs" / "server.pem").stat().st_mode & 0o077 == 0
    keystore = (tmp_path / "certs" / "client.pem").read_text()
    assert keystore == (
        (tmp_path / "certs" / "client.crt").read_text()
        + (tmp_path / "certs" / "client.key").read_text()
    )
    assert (tmp_path / "certs" / "client.pem").stat().st_mode & 0o077 == 0
    argv = [
        sys.executable, "-m", "cli.main", "serve",
        "--listeners", "SASL_SSL://127.0.0.1:0",
        "--listener-security-protocol-map", "SASL_SSL:SASL_SSL",
        "--ssl-keystore-location", written["server"],
        "--ssl-key-password", "key-hush",
        "--override", f"listener.name.sasl_ssl.plain.sasl.jaas.config={JAAS}",
        "--add-scram", "SCRAM-SHA-512=[name=bob,password=scram-hush]",
        "--log-dirs", str(tmp_path / "data"),
        "--log-format", "json",
    ]  # fmt: skip
    seen = bytearray()
    with trio.fail_after(SCENARIO_S):
        proc = await trio.lowlevel.open_process(
            argv, stderr=subprocess.PIPE, env=child_env(), cwd=str(tmp_path)
        )
        try:
            await _read_until(proc.stderr, "kmock listening on", seen)
            listening = next(
                json.loads(line)
                for line in seen.decode().splitlines()
                if "kmock listening on" in line
            )
            address = listening["message"].split()[3]
            common = {
                "bootstrap_servers": address,
                "security_protocol": "SASL_SSL",
                "ssl_cafile": written["ca"],
                "request_timeout_ms": 10_000,
            }

            def produce_and_describe() -> dict:
                producer = KafkaProducer(
                    sasl_mechanism="SCRAM-SHA-512",
                    sasl_plain_username="bob",
                    sasl_plain_password="scram-hush",
                    **common,
                )
                producer.send("scram-topic", b"hello").get(timeout=10)
                producer.close()
                admin = KafkaAdminClient(
                    sasl_mechanism="PLAIN",
                    sasl_plain_username="alice",
                    sasl_plain_password="plain-hush",
                    **common,
                )
                try:
                    return admin.describe_configs(
                        [ConfigResource(BROKER, "0")], config_filter="all"
                    )
                finally:
                    admin.close()

            described = await trio.to_thread.run_sync(produce_and_describe)
            proc.terminate()
            await _read_until(proc.stderr, "kmock stopped", seen)
            assert await proc.wait() == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    log = seen.decode()
    for secret in ("key-hush", "scram-hush", "plain-hush"):
        assert secret not in log
        assert secret not in (tmp_path / "data" / STORE_FILE).read_text()
    assert "authenticated as User:bob on SASL_SSL" in log
    configs = described["broker"]["0"] if isinstance(described, dict) else None
    assert configs is not None, described
    assert "ssl.key.password" in configs, sorted(configs)
    assert configs["ssl.key.password"]["is_sensitive"] is True
    assert configs["ssl.key.password"]["value"] is None
    assert configs["ssl.keystore.location"]["value"] == written["server"]


async def test_kmock_acls_add_list_remove(nursery, tmp_path: Path) -> None:
    from broker.server import serve
    from tests.cli.harness import bs
    from tests.conftest import broker_config

    broker = await nursery.start(
        serve,
        broker_config(
            tmp_path / "data",
            **{"authorizer.class.name": "StandardAuthorizer", "super.users": "User:ANONYMOUS"},
        ),
    )
    code, out, err = await cli(
        "acls", "add", *bs(broker), "--topic", "orders", "--allow-principal", "User:alice",
        "--operation", "Read", "--operation", "Describe",
    )  # fmt: skip
    assert (code, out.strip()) == (0, "added 2 ACL(s)"), err
    code, out, err = await cli(
        "acls", "add", *bs(broker), "--group", "app-", "--resource-pattern-type", "prefixed",
        "--deny-principal", "User:bob", "--operation", "Read",
    )  # fmt: skip
    assert code == 0, err
    code, out, err = await cli("acls", "list", *bs(broker), "--output", "json")
    assert code == 0, err
    assert sorted((r["name"], r["principal"], r["operation"]) for r in json.loads(out)) == [
        ("app-", "User:bob", "READ"),
        ("orders", "User:alice", "DESCRIBE"),
        ("orders", "User:alice", "READ"),
    ]
    code, out, err = await cli("acls", "remove", *bs(broker), "--topic", "orders")
    assert (code, out.strip()) == (0, "removed 2 ACL(s)"), err
    code, out, err = await cli("acls", "list", *bs(broker), "--output", "json", "--topic", "orders")
    assert json.loads(out) == []
    code, out, err = await cli(
        "acls",
        "add",
        *bs(broker),
        "--cluster",
        "--allow-principal",
        "alice",
        "--operation",
        "Alter",
    )
    assert code == 1
    assert "Could not parse principal from `alice`" in err


SCRAM_JAAS = "org.apache.kafka.common.security.scram.ScramLoginModule required"
PLAIN_JAAS = "org.apache.kafka.common.security.plain.PlainLoginModule required"


def _command_config(path: Path, ca: Path, jaas: str, mechanism: str) -> str:
    """A client.properties as Kafka's docs write one (the JAAS line continued)."""
    module, options = jaas.split(" username=")
    path.write_text(
        "# for kafka-acls --command-config\n"
        "security.protocol=SASL_SSL\n"
        f"sasl.mechanism={mechanism}\n"
        f"sasl.jaas.config={module} \\\n"
        f"    username={options}\n"
        f"ssl.truststore.location={ca}\n"
        "ssl.truststore.type=PEM\n"
        "ssl.endpoint.identification.algorithm=https\n"
    )
    return str(path)


async def test_every_command_authenticates_with_command_config(nursery, tmp_path: Path) -> None:
    """kmock acls list/add/remove as a super user over SASL_SSL with SCRAM-SHA-512, the
    other commands that connect with the same file; a wrong password and a user without
    the right are refused with the broker's message and exit 1."""
    from broker.security.certs import write_certs
    from broker.security.scram import ScramStore, make_credential
    from broker.server import serve
    from tests.conftest import broker_config

    certs = write_certs(tmp_path / "certs")
    data = tmp_path / "data"
    data.mkdir()
    store = ScramStore(data / STORE_FILE)
    store.set("SCRAM-SHA-512", "admin", make_credential("SCRAM-SHA-512", "admin-hush"))
    store.save()
    broker = await nursery.start(
        serve,
        broker_config(
            data,
            **{
                "listeners": "SASL_SSL://127.0.0.1:0",
                "listener.security.protocol.map": "SASL_SSL:SASL_SSL",
                "ssl.keystore.location": str(certs["server"]),
                "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
                "listener.name.sasl_ssl.plain.sasl.jaas.config": f"{PLAIN_JAAS} "
                'user_alice="alice-hush";',
                "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
                "super.users": "User:admin",
                "connection.failed.authentication.delay.ms": 0,
            },
        ),
    )
    await broker.ready.wait()
    bootstrap = ("--bootstrap-server", broker.bootstrap_servers)
    admin = _command_config(
        tmp_path / "admin.properties",
        certs["ca"],
        f'{SCRAM_JAAS} username="admin" password="admin-hush";',
        "SCRAM-SHA-512",
    )
    as_admin = (*bootstrap, "--command-config", admin)
    code, out, err = await cli(
        "acls", "add", *as_admin, "--topic", "orders", "--allow-principal", "User:alice",
        "--operation", "Read", "--operation", "Describe",
    )  # fmt: skip
    assert (code, out.strip()) == (0, "added 2 ACL(s)"), err
    code, out, err = await cli("acls", "list", *as_admin, "--output", "json")
    assert code == 0, err
    assert sorted((r["name"], r["principal"], r["operation"]) for r in json.loads(out)) == [
        ("orders", "User:alice", "DESCRIBE"),
        ("orders", "User:alice", "READ"),
    ]
    # alice authenticates, but may not describe the cluster's ACLs
    alice = _command_config(
        tmp_path / "alice.properties",
        certs["ca"],
        f'{PLAIN_JAAS} username="alice" password="alice-hush";',
        "PLAIN",
    )
    code, out, err = await cli("acls", "list", *bootstrap, "--command-config", alice)
    assert code == 1
    assert err.startswith("kmock: DescribeAcls: CLUSTER_AUTHORIZATION_FAILED"), err
    # every other command that connects takes the same file
    for argv in [
        ("topics", "create", "orders", "--partitions", "2"),
        ("produce", "orders", "--key-separator", ":"),
        ("consume", "orders", "--from-beginning", "--max-messages", "1", "--timeout-ms", "5000"),
        ("offsets", "reset", "g1", "--topic", "orders", "--to-earliest", "--execute"),
        ("offsets", "show", "g1"),
        ("groups", "list"),
        ("groups", "describe", "g1"),
        ("topics", "list"),
    ]:
        code, out, err = await cli(*argv, *as_admin, stdin="k:v\n")
        assert code == 0, (argv, err)
        if argv[0] == "consume":
            assert out.splitlines() == ["v"], out
    code, out, err = await cli("acls", "remove", *as_admin, "--topic", "orders")
    assert (code, out.strip()) == (0, "removed 2 ACL(s)"), err
    # a wrong password: the broker's message, exit 1, the password nowhere
    wrong = _command_config(
        tmp_path / "wrong.properties",
        certs["ca"],
        f'{SCRAM_JAAS} username="admin" password="wrong-hush";',
        "SCRAM-SHA-512",
    )
    code, out, err = await cli("acls", "list", *bootstrap, "--command-config", wrong)
    assert code == 1
    assert err.strip().endswith(
        f"SASL_AUTHENTICATION_FAILED: SASL SCRAM-SHA-512 authentication as 'admin' to "
        f"{broker.bootstrap_servers} failed: Authentication failed during authentication due "
        "to invalid credentials with SASL mechanism SCRAM-SHA-512"
    ), err
    assert "hush" not in out + err
    # without the file: a SASL_SSL listener is not spoken to in plain text
    code, out, err = await cli("topics", "list", *bootstrap, "--request-timeout-ms", "3000")
    assert code == 1, err
    assert err.strip().endswith(
        "(if the listener uses TLS or SASL, give --command-config client.properties)"
    ), err
    # a file that is wrong names the key, exit 2, nothing sent
    bad = tmp_path / "bad.properties"
    bad.write_text(f"security.protocol=SASL_SSL\nsasl.jaas.config={SCRAM_JAAS} username=x;\n")
    code, out, err = await cli("topics", "list", *bootstrap, "--command-config", str(bad))
    assert code == 2
    assert f"--command-config {bad}: sasl.mechanism: GSSAPI (the default)" in err, err
    code, out, err = await cli("topics", "list", *bootstrap, "--command-config", "/nonexistent")
    assert (code, err.strip()) == (
        2,
        "kmock: --command-config: cannot read /nonexistent: No such file or directory",
    ), err
