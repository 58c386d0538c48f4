"""The SASL gate and TLS at the wire: Kafka's state machine (SaslServerAuthenticator), its
answers and messages, the delay after failed credentials, and hostile handshakes (garbage,
truncated, oversized, slow) that end in a close without crashing the broker or keeping the
connection.
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import ssl
import struct
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from broker.security import scram as scram_module
from broker.security.certs import CLIENT_PRINCIPAL, write_certs
from broker.security.mechanisms import OAuthBearerServer, PlainServer, parse_jaas_users
from broker.security.scram import (
    SaslAuthenticationFailure,
    SaslFailure,
    ScramServer,
    ScramStore,
    make_credential,
    parse_add_scram,
)
from broker.server import serve
from protocol.errors import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from tests.conftest import broker_config
from tests.wire import WireClient, read_frame, request_bytes

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_alice="alice-pw";'
)


# --- mechanisms, pure -------------------------------------------------------------------


def test_scram_sha_256_follows_rfc_7677(monkeypatch: pytest.MonkeyPatch) -> None:
    store = ScramStore()
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    store.set("SCRAM-SHA-256", "user", make_credential("SCRAM-SHA-256", "pencil", 4096, salt))
    monkeypatch.setattr(
        scram_module.secrets, "token_urlsafe", lambda n: "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    )
    server = ScramServer("SCRAM-SHA-256", store)
    first = server.evaluate(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (
        b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
    )
    final = server.evaluate(
        b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
        b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
    )
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete
    assert server.principal == "User:user"


def test_scram_refuses_a_wrong_proof_and_an_unknown_user() -> None:
    store = ScramStore()
    store.set("SCRAM-SHA-512", "bob", make_credential("SCRAM-SHA-512", "pw"))
    server = ScramServer("SCRAM-SHA-512", store)
    nonce = server.evaluate(b"n,,n=bob,r=abc").split(b",")[0][2:]
    with pytest.raises(SaslFailure, match="Invalid client credentials"):
        server.evaluate(b"c=biws,r=" + nonce + b",p=" + base64.b64encode(bytes(64)))
    with pytest.raises(SaslFailure, match="Invalid user credentials"):
        ScramServer("SCRAM-SHA-512", store).evaluate(b"n,,n=eve,r=abc")


def test_add_scram_syntax_and_persistence(tmp_path: Path) -> None:
    mech, user, cred = parse_add_scram("SCRAM-SHA-256=[name=alice,password=secret]")
    assert (mech, user, cred.iterations) == ("SCRAM-SHA-256", "alice", 4096)
    store = ScramStore(tmp_path / "s.json")
    store.set(mech, user, cred)
    store.save()
    assert "secret" not in (tmp_path / "s.json").read_text()
    assert ScramStore(tmp_path / "s.json").get(mech, user) == cred
    with pytest.raises(ValueError, match="--add-scram") as e:
        parse_add_scram("SCRAM-SHA-1=[name=a,password=hush]")
    assert "hush" not in str(e.value)


def test_plain_messages_are_kafkas() -> None:
    server = PlainServer(parse_jaas_users(JAAS))
    with pytest.raises(
        SaslAuthenticationFailure, match=r"^Authentication failed: Invalid username or password$"
    ):
        server.evaluate(b"\0alice\0nope")
    with pytest.raises(SaslFailure, match="expected 3 tokens, got 1"):
        server.evaluate(b"garbage")
    assert server.evaluate(b"\0alice\0alice-pw") == b""
    assert server.principal == "User:alice"


def _jws(claims: dict[str, Any]) -> bytes:
    enc = lambda d: base64.urlsafe_b64encode(json.dumps(d).encode()).rstrip(b"=")  # noqa: E731
    return enc({"alg": "none"}) + b"." + enc(claims) + b"."


def test_oauthbearer_unsecured_tokens() -> None:
    now_ms = 1_700_000_000_000
    ok = OAuthBearerServer(now_ms)
    ok.evaluate(
        b"n,,\x01auth=Bearer " + _jws({"sub": "carol", "exp": now_ms / 1000 + 60}) + b"\x01\x01"
    )
    assert ok.principal == "User:carol"
    with pytest.raises(SaslAuthenticationFailure, match="invalid_token"):
        OAuthBearerServer(now_ms).evaluate(
            b"n,,\x01auth=Bearer " + _jws({"sub": "carol", "exp": now_ms / 1000 - 1}) + b"\x01\x01"
        )


# --- the gate on a live broker ----------------------------------------------------------


@pytest.fixture
async def sasl_broker(nursery: Any, tmp_path: Path) -> Any:
    certs = write_certs(tmp_path / "certs")
    config = broker_config(
        tmp_path / "data",
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT,SSL:SSL,MTLS:SSL",
            "ssl.keystore.location": str(certs["server"]),
            "ssl.truststore.location": str(certs["ca"]),
            "listener.name.mtls.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "connections.max.idle.ms": 10_000,
        },
    )
    b = await nursery.start(serve, config)
    await b.ready.wait()
    b.test_certs = certs
    return b


async def _connect(broker: Any, listener: str) -> WireClient:
    return WireClient(await trio.open_tcp_stream("127.0.0.1", broker.bound_ports[listener]))


async def _closed(client: WireClient) -> bool:
    try:
        while (frame := await read_frame(client.stream)) is not None:
            del frame
        return True
    except trio.BrokenResourceError:
        return True


async def _plain(client: WireClient, password: str) -> Any:
    h = await client.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert h.error_code == 0
    assert h.mechanisms == ["PLAIN", "SCRAM-SHA-512"]
    return await client.call(
        SaslAuthenticateRequest(auth_bytes=b"\0alice\0" + password.encode()), 2
    )


async def test_plain_then_requests_are_served(sasl_broker: Any) -> None:
    client = await _connect(sasl_broker, "SASL_PLAINTEXT")
    versions = await client.call(ApiVersionsRequest(), 3)
    assert {17, 36} <= {k.api_key for k in versions.api_keys}
    ok = await _plain(client, "alice-pw")
    assert (ok.error_code, ok.error_message, ok.session_lifetime_ms) == (0, None, 0)
    meta = await client.call(MetadataRequest(topics=[]), 12)
    assert meta.brokers
    again = await client.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE
    await client.aclose()


async def test_wrong_password_is_answered_after_the_delay_then_closed(
    sasl_broker: Any, autojump_clock: Any
) -> None:
    client = await _connect(sasl_broker, "SASL_PLAINTEXT")
    started = trio.current_time()
    failed = await _plain(client, "nope")
    assert trio.current_time() - started >= 0.1  # connection.failed.authentication.delay.ms
    assert failed.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert failed.error_message == "Authentication failed: Invalid username or password"
    assert await _closed(client)


async def test_a_request_before_authentication_gets_illegal_sasl_state_and_a_close(
    sasl_broker: Any, autojump_clock: Any
) -> None:
    client = await _connect(sasl_broker, "SASL_PLAINTEXT")
    meta = await client.call(MetadataRequest(topics=[]), 12)
    assert meta.topics == []
    assert not meta.brokers
    assert await _closed(client)
    client = await _connect(sasl_broker, "SASL_PLAINTEXT")
    h = await client.call(SaslHandshakeRequest(mechanism="GSSAPI"), 1)
    assert h.error_code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    assert await _closed(client)


async def test_v0_handshake_then_raw_tokens(sasl_broker: Any) -> None:
    client = await _connect(sasl_broker, "SASL_PLAINTEXT")
    h = await client.call(SaslHandshakeRequest(mechanism="PLAIN"), 0)
    assert h.error_code == 0
    token = b"\0alice\0alice-pw"
    await client.send_raw(struct.pack(">i", len(token)) + token)
    assert await read_frame(client.stream) == b""
    assert (await client.call(MetadataRequest(topics=[]), 12)).brokers


def _client_tls(broker: Any, cert: bool) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=str(broker.test_certs["ca"]))
    if cert:
        ctx.load_cert_chain(broker.test_certs["client_cert"], broker.test_certs["client_key"])
    return ctx


async def test_tls_and_mtls(sasl_broker: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, "broker.security")
    for listener, cert in (("SSL", False), ("MTLS", True)):
        raw = await trio.open_tcp_stream("127.0.0.1", sasl_broker.bound_ports[listener])
        stream = trio.SSLStream(raw, _client_tls(sasl_broker, cert), server_hostname="localhost")
        client = WireClient(stream)  # type: ignore[arg-type]
        assert (await client.call(MetadataRequest(topics=[]), 12)).brokers
        await stream.aclose()
    assert f"authenticated as {CLIENT_PRINCIPAL} on MTLS" in caplog.text
    # no client certificate where one is required: the handshake fails, the broker goes on
    raw = await trio.open_tcp_stream("127.0.0.1", sasl_broker.bound_ports["MTLS"])
    stream = trio.SSLStream(raw, _client_tls(sasl_broker, False), server_hostname="localhost")

    async def refused() -> None:
        await stream.do_handshake()  # TLS 1.3: the refusal comes with the first read
        await stream.send_all(b"\0\0\0\0")
        await stream.receive_some(1)

    with pytest.raises(trio.BrokenResourceError):
        await refused()


def _client_hello() -> bytes:
    """The first flight of a real TLS client (its ClientHello), from a memory BIO."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    ctx = ssl.create_default_context()
    tls = ctx.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with pytest.raises(ssl.SSLWantReadError):
        tls.do_handshake()
    return outgoing.read()


HOSTILE = {
    "garbage": b"\x16\x03\x01\xff\xffthis is not a handshake" * 3,
    "truncated": b"\x00\x00\x00\x40\x00\x11\x00\x01",  # then EOF
    "truncated-hello": b"",  # half a ClientHello, then EOF (set in the test)
    "oversized": struct.pack(">i", 600_000) + bytes(1000),
    "negative": struct.pack(">i", -5),
    "slow": b"",
    "trickle": b"",  # a byte a second, never finishing
}


@pytest.mark.parametrize("listener", ["SASL_PLAINTEXT", "SSL"])
async def test_hostile_handshakes_end_in_a_close(
    sasl_broker: Any, autojump_clock: Any, listener: str
) -> None:
    hello = _client_hello()
    for name, data in HOSTILE.items():
        client = await _connect(sasl_broker, listener)
        if name == "truncated-hello":
            data = hello[: len(hello) // 2]
        if data:
            await client.send_raw(data)
        if name.startswith("truncated"):
            await client.stream.send_eof()
        with trio.fail_after(11):  # connections.max.idle.ms, for the slow ones
            if name == "trickle":
                async with trio.open_nursery() as trickling:

                    async def trickle(client: WireClient = client) -> None:
                        with contextlib.suppress(trio.BrokenResourceError):
                            for byte in hello:
                                await client.send_raw(bytes([byte]))
                                await trio.sleep(1)

                    trickling.start_soon(trickle)
                    assert await _closed(client), name
                    trickling.cancel_scope.cancel()
            else:
                assert await _closed(client), name
        await client.aclose()
    await trio.testing.wait_all_tasks_blocked()
    assert sasl_broker.open_connections == 0
    client = await _connect(sasl_broker, "SASL_PLAINTEXT")
    assert (await _plain(client, "alice-pw")).error_code == 0


def test_every_security_protocol_is_served_and_tls_needs_a_keystore(tmp_path: Path) -> None:
    from broker.config import DEFAULT_PROTOCOL_MAP, ConfigError, load_config
    from broker.listeners import listener_setup
    from broker.security.tls import TlsError, tls_contexts

    setup = listener_setup(
        "SSL://:9093,SASL_SSL://:9094,SASL_PLAINTEXT://:9095", None, DEFAULT_PROTOCOL_MAP, None
    )
    assert [e.security_protocol for e in setup.listeners] == ["SSL", "SASL_SSL", "SASL_PLAINTEXT"]
    with pytest.raises(TlsError, match=r"listener SSL uses TLS: set ssl\.keystore\.location"):
        tls_contexts(load_config(), setup.listeners)
    certs = write_certs(tmp_path)
    config = load_config(
        overrides={
            "listener.name.ssl.ssl.keystore.location": str(certs["server"]),
            "ssl.keystore.certificate.chain": certs["client_cert"].read_text(),
            "ssl.keystore.key": certs["client_key"].read_text(),
            "ssl.client.auth": "required",
        }
    )
    with pytest.raises(TlsError, match=r"ssl\.client\.auth=required on listener SSL needs"):
        tls_contexts(config, setup.listeners)
    with pytest.raises(ConfigError, match=r"ssl\.keystore\.type: 'JKS' is not one of PEM"):
        load_config(overrides={"ssl.keystore.type": "JKS"})


# --- the authorizer, pure ---------------------------------------------------------------


def _acl(name: str, principal: str, op: str, perm: str, pattern: str = "LITERAL", rtype="TOPIC"):
    from broker.security.acls import AclBinding, AclOperation, AclPermissionType, PatternType
    from broker.security.acls import ResourceType as RT

    return AclBinding(
        RT[rtype], name, PatternType[pattern], principal, "*", AclOperation[op],
        AclPermissionType[perm],
    )  # fmt: skip


def test_authorizer_decides_as_kafkas_standard_authorizer() -> None:
    from broker.security.acls import AclOperation as Op
    from broker.security.acls import ResourceType as RT
    from broker.security.acls import authorize

    bindings = [
        _acl("orders", "User:alice", "READ", "ALLOW"),
        _acl("ord", "User:alice", "WRITE", "ALLOW", "PREFIXED"),
        _acl("orders-secret", "User:*", "ALL", "DENY"),
        _acl("*", "User:bob", "DESCRIBE", "ALLOW"),
    ]

    def ok(principal: str, op: Op, name: str, *, open_: bool = False, su=frozenset()) -> bool:
        return authorize(bindings, su, open_, principal, "10.0.0.1", op, RT.TOPIC, name)

    assert ok("User:alice", Op.READ, "orders")
    assert ok("User:alice", Op.DESCRIBE, "orders")  # implied by READ
    assert ok("User:alice", Op.WRITE, "orders-2")  # prefixed
    assert not ok("User:alice", Op.DELETE, "orders")
    assert not ok("User:alice", Op.WRITE, "orders-secret")  # deny wins over the prefix
    assert ok("User:bob", Op.DESCRIBE, "anything")  # literal wildcard
    assert not ok("User:carol", Op.READ, "orders")
    # the * binding is an ACL on every topic: allow.everyone.if.no.acl.found does not apply
    assert not ok("User:carol", Op.READ, "other", open_=True)
    assert ok("User:admin", Op.WRITE, "orders-secret", su=frozenset({"User:admin"}))
    no_acls = authorize([], frozenset(), False, "User:x", "h", Op.READ, RT.GROUP, "g")
    assert no_acls is False
    assert authorize([], frozenset(), True, "User:x", "h", Op.READ, RT.GROUP, "g")


def test_new_acls_are_checked_as_kafka_checks_them() -> None:
    from broker.security.acls import validate_binding

    assert validate_binding(_acl("t", "alice", "READ", "ALLOW")) == (
        "Could not parse principal from `alice` (no colon is present separating the "
        "principal type from the principal name)"
    )
    assert validate_binding(_acl("c", "User:a", "ALTER", "ALLOW", rtype="CLUSTER")) == (
        "The only valid name for the CLUSTER resource is kafka-cluster"
    )
    assert validate_binding(_acl("t", "User:a", "ANY", "ALLOW")) == "Invalid operation 1"
    assert validate_binding(_acl("t", "User:a", "READ", "ALLOW", "MATCH")) == (
        "Invalid patternType 2"
    )
    assert validate_binding(_acl("t", "User:a", "READ", "ALLOW")) is None


# --- sessions (KIP-368) -----------------------------------------------------------------


@pytest.fixture
async def reauth_broker(nursery: Any, tmp_path: Path) -> Any:
    config = broker_config(
        tmp_path / "data",
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS + ' user_bob="bob-pw";',
            "connections.max.reauth.ms": 5000,
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "connections.max.idle.ms": 600_000,
        },
    )
    b = await nursery.start(serve, config)
    await b.ready.wait()
    return b


async def test_a_session_ends_unless_renewed_on_the_connection(
    reauth_broker: Any, autojump_clock: Any
) -> None:
    renewing = await _connect(reauth_broker, "SASL_PLAINTEXT")
    lapsing = await _connect(reauth_broker, "SASL_PLAINTEXT")
    for client in (renewing, lapsing):
        ok = await _plain(client, "alice-pw")
        assert (ok.error_code, ok.session_lifetime_ms) == (0, 5000)
    await trio.sleep(4)
    again = await _plain(renewing, "alice-pw")  # re-authentication on the open connection
    assert (again.error_code, again.session_lifetime_ms) == (0, 5000)
    await trio.sleep(2)  # past the first session's end
    assert (await renewing.call(MetadataRequest(topics=[]), 12)).brokers
    await lapsing.send_raw(request_bytes(MetadataRequest(topics=[]), 12, correlation_id=1))
    assert await _closed(lapsing)
    # another principal on re-authentication: refused, then the connection closes
    h = await renewing.call(SaslHandshakeRequest(mechanism="PLAIN"), 1)
    assert h.error_code == 0
    other = await renewing.call(SaslAuthenticateRequest(auth_bytes=b"\0bob\0bob-pw"), 2)
    assert other.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert other.error_message == (
        "Cannot change principals during re-authentication from User:alice: User:bob"
    )
    await renewing.send_raw(request_bytes(MetadataRequest(topics=[]), 12, correlation_id=2))
    assert await _closed(renewing)


async def test_metadata_hides_topics_the_principal_may_not_describe(
    nursery: Any, tmp_path: Path
) -> None:
    import json as json_

    data = tmp_path / "data"
    data.mkdir()
    grant = {"resource_type": 2, "pattern_type": 3, "principal": "User:ANONYMOUS", "host": "*"}
    (data / "acls.json").write_text(
        json_.dumps(
            [
                {**grant, "resource_name": "visible", "operation": 3, "permission_type": 3},
                {**grant, "resource_name": "hidden", "operation": 4, "permission_type": 2},
            ]
        )
    )
    broker = await nursery.start(
        serve, broker_config(data, **{"authorizer.class.name": "StandardAuthorizer"})
    )
    await broker.ready.wait()
    for name in ("visible", "hidden", "no-acls"):
        broker.topics.create(name, 1, {}, now_wall_ms=broker.wall_ms())
    client = await WireClient.connect(broker)
    everything = await client.call(MetadataRequest(topics=None), 12)
    assert [t.name for t in everything.topics] == ["visible"]
    named = await client.call(
        MetadataRequest(
            topics=[MetadataRequestTopic(name="hidden"), MetadataRequestTopic(name="visible")]
        ),
        12,
    )
    assert [(t.name, t.error_code, len(t.partitions)) for t in named.topics] == [
        ("visible", 0, 1),
        ("hidden", ErrorCode.TOPIC_AUTHORIZATION_FAILED, 0),
    ]  # the refused last, as in Kafka's handleTopicMetadataRequest
    await client.aclose()


async def test_requests_are_refused_with_the_apis_authorization_codes(
    nursery: Any, tmp_path: Path
) -> None:
    import json as json_

    from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
    from protocol.messages.describe_acls import DescribeAclsRequest
    from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol

    data = tmp_path / "data"
    data.mkdir()
    anonymous = {"pattern_type": 3, "principal": "User:ANONYMOUS", "host": "*"}
    (data / "acls.json").write_text(
        json_.dumps(
            [
                {
                    **anonymous,
                    "resource_type": 4,
                    "resource_name": "kafka-cluster",
                    "operation": 5,
                    "permission_type": 3,
                },  # CREATE on the cluster
                {
                    **anonymous,
                    "resource_type": 3,
                    "resource_name": "g",
                    "operation": 3,
                    "permission_type": 2,
                },  # DENY READ on group g
            ]
        )
    )
    broker = await nursery.start(
        serve, broker_config(data, **{"authorizer.class.name": "StandardAuthorizer"})
    )
    await broker.ready.wait()
    client = await WireClient.connect(broker)
    created = await client.call(
        CreateTopicsRequest(
            topics=[CreatableTopic(name="t", num_partitions=1, replication_factor=1)],
            timeout_ms=5000,
        ),
        7,
    )
    assert [(t.name, t.error_code) for t in created.topics] == [("t", 0)]
    joined = await client.call(
        JoinGroupRequest(
            group_id="g",
            session_timeout_ms=10000,
            rebalance_timeout_ms=10000,
            member_id="",
            protocol_type="consumer",
            protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
        ),
        9,
    )
    assert joined.error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    acls = await client.call(
        DescribeAclsRequest(resource_type_filter=1, pattern_type_filter=1, operation=1,
                            permission_type=1),
        3,
    )  # fmt: skip
    assert acls.error_code == ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    await client.aclose()
