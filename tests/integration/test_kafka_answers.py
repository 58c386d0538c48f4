"""Answers real clients depend on, where kmock once differed from Apache Kafka 4.1: each
scenario here failed before kmock answered as Kafka does.

- librdkafka's offset reset: a Fetch for an offset past the end is answered
  OFFSET_OUT_OF_RANGE with empty (not null) records, so the consumer resets to
  auto.offset.reset and reads on, with no protocol error logged;
- kafka-python infers the broker version from ApiVersions: 4.1;
- a compacted topic refuses a record without a key (INVALID_RECORD);
- altering a group's offsets for a topic that does not exist fails;
- a topic deleted and created again starts the group from auto.offset.reset, also after a
  restart (the deleted topic's offsets are deleted with it);
- the authorized-operations bit fields name Kafka 4.x's sets.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest
from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    TopicCollection,
    TopicPartition,
)
from confluent_kafka.admin import AclOperation, NewTopic
from kafka import KafkaConsumer

from tests.integration.harness import RDKAFKA_LOG, LogLines, deadline, unique, wait_until
from tests.integration.test_confluent_kafka import Consumer, Producer, admin, produce, take

pytestmark = pytest.mark.integration


def _create(bootstrap: str, topic: str, partitions: int = 1, **config: str) -> None:
    a = admin(bootstrap)  # kept alive until the answer is in
    futures = a.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1, config=config)]
    )
    futures[topic].result(timeout=20)


@deadline(60)
def test_librdkafka_resets_an_offset_past_the_end_and_reads_from_the_start(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    topic = unique("reset")
    _create(bootstrap, topic)
    produce(bootstrap, topic, "r", 3)
    captured = LogLines(logging.WARNING)
    RDKAFKA_LOG.addHandler(captured)
    c = Consumer(bootstrap, auto_offset_reset="earliest", debug="protocol,fetch")
    try:
        c.assign([TopicPartition(topic, 0, 100)])  # past the end: OFFSET_OUT_OF_RANGE
        got = take(c, 3, timeout=15)
    finally:
        c.close()
        RDKAFKA_LOG.removeHandler(captured)
    assert [r.offset for r in got] == [0, 1, 2]
    assert [r.value for r in got] == ["r-0", "r-1", "r-2"]
    bad = [line for line in captured.lines if "rror" in line or "PROTOERR" in line]
    assert bad == []


@deadline(30)
def test_kafka_python_infers_kafka_4_1(shared_broker):
    consumer = KafkaConsumer(bootstrap_servers=shared_broker.bootstrap_servers)
    try:
        assert consumer.config["api_version"] == (4, 1)
    finally:
        consumer.close()


@deadline(30)
def test_a_compacted_topic_refuses_a_record_without_a_key(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    topic = unique("compact")
    _create(bootstrap, topic, **{"cleanup.policy": "compact"})
    reports: list[Any] = []
    p = Producer(bootstrap)
    p.produce(topic, value=b"no key", on_delivery=lambda err, msg: reports.append(err))
    assert p.flush(20) == 0
    p.produce(topic, key=b"k", value=b"keyed", on_delivery=lambda err, msg: reports.append(err))
    assert p.flush(20) == 0
    # Kafka refuses the whole batch a key-less record is in; the keyed one, sent alone, goes in.
    assert [None if e is None else e.code() for e in reports] == [KafkaError.INVALID_RECORD, None]


@deadline(30)
def test_altering_offsets_of_a_missing_topic_fails(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    group = unique("alter")
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(unique("missing"), 0, 5)])
    a = admin(bootstrap)
    futures = a.alter_consumer_group_offsets([request])
    result = futures[group].result(timeout=20)
    (partition,) = result.topic_partitions
    assert partition.error is not None
    assert partition.error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART


@deadline(90)
def test_a_topic_created_again_starts_from_auto_offset_reset(fresh_broker):
    b = fresh_broker()
    topic, group = unique("again"), unique("again-g")
    _create(b.bootstrap_servers, topic)
    produce(b.bootstrap_servers, topic, "old", 3)
    c = Consumer(b.bootstrap_servers, group_id=group)
    try:
        c.commit(offsets=[TopicPartition(topic, 0, 3)], asynchronous=False)
    finally:
        c.close()
    a = admin(b.bootstrap_servers)
    a.delete_topics([topic])[topic].result(timeout=20)
    wait_until(
        lambda: topic not in a.list_topics(timeout=10).topics,
        20,
        f"{topic} deleted",
    )
    _create(b.bootstrap_servers, topic)
    produce(b.bootstrap_servers, topic, "new", 3)
    b.restart()
    c = Consumer(b.bootstrap_servers, group_id=group, auto_offset_reset="earliest")
    try:
        committed = c.committed([TopicPartition(topic, 0)], timeout=10)
        assert committed[0].offset < 0  # no offset: the old one went with the old topic
        c.subscribe([topic])
        got = take(c, 3, timeout=30)
    finally:
        c.close()
    assert [(r.offset, r.value) for r in got] == [(0, "new-0"), (1, "new-1"), (2, "new-2")]


@deadline(30)
def test_authorized_operations_are_kafka_4s_sets(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    topic = unique("ops")
    _create(bootstrap, topic)
    a = admin(bootstrap)
    cluster = a.describe_cluster(include_authorized_operations=True).result(timeout=20)
    assert set(cluster.authorized_operations) == {
        AclOperation.CREATE,
        AclOperation.CLUSTER_ACTION,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
        AclOperation.IDEMPOTENT_WRITE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE,
    }
    described = a.describe_topics(TopicCollection([topic]), include_authorized_operations=True)
    ops = described[topic].result(timeout=20).authorized_operations
    assert set(ops) == {
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.CREATE,
        AclOperation.DESCRIBE,
        AclOperation.DELETE,
        AclOperation.ALTER,
        AclOperation.DESCRIBE_CONFIGS,
        AclOperation.ALTER_CONFIGS,
    }
