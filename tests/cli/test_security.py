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
    assert set(written) == {"ca", "server", "client_cert", "client_key"}
    assert (tmp_path / "certs" / "server.pem").stat().st_mode & 0o077 == 0
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
