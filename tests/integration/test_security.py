"""Real clients on kmock's secured listeners: SSL (with and without a client certificate),
SASL_PLAINTEXT and SASL_SSL with PLAIN and SCRAM-SHA-512. Each client produces, consumes in a
group and commits; a wrong password fails with an authentication error while the broker goes
on serving the others. Hostile SASL exchanges inside TLS end in a close, and passwords never
reach the log, the request journal or /metrics.

Issue 20's acceptance, client by client (kafka-python, aiokafka, confluent-kafka, kafkajs):
SASL_SSL with SCRAM-SHA-512 and with PLAIN, SSL with a client certificate (MTLS), each
producing, consuming in a group and committing; a wrong password, then the right one.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import KafkaException
from confluent_kafka import Producer as CkProducer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError as KpError

from broker.security.certs import write_certs
from broker.security.scram import ScramStore, make_credential
from tests.integration.harness import confluent_conf, deadline, unique

pytestmark = pytest.mark.integration

JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-pw";'
)


@pytest.fixture
def secured(fresh_broker: Any, tmp_path: Path) -> dict[str, Any]:
    certs = write_certs(tmp_path / "certs")
    data = tmp_path / "data0"
    data.mkdir()
    store = ScramStore(data / "scram-credentials.json")
    store.set("SCRAM-SHA-512", "bob", make_credential("SCRAM-SHA-512", "bob-pw"))
    store.save()
    broker = fresh_broker(
        **{
            "listeners": "SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
            "SASL_SSL://127.0.0.1:0,MTLS://127.0.0.1:0",
            "listener.security.protocol.map": "SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,"
            "SASL_SSL:SASL_SSL,MTLS:SSL",
            "ssl.keystore.location": str(certs["server"]),
            "ssl.truststore.location": str(certs["ca"]),
            "listener.name.mtls.ssl.client.auth": "required",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
        }
    )
    ports = broker.broker.bound_ports
    return {"broker": broker, "certs": certs, "ports": ports}


def _kp_settings(
    s: dict[str, Any],
    listener: str,
    mechanism: str | None = None,
    user: str = "",
    password: str = "",
    cert: bool = False,
) -> dict[str, Any]:
    conf: dict[str, Any] = {
        "bootstrap_servers": f"127.0.0.1:{s['ports'][listener]}",
        "request_timeout_ms": 10_000,
    }
    protocol = {
        "SSL": "SSL",
        "MTLS": "SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT",
        "SASL_SSL": "SASL_SSL",
    }[listener]
    conf["security_protocol"] = protocol
    if "SSL" in protocol:
        conf["ssl_cafile"] = str(s["certs"]["ca"])
        if cert:
            conf["ssl_certfile"] = str(s["certs"]["client_cert"])
            conf["ssl_keyfile"] = str(s["certs"]["client_key"])
    if mechanism:
        conf.update(
            sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password
        )
    return conf


def _kafka_python_round_trip(conf: dict[str, Any]) -> None:
    topic, group = unique("sec"), unique("g")
    producer = KafkaProducer(**conf)
    try:
        for i in range(3):
            producer.send(topic, key=b"k", value=f"v{i}".encode()).get(timeout=10)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        topic,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=15_000,
        **conf,
    )
    try:
        got = []
        for m in consumer:
            got.append(m.value)
            partition = m.partition
            if len(got) == 3:
                break
        assert got == [b"v0", b"v1", b"v2"]
        consumer.commit()
        assert consumer.committed(TopicPartition(topic, partition)) == 3
    finally:
        consumer.close()


@deadline(60)
@pytest.mark.parametrize(
    ("listener", "mechanism", "user", "password", "cert"),
    [
        ("SSL", None, "", "", False),
        ("SSL", None, "", "", True),
        ("MTLS", None, "", "", True),
        ("SASL_PLAINTEXT", "PLAIN", "alice", "alice-pw", False),
        ("SASL_PLAINTEXT", "SCRAM-SHA-512", "bob", "bob-pw", False),
        ("SASL_SSL", "PLAIN", "alice", "alice-pw", False),
        ("SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw", False),
    ],
)
def test_kafka_python(
    secured: dict[str, Any],
    listener: str,
    mechanism: str | None,
    user: str,
    password: str,
    cert: bool,
) -> None:
    _kafka_python_round_trip(_kp_settings(secured, listener, mechanism, user, password, cert))


@deadline(60)
@pytest.mark.parametrize(
    ("listener", "mechanism"), [("SASL_PLAINTEXT", "PLAIN"), ("SASL_SSL", "SCRAM-SHA-512")]
)
def test_kafka_python_wrong_password_fails_and_others_go_on(
    secured: dict[str, Any], listener: str, mechanism: str, caplog: pytest.LogCaptureFixture
) -> None:
    user = "alice" if mechanism == "PLAIN" else "bob"
    expected = (
        "Authentication failed: Invalid username or password"
        if mechanism == "PLAIN"
        else "Authentication failed during authentication due to invalid credentials with "
        "SASL mechanism SCRAM-SHA-512"
    )
    conf = _kp_settings(secured, listener, mechanism, user, "wrong")
    with pytest.raises(KpError):
        KafkaProducer(**conf, max_block_ms=3000, bootstrap_timeout_ms=3000)
    # kafka-python retries a failed bootstrap and reports the broker's answer in its log
    assert f"SaslAuthenticationFailedError: {expected}" in caplog.text
    assert "wrong" not in "".join(
        r.getMessage() for r in caplog.records if r.name.startswith("broker")
    )
    right = "alice-pw" if mechanism == "PLAIN" else "bob-pw"
    _kafka_python_round_trip(_kp_settings(secured, listener, mechanism, user, right))


def _ck_conf(
    s: dict[str, Any],
    listener: str,
    mechanism: str | None = None,
    user: str = "",
    password: str = "",
    cert: bool = False,
    **kw: Any,
) -> dict[str, Any]:
    protocol = {
        "SSL": "SSL",
        "MTLS": "SSL",
        "SASL_PLAINTEXT": "SASL_PLAINTEXT",
        "SASL_SSL": "SASL_SSL",
    }[listener]
    conf = confluent_conf(f"127.0.0.1:{s['ports'][listener]}", unique("ck"), **kw)
    conf["security.protocol"] = protocol
    if "SSL" in protocol:
        conf["ssl.ca.location"] = str(s["certs"]["ca"])
        if cert:
            conf["ssl.certificate.location"] = str(s["certs"]["client_cert"])
            conf["ssl.key.location"] = str(s["certs"]["client_key"])
    if mechanism:
        conf.update(
            {"sasl.mechanisms": mechanism, "sasl.username": user, "sasl.password": password}
        )
    return conf


@deadline(90)
@pytest.mark.parametrize(
    ("listener", "mechanism", "user", "password", "cert"),
    [
        ("SSL", None, "", "", False),
        ("MTLS", None, "", "", True),
        ("SASL_PLAINTEXT", "PLAIN", "alice", "alice-pw", False),
        ("SASL_SSL", "PLAIN", "alice", "alice-pw", False),
        ("SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw", False),
    ],
)
def test_confluent_kafka(
    secured: dict[str, Any],
    listener: str,
    mechanism: str | None,
    user: str,
    password: str,
    cert: bool,
) -> None:
    topic, group = unique("sec"), unique("g")
    producer = CkProducer(_ck_conf(secured, listener, mechanism, user, password, cert))
    for i in range(3):
        producer.produce(topic, key=b"k", value=f"v{i}".encode())
    assert producer.flush(20) == 0
    consumer = CkConsumer(
        _ck_conf(
            secured,
            listener,
            mechanism,
            user,
            password,
            cert,
            **{"group.id": group, "auto.offset.reset": "earliest", "enable.auto.commit": False},
        )
    )
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        import time

        end = time.monotonic() + 30
        while len(got) < 3 and time.monotonic() < end:
            m = consumer.poll(0.5)
            if m is None:
                continue
            if m.error():
                raise KafkaException(m.error())
            got.append(m.value())
            partition = m.partition()
        assert got == [b"v0", b"v1", b"v2"]
        consumer.commit(asynchronous=False)
        from confluent_kafka import TopicPartition as CkTp

        assert consumer.committed([CkTp(topic, partition)], timeout=10)[0].offset == 3
    finally:
        consumer.close()


@deadline(60)
def test_confluent_kafka_wrong_password(secured: dict[str, Any]) -> None:
    errors: list[Any] = []
    conf = _ck_conf(secured, "SASL_SSL", "SCRAM-SHA-512", "bob", "wrong")
    conf["error_cb"] = errors.append
    producer = CkProducer(conf)
    import time

    end = time.monotonic() + 20
    while not errors and time.monotonic() < end:
        producer.poll(0.2)
    assert errors, "no error reported"
    assert any("Authentication failed" in e.str() for e in errors), [e.str() for e in errors]
    # while that producer keeps retrying, the broker serves the right password
    right = CkProducer(_ck_conf(secured, "SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw"))
    right.produce(unique("sec"), b"after")
    assert right.flush(20) == 0


def _aiokafka_kw(
    s: dict[str, Any], listener: str, mechanism: str | None, user: str, password: str
) -> dict[str, Any]:
    from aiokafka.helpers import create_ssl_context

    kw: dict[str, Any] = {
        "bootstrap_servers": f"127.0.0.1:{s['ports'][listener]}",
        "security_protocol": {"MTLS": "SSL"}.get(listener, listener),
    }
    if mechanism:
        kw.update(sasl_mechanism=mechanism, sasl_plain_username=user, sasl_plain_password=password)
    if "SSL" in kw["security_protocol"]:
        certs = s["certs"]
        cert = {"certfile": str(certs["client_cert"]), "keyfile": str(certs["client_key"])}
        kw["ssl_context"] = create_ssl_context(
            cafile=str(certs["ca"]), **(cert if listener == "MTLS" else {})
        )
    return kw


def _aiokafka_round_trip(kw: dict[str, Any]) -> list[bytes]:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as AioTp

    topic, group = unique("sec"), unique("g")

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(**kw)
        await producer.start()
        try:
            for i in range(3):
                await producer.send_and_wait(topic, f"v{i}".encode(), key=b"k")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False, **kw
        )
        await consumer.start()
        try:
            got: list[bytes] = []
            while len(got) < 3:
                batch = await asyncio.wait_for(consumer.getmany(timeout_ms=1000), 20)
                for tp, records in batch.items():
                    got.extend(r.value for r in records)
                    partition = tp.partition
            await consumer.commit()
            assert await consumer.committed(AioTp(topic, partition)) == 3
            return got
        finally:
            await consumer.stop()

    return asyncio.run(run())


@deadline(60)
@pytest.mark.parametrize(
    ("listener", "mechanism", "user", "password"),
    [
        ("SASL_PLAINTEXT", "PLAIN", "alice", "alice-pw"),
        ("SASL_SSL", "PLAIN", "alice", "alice-pw"),
        ("SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw"),
        ("MTLS", None, "", ""),
    ],
)
def test_aiokafka(
    secured: dict[str, Any], listener: str, mechanism: str | None, user: str, password: str
) -> None:
    kw = _aiokafka_kw(secured, listener, mechanism, user, password)
    assert _aiokafka_round_trip(kw) == [b"v0", b"v1", b"v2"]


@deadline(60)
def test_aiokafka_wrong_password_fails_and_others_go_on(
    secured: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    from aiokafka import AIOKafkaProducer
    from aiokafka.errors import KafkaConnectionError

    kw = _aiokafka_kw(secured, "SASL_SSL", "SCRAM-SHA-512", "bob", "wrong")

    async def start() -> None:
        producer = AIOKafkaProducer(**kw, request_timeout_ms=5000)
        try:
            await producer.start()
        finally:
            await producer.stop()

    # aiokafka fails its bootstrap and logs the broker's SASL_AUTHENTICATION_FAILED
    with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
        asyncio.run(start())
    assert (
        "[Error 58] SaslAuthenticationFailed: Authentication failed during authentication due "
        "to invalid credentials with SASL mechanism SCRAM-SHA-512" in caplog.text
    )
    right = _aiokafka_kw(secured, "SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw")
    assert _aiokafka_round_trip(right) == [b"v0", b"v1", b"v2"]


@deadline(60)
def test_scram_users_altered_and_described_by_confluent_kafka(secured: dict[str, Any]) -> None:
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(_ck_conf(secured, "SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw"))
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_256, 8192)
    futures = admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", info, b"carol-pw")]
    )
    futures["carol"].result(timeout=10)
    described = {
        user: f.result(timeout=10)
        for user, f in admin.describe_user_scram_credentials(["carol", "bob"]).items()
    }
    assert [(i.mechanism, i.iterations) for i in described["carol"].scram_credential_infos] == [
        (ScramMechanism.SCRAM_SHA_256, 8192)
    ]
    assert [i.mechanism for i in described["bob"].scram_credential_infos] == [
        ScramMechanism.SCRAM_SHA_512
    ]
    _kafka_python_round_trip(
        _kp_settings(secured, "SASL_PLAINTEXT", "SCRAM-SHA-256", "carol", "carol-pw")
    )
    deleted = admin.alter_user_scram_credentials(
        [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_256)]
    )
    deleted["carol"].result(timeout=10)
    missing = admin.describe_user_scram_credentials(["carol"])["carol"]
    with pytest.raises(KafkaException, match="does not exist: carol"):
        missing.result(timeout=10)


def _kafkajs(
    s: dict[str, Any], listener: str, mechanism: str, user: str, password: str
) -> tuple[dict[str, Any], str]:
    import json
    import subprocess

    from tests.integration.harness import JS_DIR

    argv = [
        "node",
        str(JS_DIR / "kafkajs-sasl.js"),
        f"127.0.0.1:{s['ports'][listener]}",
        mechanism,
        user,
        password,
        unique("sec"),
        unique("g"),
    ]
    if listener in ("SSL", "SASL_SSL", "MTLS"):
        argv.append(str(s["certs"]["ca"]))
    if listener == "MTLS":
        argv += [str(s["certs"]["client_cert"]), str(s["certs"]["client_key"])]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr[-2000:]


@deadline(90)
@pytest.mark.parametrize(
    ("listener", "mechanism", "user", "password"),
    [
        ("SASL_SSL", "PLAIN", "alice", "alice-pw"),
        ("SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw"),
        ("MTLS", "none", "", ""),
        ("SASL_PLAINTEXT", "SCRAM-SHA-512", "bob", "wrong"),
    ],
)
def test_kafkajs(
    secured: dict[str, Any], listener: str, mechanism: str, user: str, password: str
) -> None:
    result, stderr = _kafkajs(secured, listener, mechanism, user, password)
    if password == "wrong":
        assert result["ok"] is False
        assert result["error"].startswith("KafkaJSSASLAuthenticationError"), result
        assert "invalid credentials with SASL mechanism SCRAM-SHA-512" in result["error"]
        result, stderr = _kafkajs(secured, listener, mechanism, user, "bob-pw")
    assert result == {"ok": True, "values": ["v0", "v1", "v2"], "committed": "3"}, (
        result,
        stderr,
    )


@deadline(60)
def test_confluent_kafka_renews_its_session(
    fresh_broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    import logging

    from tests.integration.harness import wait_until

    caplog.set_level(logging.INFO, "broker")
    data = tmp_path / "data0"
    data.mkdir()
    store = ScramStore(data / "scram-credentials.json")
    store.set("SCRAM-SHA-512", "bob", make_credential("SCRAM-SHA-512", "bob-pw"))
    store.save()
    broker = fresh_broker(
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "SCRAM-SHA-512",
            "connections.max.reauth.ms": 2000,
        }
    )
    conf = confluent_conf(broker.bootstrap_servers, unique("ck"))
    conf.update(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "bob",
            "sasl.password": "bob-pw",
        }
    )
    producer = CkProducer(conf)
    topic = unique("reauth")
    producer.produce(topic, b"before")
    assert producer.flush(20) == 0
    wait_until(
        lambda: (producer.poll(0.1), "re-authenticated as User:bob" in caplog.text)[1],
        20,
        "librdkafka re-authenticating",
    )
    producer.produce(topic, b"after")
    assert producer.flush(20) == 0
    assert "SASL session expired" not in caplog.text


@deadline(60)
def test_large_records_through_the_tls_relay(secured: dict[str, Any]) -> None:
    """Megabytes each way through the TLS relay (broker.security.gate), kept in order."""
    conf = _kp_settings(secured, "SASL_SSL", "PLAIN", "alice", "alice-pw")
    topic = unique("big")
    values = [bytes([i]) * 900_000 for i in range(6)]
    producer = KafkaProducer(**conf, max_request_size=1_000_000, linger_ms=50)
    try:
        for v in values:
            producer.send(topic, key=b"k", value=v)
        producer.flush(timeout=30)
    finally:
        producer.close()
    consumer = KafkaConsumer(
        topic,
        auto_offset_reset="earliest",
        consumer_timeout_ms=20_000,
        fetch_max_bytes=50_000_000,
        max_partition_fetch_bytes=10_000_000,
        **conf,
    )
    try:
        got = []
        for m in consumer:
            got.append(m.value)
            if len(got) == len(values):
                break
    finally:
        consumer.close()
    assert got == values


# --- hostile SASL exchanges inside TLS -----------------------------------------------------


def _tls_socket(s: dict[str, Any], listener: str = "SASL_SSL") -> Any:
    import socket
    import ssl

    ctx = ssl.create_default_context(cafile=str(s["certs"]["ca"]))
    raw = socket.create_connection(("127.0.0.1", s["ports"][listener]), timeout=10)
    return ctx.wrap_socket(raw, server_hostname="localhost")


def _closed_by_broker(sock: Any) -> bytes:
    """Everything the broker sends until it closes the connection (raises on a timeout)."""
    import ssl

    got = bytearray()
    try:
        while chunk := sock.recv(65536):
            got += chunk
    except (ssl.SSLError, ConnectionResetError):
        pass  # a TLS close without close_notify, or a reset: closed either way
    return bytes(got)


def _frame(request: Any, version: int) -> bytes:
    from tests.wire import request_bytes

    return request_bytes(request, version)


@deadline(60)
def test_hostile_sasl_inside_tls_ends_in_a_close_and_leaks_nothing(
    secured: dict[str, Any],
) -> None:
    """After a good TLS handshake: garbage, an oversized frame, a truncated SaslAuthenticate,
    garbage and forged SCRAM tokens; each connection is closed (with Kafka's answer where
    there is one), none stays open, and the broker serves a real login after them."""
    import struct

    from protocol.errors import ErrorCode
    from protocol.frames import parse_response_frame
    from protocol.messages.sasl_authenticate import (
        SaslAuthenticateRequest,
        SaslAuthenticateResponse,
    )
    from protocol.messages.sasl_handshake import SaslHandshakeRequest
    from protocol.schema import decode
    from tests.integration.harness import wait_until

    handshake = _frame(SaslHandshakeRequest(mechanism="SCRAM-SHA-512"), 1)

    def answered_code(data: bytes) -> int:
        """The error code of the last SaslAuthenticate answer in `data`."""
        frames = []
        while data:
            (size,) = struct.unpack(">i", data[:4])
            frames.append(data[4 : 4 + size])
            data = data[4 + size :]
        _, pos = parse_response_frame(SaslAuthenticateResponse, 2, frames[-1])
        return decode(SaslAuthenticateResponse, 2, frames[-1], pos).error_code

    hostile: dict[str, Any] = {
        "garbage": [b"\xff\xfe\xfd\xfc" * 16],
        "oversized": [struct.pack(">i", 600_000) + bytes(1000)],
        "truncated": [handshake, _frame(SaslAuthenticateRequest(auth_bytes=b"n,,n=bob"), 2)[:9]],
        "not-utf8": [handshake, _frame(SaslAuthenticateRequest(auth_bytes=b"\xff\x00\xc3"), 2)],
        "forged-final": [
            handshake,
            _frame(SaslAuthenticateRequest(auth_bytes=b"n,,n=bob,r=abc"), 2),
            _frame(SaslAuthenticateRequest(auth_bytes=b"c=biws,r=abc,p=AAAA"), 2),
        ],
    }
    for name, chunks in hostile.items():
        with _tls_socket(secured) as sock:
            for chunk in chunks:
                sock.sendall(chunk)
            if name == "truncated":
                sock.shutdown(1)  # half a frame, then EOF
            got = _closed_by_broker(sock)
        if name in ("not-utf8", "forged-final"):
            assert answered_code(got) == ErrorCode.SASL_AUTHENTICATION_FAILED, name
    broker = secured["broker"].broker
    wait_until(
        lambda: broker.open_connections == 0,
        10,
        "every hostile connection closed",
        lambda: f"{broker.open_connections} open",
    )
    _kafka_python_round_trip(_kp_settings(secured, "SASL_SSL", "SCRAM-SHA-512", "bob", "bob-pw"))


# --- secrets -------------------------------------------------------------------------------


@deadline(90)
def test_sasl_passwords_never_reach_the_log_the_journal_or_metrics(
    fresh_broker: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Logins with PLAIN and SCRAM-SHA-512 (right and wrong passwords, kmock's client,
    kafka-python and librdkafka re-authenticating on its connection), with the broker's log
    at DEBUG, the request journal on and /metrics read: no password in any of them."""
    import logging
    import urllib.request

    from client import ClientSecurity, KafkaClient
    from protocol.errors import KafkaError
    from tests.integration.harness import wait_until

    caplog.set_level(logging.DEBUG)
    secrets = {
        "alice": "plain-Pa55-hush",
        "bob": "scram-Pa55-hush",
        "wrong": "wrong-Pa55-hush",
        "carol": "altered-Pa55-hush",
    }
    data = tmp_path / "data0"
    data.mkdir()
    store = ScramStore(data / "scram-credentials.json")
    store.set("SCRAM-SHA-512", "bob", make_credential("SCRAM-SHA-512", secrets["bob"]))
    store.save()
    jaas = (
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_alice="{secrets["alice"]}";'
    )
    broker = fresh_broker(
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": jaas,
            "connections.max.reauth.ms": 1500,
            "admin.port": 0,
        }
    )
    bootstrap = broker.bootstrap_servers
    # kmock's own client, right and wrong
    for mechanism, user, password in [
        ("PLAIN", "alice", secrets["alice"]),
        ("SCRAM-SHA-512", "bob", secrets["bob"]),
        ("PLAIN", "alice", secrets["wrong"]),
        ("SCRAM-SHA-512", "bob", secrets["wrong"]),
    ]:
        security = ClientSecurity(
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism=mechanism,
            username=user,
            password=password,
        )
        client = KafkaClient(bootstrap, timeout_s=10, security=security)
        if password == secrets["wrong"]:
            with pytest.raises(KafkaError, match="SASL_AUTHENTICATION_FAILED"):
                client.connect()
        else:
            with client:
                assert client.metadata([]).brokers
    # kafka-python with PLAIN; AlterUserScramCredentials sends a salted password for carol
    kp = {
        "bootstrap_servers": bootstrap,
        "security_protocol": "SASL_PLAINTEXT",
        "request_timeout_ms": 10_000,
    }
    producer = KafkaProducer(
        **kp, sasl_mechanism="PLAIN", sasl_plain_username="alice",
        sasl_plain_password=secrets["alice"],
    )  # fmt: skip
    producer.send(unique("sec"), b"x").get(timeout=10)
    producer.close()
    # librdkafka re-authenticates on its open connection: SaslHandshake and SaslAuthenticate
    # then go through the dispatch site that feeds the journal and the metrics
    conf = confluent_conf(bootstrap, unique("ck"))
    conf.update(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanisms": "SCRAM-SHA-512",
            "sasl.username": "bob",
            "sasl.password": secrets["bob"],
        }
    )
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient(conf)
    info = ScramCredentialInfo(ScramMechanism.SCRAM_SHA_512, 4096)
    admin.alter_user_scram_credentials(
        [UserScramCredentialUpsertion("carol", info, secrets["carol"].encode())]
    )["carol"].result(timeout=10)
    wait_until(
        lambda: (admin.poll(0.1), any(e["api"] == "SaslAuthenticate" for e in broker.journal()))[1],
        20,
        "a re-authentication in the journal",
    )
    journal = json.dumps(broker.journal())
    with urllib.request.urlopen(f"http://{broker.admin_address}/metrics", timeout=10) as r:
        metrics = r.read().decode()
    assert "SaslAuthenticate" in journal
    assert "SaslAuthenticate" in metrics or "sasl" in metrics.lower()
    # kmock's own loggers, every field of every record (the clients' DEBUG logs print
    # their own requests, passwords included: not the broker's to keep out)
    ours = ("broker", "storage", "coordinator", "protocol", "client", "cli", "kmock")
    log = "\n".join(
        f"{r.getMessage()} {r.__dict__}" for r in caplog.records if r.name.startswith(ours)
    )
    assert "authenticated as User:bob" in log  # the broker's log was captured
    for user, secret in secrets.items():
        for where, text in (("log", log), ("journal", journal), ("metrics", metrics)):
            assert secret not in text, (user, where)
            assert secret.encode().hex() not in text, (user, where)
