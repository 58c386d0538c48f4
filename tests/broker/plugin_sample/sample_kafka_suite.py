"""A user's test module, as it would sit in their own suite: plain sync tests with
kafka-python against the `kmock` fixtures. tests/broker/test_pytest_plugin.py runs it with
pytester as `test_sample.py` (under this name our own suite does not collect it).

The pytester run sets `kmock_config = num.partitions=2` in its ini file.
"""

import pytest
from kafka import KafkaConsumer, KafkaProducer


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    for value in values:
        producer.send(topic, value, partition=0)
    producer.flush()
    producer.close()


def consume(bootstrap: str, topic: str, n: int) -> list[bytes]:
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=10_000
    )
    values = []
    for message in consumer:
        values.append(message.value)
        if len(values) == n:
            break
    consumer.close()
    return values


def test_produce_restart_consume(kmock):
    produce(kmock.bootstrap_servers, "orders", [b"one", b"two"])
    before = kmock.bootstrap_servers
    kmock.restart()
    assert kmock.bootstrap_servers == before  # same port: clients need no new address
    produce(kmock.bootstrap_servers, "orders", [b"three"])
    assert consume(kmock.bootstrap_servers, "orders", 3) == [b"one", b"two", b"three"]


def test_acknowledged_records_survive_a_crash(kmock):
    produce(kmock.bootstrap_servers, "payments", [b"paid"])
    kmock.kill()
    kmock.start()
    assert consume(kmock.bootstrap_servers, "payments", 1) == [b"paid"]


def test_each_test_gets_an_empty_broker(kmock):
    consumer = KafkaConsumer(bootstrap_servers=kmock.bootstrap_servers)
    assert "orders" not in consumer.topics()
    consumer.close()


def test_ini_settings_apply(kmock):
    assert kmock.config["num.partitions"] == 2
    producer = KafkaProducer(bootstrap_servers=kmock.bootstrap_servers)
    assert producer.partitions_for("auto") == {0, 1}
    producer.close()


@pytest.mark.kmock_config({"num.partitions": 3}, auto_create_topics_enable="false")
def test_marker_settings_apply(kmock):
    assert kmock.config["num.partitions"] == 3
    assert kmock.config["auto.create.topics.enable"] is False


@pytest.mark.kmock_config(
    topics=["orders:3", "events:1:1:cleanup.policy=compact"], auto_create_topics_enable="false"
)
def test_topics_exist_before_the_test(kmock):
    producer = KafkaProducer(bootstrap_servers=kmock.bootstrap_servers)
    assert producer.partitions_for("orders") == {0, 1, 2}
    assert producer.partitions_for("events") == {0}
    producer.close()


def test_session_broker_is_shared_first(kmock_session):
    produce(kmock_session.bootstrap_servers, "shared", [b"kept"])


def test_session_broker_is_shared_second(kmock_session):
    assert consume(kmock_session.bootstrap_servers, "shared", 1) == [b"kept"]


# --- the test controls, as fixture methods -------------------------------------------------


def test_injected_errors_are_retried_and_journaled(kmock):
    fault = kmock.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2, topic="retried")
    assert fault["count"] == 2
    produce(kmock.bootstrap_servers, "retried", [b"once"])
    assert consume(kmock.bootstrap_servers, "retried", 1) == [b"once"]
    assert kmock.faults() == []
    errors = [e["error"] for e in kmock.journal(api="Produce", topic="retried")]
    assert errors == ["NOT_LEADER_OR_FOLLOWER", "NOT_LEADER_OR_FOLLOWER", "NONE"]
    with pytest.raises(ValueError, match="unknown Kafka error 'NOT_A_LEADER'"):
        kmock.fail("Produce", "NOT_A_LEADER")


@pytest.mark.kmock_config(kmock_clock="virtual")
def test_virtual_clock_and_connections(kmock):
    produce(kmock.bootstrap_servers, "clocked", [b"a"])
    before = kmock.clock()
    assert before["mode"] == "virtual"
    after = kmock.advance(ms=45_000)
    assert after["now_ms"] - before["now_ms"] == 45_000
    consumer = KafkaConsumer(
        "clocked", bootstrap_servers=kmock.bootstrap_servers, auto_offset_reset="earliest"
    )
    assert [m.value for m in consumer.poll(timeout_ms=10_000, max_records=1).popitem()[1]] == [b"a"]
    closed = {c["connection"] for c in kmock.close_connections()}
    assert closed
    # The client may reconnect at once; the connections closed are gone.
    assert not closed & {c["connection"] for c in kmock.connections()}
    consumer.close()
