"""The `kmock` fixture's security options: a user's suite (run through pytester) reaches a
SASL_SSL SCRAM-SHA-512 broker and an SSL broker that requires a client certificate with
kafka-python, confluent-kafka and aiokafka, from the settings the fixture hands out; a wrong
password and a missing certificate are refused. Then KmockBroker's options and client
properties without pytester."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from broker.pytest_plugin import KmockBroker
from client import ClientSecurity, KafkaClient, read_properties
from protocol.errors import ErrorCode, KafkaError
from tests.broker.test_pytest_plugin import ROOT, plugin_args

pytest_plugins = ["pytester"]

SECURED_SUITE = """
import asyncio
import time

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition as CkTp
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError as KpError

SCRAM = pytest.mark.kmock_config(
    security_protocol="SASL_SSL",
    sasl_mechanism="SCRAM-SHA-512",
    users={"alice": "alice-secret", "bob": "bob-secret"},
)
MTLS = pytest.mark.kmock_config(security_protocol="SSL", ssl_client_auth="required")


def kafka_python_round_trip(conf, topic):
    producer = KafkaProducer(request_timeout_ms=10_000, **conf)
    for i in range(3):
        producer.send(topic, key=b"k", value=f"v{i}".encode()).get(timeout=10)
    producer.close()
    consumer = KafkaConsumer(
        topic, group_id="g-" + topic, auto_offset_reset="earliest",
        enable_auto_commit=False, consumer_timeout_ms=15_000, **conf,
    )
    got = []
    for m in consumer:
        got.append(m.value)
        if len(got) == 3:
            break
    assert got == [b"v0", b"v1", b"v2"]
    consumer.commit()
    assert consumer.committed(TopicPartition(topic, 0)) == 3
    consumer.close()


def confluent_round_trip(conf, topic):
    producer = Producer(conf)
    for i in range(3):
        producer.produce(topic, key=b"k", value=f"v{i}".encode())
    assert producer.flush(20) == 0
    consumer = Consumer({**conf, "group.id": "g-" + topic, "auto.offset.reset": "earliest",
                         "enable.auto.commit": False})
    consumer.subscribe([topic])
    got, end = [], time.monotonic() + 30
    while len(got) < 3 and time.monotonic() < end:
        m = consumer.poll(0.5)
        if m is not None:
            assert m.error() is None, m.error()
            got.append(m.value())
    assert got == [b"v0", b"v1", b"v2"]
    consumer.commit(asynchronous=False)
    assert consumer.committed([CkTp(topic, 0)], timeout=10)[0].offset == 3
    consumer.close()


def confluent_errors(conf):
    errors = []
    producer = Producer({**conf, "error_cb": errors.append})
    end = time.monotonic() + 20
    while not errors and time.monotonic() < end:
        producer.poll(0.2)
    return [e.str() for e in errors]


@SCRAM
def test_kafka_python_scram(kmock):
    assert kmock.kafka_python_config()["sasl_plain_username"] == "alice"
    kafka_python_round_trip(kmock.kafka_python_config(), "kp-scram")
    kafka_python_round_trip(kmock.kafka_python_config(user="bob"), "kp-scram-bob")


@SCRAM
def test_confluent_scram(kmock):
    confluent_round_trip(kmock.confluent_config(), "ck-scram")


@SCRAM
def test_aiokafka_scram(kmock):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    conf = kmock.aiokafka_config()

    async def run():
        producer = AIOKafkaProducer(**conf)
        await producer.start()
        await producer.send_and_wait("aio-scram", b"v0")
        await producer.stop()
        consumer = AIOKafkaConsumer("aio-scram", auto_offset_reset="earliest", **conf)
        await consumer.start()
        try:
            return (await asyncio.wait_for(consumer.getone(), 20)).value
        finally:
            await consumer.stop()

    assert asyncio.run(run()) == b"v0"


@SCRAM
def test_wrong_password_is_refused(kmock, caplog):
    with pytest.raises(KpError):
        KafkaProducer(**kmock.kafka_python_config(password="wrong"), bootstrap_timeout_ms=3000)
    assert "SaslAuthenticationFailedError" in caplog.text
    errors = confluent_errors(kmock.confluent_config(user="bob", password="wrong"))
    assert any("Authentication failed" in e for e in errors), errors
    kafka_python_round_trip(kmock.kafka_python_config(), "after-wrong")


@MTLS
def test_kafka_python_client_certificate(kmock):
    conf = kmock.kafka_python_config()
    assert conf["ssl_certfile"] == str(kmock.certs.client_cert)
    kafka_python_round_trip(conf, "kp-mtls")


@MTLS
def test_confluent_client_certificate(kmock):
    confluent_round_trip(kmock.confluent_config(), "ck-mtls")


@MTLS
def test_no_client_certificate_is_refused(kmock):
    conf = kmock.confluent_config()
    del conf["ssl.certificate.location"], conf["ssl.key.location"]
    assert confluent_errors(conf), "no error without a client certificate"
    confluent_round_trip(kmock.confluent_config(), "ck-mtls-after")
"""


@pytest.mark.integration
@pytest.mark.slow
def test_a_users_suite_over_sasl_ssl_and_mtls(pytester, monkeypatch):
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    )
    pytester.makepyfile(test_secured=SECURED_SUITE)
    result = pytester.runpytest_subprocess(
        *plugin_args(), "-p", "no:cacheprovider", "-p", "no:randomly", timeout=240
    )
    result.assert_outcomes(passed=7)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"security_protocol": "TLS"}, "kmock security_protocol='TLS': one of"),
        ({"ssl_client_auth": "required"}, "kmock ssl_client_auth needs security_protocol SSL"),
        (
            {"security_protocol": "SASL_SSL", "sasl_mechanism": "GSSAPI"},
            "kmock sasl_mechanism='GSSAPI': one of",
        ),
        ({"users": {"a": "b"}}, "kmock sasl_mechanism and users need security_protocol SASL"),
        ({"security_protocol": "SASL_PLAINTEXT", "users": {}}, "kmock users: at least one"),
        (
            {"security_protocol": "SSL", "ssl_client_auth": "maybe"},
            "kmock ssl_client_auth='maybe': one of",
        ),
    ],
)
def test_options_that_cannot_be_used_are_named(tmp_path: Path, options, message) -> None:
    with pytest.raises(ValueError, match=r"^kmock ") as raised:
        KmockBroker(tmp_path / "data", **options)
    assert message in str(raised.value)
    with pytest.raises(TypeError, match="sasl_mechansim"):
        KmockBroker(tmp_path / "data", sasl_mechansim="PLAIN")


@pytest.mark.parametrize(
    ("options", "principal"),
    [
        ({"security_protocol": "SASL_PLAINTEXT"}, "User:kmock"),
        (
            {
                "security_protocol": "SASL_SSL",
                "sasl_mechanism": "SCRAM-SHA-256",
                "users": {"al=ice": 'pa"ss\\word', "bob": "b"},
                "ssl_client_auth": "required",
            },
            "User:al=ice",
        ),
    ],
)
def test_client_properties_bring_kmocks_own_client_in(
    tmp_path: Path, options, principal: str
) -> None:
    """client_properties() is a client.properties that kmock's client (as `--command-config`)
    reads back: it logs in, across a restart; a wrong password is refused."""
    broker = KmockBroker(tmp_path / "data", {"offsets.topic.num.partitions": 1}, **options)
    broker.start()
    try:
        for _ in range(2):
            props = read_properties(broker.client_properties())
            security = ClientSecurity.from_properties(props)
            with KafkaClient(broker.bootstrap_servers, timeout_s=10, security=security) as c:
                assert c.metadata([]).brokers
                assert c.principal == principal
            broker.restart()
        wrong = ClientSecurity.from_properties(
            read_properties(broker.client_properties(password="wrong"))
        )
        with pytest.raises(KafkaError) as raised:
            KafkaClient(broker.bootstrap_servers, timeout_s=10, security=wrong).connect()
        assert raised.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED
    finally:
        broker.stop()


SESSION_SUITE = """
import pytest

from client import ClientSecurity, KafkaClient, read_properties
from protocol.errors import ErrorCode, KafkaError


def login(broker, **who):
    props = read_properties(broker.client_properties(**who))
    return KafkaClient(broker.bootstrap_servers, timeout_s=10,
                       security=ClientSecurity.from_properties(props))


def test_the_session_broker_is_secured_by_the_ini(kmock_session):
    assert kmock_session.security.security_protocol == "SASL_SSL"
    assert kmock_session.security.sasl_mechanism == "SCRAM-SHA-512"
    assert kmock_session.security.ssl_client_auth == "required"
    for user in ("alice", "bob"):
        with login(kmock_session, user=user) as client:
            assert client.principal == "User:" + user
    with pytest.raises(KafkaError) as raised:
        login(kmock_session, password="wrong").connect()
    assert raised.value.code == ErrorCode.SASL_AUTHENTICATION_FAILED


def test_a_kmock_without_security_marks_follows_the_ini(kmock):
    assert kmock.security.security_protocol == "SASL_SSL"


@pytest.mark.kmock_config(security_protocol="PLAINTEXT")
def test_marks_replace_the_ini_security_whole(kmock):
    assert kmock.security.security_protocol == "PLAINTEXT"
    with KafkaClient(kmock.bootstrap_servers, timeout_s=10) as client:
        assert client.metadata([]).brokers
"""


def test_the_session_fixture_takes_the_security_options_from_the_ini(pytester, monkeypatch) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    )
    pytester.makeini(
        "[pytest]\n"
        "kmock_config =\n"
        "    security_protocol=SASL_SSL\n"
        "    sasl_mechanism=SCRAM-SHA-512\n"
        "    users=alice:alice:secret,bob:bob-secret\n"
        "    ssl_client_auth=required\n"
    )
    pytester.makepyfile(test_session=SESSION_SUITE)
    result = pytester.runpytest_subprocess(
        *plugin_args(), "-p", "no:cacheprovider", "-p", "no:randomly", timeout=120
    )
    result.assert_outcomes(passed=3)


def test_a_users_setting_that_is_not_pairs_is_named(pytester, monkeypatch) -> None:
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    )
    pytester.makepyfile(test_nothing="def test_nothing(kmock_session):\n    pass\n")
    result = pytester.runpytest_subprocess(
        *plugin_args(),
        "-p",
        "no:cacheprovider",
        "--kmock-config",
        "security_protocol=SASL_PLAINTEXT",
        "--kmock-config",
        "users=alice",
        timeout=60,
    )
    assert result.ret != 0
    result.stderr.fnmatch_lines(["*--kmock-config: kmock users='alice': name:password pairs*"])
