"""kmock's client on secured listeners: a Kafka client properties file read as Java reads it,
TLS (with and without a client certificate), SASL PLAIN and SCRAM-SHA-256/512 against the
in-process broker, and failures that name what failed."""

from __future__ import annotations

import base64
import logging
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.security.certs import CLIENT_PRINCIPAL, write_certs
from broker.security.scram import ScramServer, ScramStore, make_credential
from broker.server import serve
from client import ClientSecurity, ConnectionFailed, KafkaClient, read_properties
from client.sasl import SaslProtocolError, ScramClient
from client.security import parse_jaas
from protocol.errors import ErrorCode, KafkaError
from tests.conftest import broker_config

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"


def test_properties_are_read_as_java_reads_them() -> None:
    text = (
        "# a comment\n"
        "! another\n"
        "security.protocol = SASL_SSL\n"
        "sasl.mechanism:SCRAM-SHA-512\n"
        "sasl.jaas.config=" + SCRAM_MODULE + " required \\\n"
        '    username="bob" \\\n'
        '    password="p\\\\w=d";\n'
        "spaced value with blanks\n"
        "escaped\\=key=tab\\there\\u0041\n"
        "empty=\n"
    )
    assert read_properties(text) == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_MODULE + ' required username="bob" password="p\\w=d";',
        "spaced": "value with blanks",
        "escaped=key": "tab\thereA",
        "empty": "",
    }
    # the JAAS value keeps its own escapes: \\ in the file is \ in the value, and the JAAS
    # grammar's \\ inside quotes is one backslash again
    assert parse_jaas(read_properties(text)["sasl.jaas.config"]) == (
        SCRAM_MODULE,
        {"username": "bob", "password": "pw=d"},
    )


def test_a_client_properties_file_becomes_settings() -> None:
    security = ClientSecurity.from_properties(
        {
            "security.protocol": "sasl_ssl",
            "sasl.jaas.config": f'{PLAIN_MODULE} required username="alice" password="s3cret";',
            "ssl.truststore.location": "/certs/ca.pem",
            "ssl.endpoint.identification.algorithm": "",
            "client.id": "unused-by-kmock",
        }
    )
    assert security.security_protocol == "SASL_SSL"
    assert (security.sasl_mechanism, security.username, security.password) == (
        "PLAIN",
        "alice",
        "s3cret",
    )
    assert security.ssl_cafile == "/certs/ca.pem"
    assert security.check_hostname is False
    assert "s3cret" not in repr(security)


@pytest.mark.parametrize(
    ("props", "message"),
    [
        ({"security.protocol": "SASL"}, "security.protocol: 'SASL' is not one of"),
        ({"security.protocol": "SASL_SSL"}, "sasl.jaas.config: missing"),
        (
            {"ssl.truststore.type": "JKS", "security.protocol": "SSL"},
            "ssl.truststore.type: kmock's client reads PEM only, not JKS",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.jaas.config": f'{SCRAM_MODULE} required username="bob" password="hush";',
            },
            "sasl.mechanism: GSSAPI (the default) is not one kmock's client speaks",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN",
                "sasl.jaas.config": f'{SCRAM_MODULE} required username="bob" password="hush";',
            },
            "sasl.jaas.config: ScramLoginModule does not serve PLAIN",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.jaas.config": f'{PLAIN_MODULE} required username="bob" password="hush"',
            },
            "sasl.jaas.config: no ';' at the end",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.jaas.config": f'{PLAIN_MODULE} required username="bob";',
            },
            "sasl.jaas.config: no password=... option",
        ),
        (
            {
                "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "OAUTHBEARER",
                "sasl.jaas.config": f'{PLAIN_MODULE} required username="bob" password="hush";',
            },
            "sasl.mechanism: OAUTHBEARER is not one",
        ),
        (
            {"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"},
            "ssl.keystore.certificate.chain: goes together with ssl.keystore.key",
        ),
    ],
)
def test_a_bad_properties_file_names_the_key_and_never_the_password(
    props: dict[str, str], message: str
) -> None:
    with pytest.raises(ValueError, match=r"^client\.properties: ") as raised:
        ClientSecurity.from_properties(props, "client.properties")
    assert message in str(raised.value)
    assert "hush" not in str(raised.value)


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_client_and_kmocks_server_agree_and_a_forged_server_is_caught(
    mechanism: str,
) -> None:
    store = ScramStore()
    store.set(mechanism, "bob", make_credential(mechanism, "bob-pw"))
    server = ScramServer(mechanism, store)
    client = ScramClient(mechanism, "bob", "bob-pw")
    server_first = server.evaluate(client.first())
    client.verify(server.evaluate(client.final(server_first)))
    assert server.principal == "User:bob"
    # a server that does not know the credential cannot sign the exchange
    client = ScramClient(mechanism, "bob", "bob-pw")
    client.final(ScramServer(mechanism, store).evaluate(client.first()))
    with pytest.raises(SaslProtocolError, match="Invalid server signature in server final"):
        client.verify(b"v=" + base64.b64encode(bytes(64)))
    with pytest.raises(SaslProtocolError, match=r"SCRAM-SHA-.* failed with error: other-error"):
        client.verify(b"e=other-error")
    client = ScramClient(mechanism, "bob", "bob-pw", nonce="abc")
    with pytest.raises(SaslProtocolError, match="Invalid server nonce: does not start with"):
        client.final(b"r=zzz,s=c2FsdA==,i=4096")
    with pytest.raises(SaslProtocolError, match="Requested iterations 100000000 is more than"):
        client.final(b"r=abcdef,s=c2FsdA==,i=100000000")
    with pytest.raises(SaslProtocolError, match="Requested iterations 4095 is less than"):
        client.final(b"r=abcdef,s=c2FsdA==,i=4095")


# --- against the broker ------------------------------------------------------------------

JAAS = f'{PLAIN_MODULE} required user_alice="alice-pw";'


@pytest.fixture
async def secured(nursery: Any, tmp_path: Path) -> Any:
    certs = write_certs(tmp_path / "certs")
    data = tmp_path / "data"
    data.mkdir()
    store = ScramStore(data / "scram-credentials.json")
    store.set("SCRAM-SHA-512", "bob", make_credential("SCRAM-SHA-512", "bob-pw"))
    store.set("SCRAM-SHA-256", "carol", make_credential("SCRAM-SHA-256", "carol-pw"))
    store.save()
    config = broker_config(
        data,
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:0,"
            "SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "SASL_SSL:SASL_SSL,SSL:SSL,MTLS:SSL",
            "ssl.keystore.location": str(certs["server"]),
            "ssl.truststore.location": str(certs["ca"]),
            "listener.name.mtls.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "connection.failed.authentication.delay.ms": 0,
        },
    )
    broker = await nursery.start(serve, config)
    await broker.ready.wait()
    broker.test_certs = certs
    return broker


def _security(broker: Any, listener: str, **kw: Any) -> ClientSecurity:
    protocol = {"MTLS": "SSL"}.get(listener, listener)
    tls = {"ssl_cafile": str(broker.test_certs["ca"])} if "SSL" in protocol else {}
    return ClientSecurity(security_protocol=protocol, **tls, **kw)


async def _metadata(broker: Any, listener: str, security: ClientSecurity) -> KafkaClient:
    def call() -> KafkaClient:
        address = f"127.0.0.1:{broker.bound_ports[listener]}"
        with KafkaClient(address, timeout_s=10, security=security) as client:
            assert client.metadata([]).brokers
            return client

    with trio.fail_after(20):
        return await trio.to_thread.run_sync(call)


async def test_every_protocol_and_mechanism(
    secured: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "broker.security")
    for listener, mechanism, user, password in [
        ("SASL_PLAINTEXT", "PLAIN", "alice", "alice-pw"),
        ("SASL_PLAINTEXT", "SCRAM-SHA-512", "bob", "bob-pw"),
        ("SASL_SSL", "PLAIN", "alice", "alice-pw"),
        ("SASL_SSL", "SCRAM-SHA-256", "carol", "carol-pw"),
        ("SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw"),
    ]:
        security = _security(
            secured, listener, sasl_mechanism=mechanism, username=user, password=password
        )
        client = await _metadata(secured, listener, security)
        assert client.principal == f"User:{user}"
        assert f"authenticated as User:{user} on {listener}" in caplog.text
    await _metadata(secured, "SSL", _security(secured, "SSL"))
    # a client certificate from one PEM file (ssl.keystore.location: chain and key)
    certs = secured.test_certs
    keystore = tmp_path / "client.pem"
    keystore.write_text(certs["client_cert"].read_text() + certs["client_key"].read_text())
    await _metadata(secured, "MTLS", _security(secured, "MTLS", ssl_keystore=str(keystore)))
    assert f"authenticated as {CLIENT_PRINCIPAL} on MTLS" in caplog.text
    # the same inline (ssl.keystore.certificate.chain + ssl.keystore.key)
    inline = certs["client_cert"].read_text() + certs["client_key"].read_text()
    await _metadata(secured, "MTLS", _security(secured, "MTLS", ssl_keystore_pem=inline))


async def test_a_wrong_password_names_the_failure_and_the_broker_goes_on(secured: Any) -> None:
    for listener, mechanism, user, expected in [
        ("SASL_SSL", "SCRAM-SHA-512", "bob", "invalid credentials with SASL mechanism "
         "SCRAM-SHA-512"),
        ("SASL_PLAINTEXT", "PLAIN", "alice", "Authentication failed: Invalid username or "
         "password"),
        ("SASL_SSL", "SCRAM-SHA-512", "nobody", "invalid credentials"),
    ]:  # fmt: skip
        security = _security(
            secured, listener, sasl_mechanism=mechanism, username=user, password="wrong-hush"
        )
        with pytest.raises(KafkaError) as raised:
            await _metadata(secured, listener, security)
        assert raised.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
        message = str(raised.value)
        assert message.startswith(
            f"SASL_AUTHENTICATION_FAILED: SASL {mechanism} authentication as {user!r} to "
            f"127.0.0.1:{secured.bound_ports[listener]} failed: "
        ), message
        assert expected in message
        assert "wrong-hush" not in message
    ok = _security(
        secured, "SASL_SSL", sasl_mechanism="SCRAM-SHA-512", username="bob", password="bob-pw"
    )
    await _metadata(secured, "SASL_SSL", ok)


async def test_a_mechanism_the_listener_does_not_enable(secured: Any) -> None:
    security = _security(
        secured,
        "SASL_PLAINTEXT",
        sasl_mechanism="SCRAM-SHA-256",
        username="carol",
        password="carol-pw",
    )
    with pytest.raises(KafkaError, match="the broker enables PLAIN, SCRAM-SHA-512") as raised:
        await _metadata(secured, "SASL_PLAINTEXT", security)
    assert raised.value.code == ErrorCode.UNSUPPORTED_SASL_MECHANISM


async def test_tls_failures_are_named(secured: Any, tmp_path: Path) -> None:
    # no truststore: the system's CAs do not know kmock's throwaway CA
    with pytest.raises(ConnectionFailed, match=r"TLS handshake with 127\.0\.0\.1:\d+ failed: "
                       "certificate verify failed"):  # fmt: skip
        await _metadata(secured, "SSL", ClientSecurity(security_protocol="SSL"))
    # a client certificate required, none given
    with pytest.raises(ConnectionFailed):
        await _metadata(secured, "MTLS", _security(secured, "MTLS"))
    # a truststore that is not PEM
    junk = tmp_path / "junk.pem"
    junk.write_text("not a certificate")
    with pytest.raises(ValueError, match=r"ssl\.truststore\.location: not readable PEM"):
        await _metadata(
            secured, "SSL", ClientSecurity(security_protocol="SSL", ssl_cafile=str(junk))
        )
    # the broker served all of that without harm
    await _metadata(secured, "SSL", _security(secured, "SSL"))


async def test_plain_text_on_a_sasl_listener_is_not_an_empty_answer(secured: Any) -> None:
    """Without SASL, the broker answers Metadata with ILLEGAL_SASL_STATE (no brokers, no
    topics) and closes: the client says so rather than reporting no topics."""
    with pytest.raises(ConnectionFailed, match="Metadata answered without any broker"):
        await _metadata(secured, "SASL_PLAINTEXT", ClientSecurity())
