"""confluent-kafka (librdkafka) against kmock: every scenario of the matrix.

librdkafka logs through a Python logger (harness.RDKAFKA_LOG), and its `error_cb` errors are
logged there as warnings, so its own words appear in the captured log of a failed scenario.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import Any

import pytest
from confluent_kafka import Consumer as _Consumer
from confluent_kafka import (
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    TopicPartition,
)
from confluent_kafka import Producer as _Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    HEARTBEAT_MS,
    MEMBER_AUTO_COMMIT,
    RDKAFKA_LOG,
    SESSION_TIMEOUT_MS,
    GroupMember,
    Rec,
    confluent_conf,
    confluent_consume,
    confluent_rec,
    confluent_send,
    subscribed,
    unique,
    wait_until,
)
from tests.integration.matrix import scenario

pytestmark = pytest.mark.integration

CLIENT = "confluent-kafka"
NOT_EXPRESSIBLE: dict[str, str] = {}
KNOWN_FAILURES: dict[str, str] = {}

CLIENT_ID = "kmock-confluent-kafka"
errors: list[str] = []


def _on_error(err: KafkaError) -> None:
    errors.append(str(err))
    RDKAFKA_LOG.warning("error_cb: %s", err)


def common(bootstrap: str, **kw: Any) -> dict[str, Any]:
    """The configuration of this module's clients; `kw` under kafka-python's names."""
    return confluent_conf(
        bootstrap,
        CLIENT_ID,
        error_cb=_on_error,
        **{k.replace("_", "."): v for k, v in kw.items()},
    )


def Producer(bootstrap: str, **kw: Any) -> _Producer:
    return _Producer(common(bootstrap, **{"linger_ms": 5, "acks": "all", **kw}))


def Consumer(bootstrap: str, **kw: Any) -> _Consumer:
    return _Consumer(
        common(
            bootstrap,
            **{
                "group_id": unique("ck-assign"),
                "auto_offset_reset": "earliest",
                "enable_auto_commit": False,
                "fetch_wait_max_ms": 100,
                "session_timeout_ms": SESSION_TIMEOUT_MS,
                "heartbeat_interval_ms": HEARTBEAT_MS,
                **kw,
            },
        )
    )


def admin(bootstrap: str) -> AdminClient:
    return AdminClient(common(bootstrap))


def produce(bootstrap: str, topic: str, prefix: str, n: int, *, start: int = 0, **kw: Any) -> None:
    failed: list[str] = []

    def delivered(err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            failed.append(f"{msg.value()!r}: {err}")

    p = Producer(bootstrap, **kw)
    confluent_send(p, topic, prefix, range(start, n), delivered)
    left = p.flush(20)
    assert left == 0, f"{left} records not delivered in 20 s (librdkafka errors: {errors})"
    assert not failed, f"delivery failed: {failed[:3]}"


def take(c: _Consumer, n: int, timeout: float = 30, *, commit: bool = False) -> list[Rec]:
    got: list[Rec] = []

    def more() -> bool:
        for m in c.consume(num_messages=n - len(got), timeout=0.1):
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    continue
                raise KafkaException(m.error())
            got.append(confluent_rec(m))
            if commit:
                c.commit(message=m, asynchronous=False)
        return len(got) >= n

    wait_until(more, timeout, f"{n} records (got {len(got)})")
    return got


def consume_all(bootstrap: str, topic: str, n: int) -> list[Rec]:
    c = Consumer(bootstrap)
    try:
        md = c.list_topics(topic, timeout=10)
        parts = sorted(md.topics[topic].partitions)
        c.assign([TopicPartition(topic, p, 0) for p in parts])
        return take(c, n)
    finally:
        c.close()


def group_consumer(bootstrap: str, topic: str, group: str) -> AbstractContextManager[_Consumer]:
    return subscribed(Consumer(bootstrap, group_id=group), topic)


def consume_and_commit(bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
    with group_consumer(bootstrap, topic, group) as c:
        return take(c, n, commit=True)


def client(bootstrap: str) -> scenarios.Client:
    return scenarios.python_client("ck", bootstrap, produce, consume_all, consume_and_commit)


@scenario("metadata")
def test_metadata(shared_broker):
    topic = unique("ck-meta")
    produce(shared_broker.bootstrap_servers, topic, "m", 3)
    a = admin(shared_broker.bootstrap_servers)
    md = a.list_topics(topic, timeout=10)
    scenarios.check_cluster(
        shared_broker,
        cluster_id=md.cluster_id,
        controller_id=md.controller_id,
        brokers=[(b.id, b.host, b.port) for b in md.brokers.values()],
    )
    t = md.topics[topic]
    assert t.error is None, t.error
    scenarios.check_partitions(
        shared_broker,
        [
            (p.id, p.leader, p.replicas, p.isrs, p.error.code() if p.error else 0)
            for p in t.partitions.values()
        ],
    )
    try:
        everything = a.list_topics(timeout=10)
    except KafkaException as e:
        raise AssertionError(f"list_topics() of all topics failed: {e}") from e
    assert topic in everything.topics


@scenario("create-delete-topic")
def test_create_delete_topic(shared_broker):
    topic = unique("ck-admin")
    a = admin(shared_broker.bootstrap_servers)
    a.create_topics([NewTopic(topic, num_partitions=3, replication_factor=1)], request_timeout=10)[
        topic
    ].result(timeout=15)
    md = a.list_topics(topic, timeout=10)
    assert sorted(md.topics[topic].partitions) == [0, 1, 2]
    a.delete_topics([topic], request_timeout=10)[topic].result(timeout=15)

    def gone() -> bool:
        try:
            return topic not in a.list_topics(timeout=10).topics
        except KafkaException as e:
            raise AssertionError(f"list_topics() of all topics failed: {e}") from e

    wait_until(gone, 10, f"{topic} to disappear from metadata")


@scenario("keys-headers")
def test_keys_and_headers(shared_broker):
    scenarios.keys_and_headers(client(shared_broker.bootstrap_servers))


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(shared_broker, codec):
    scenarios.compression(client(shared_broker.bootstrap_servers), shared_broker, codec)


class Member(GroupMember):
    """One group member consuming in its own thread."""

    def _open(self) -> None:
        self.c = Consumer(
            self.bootstrap,
            group_id=self.group,
            client_id=f"{CLIENT_ID}-{self.name}",
            **MEMBER_AUTO_COMMIT,
        )
        self.c.subscribe([self.topic])

    def _poll(self) -> list[Rec]:
        return confluent_consume(self.c, 100, 0.1)


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        client(bootstrap), lambda topic, group, name: Member(bootstrap, topic, group, name)
    )


@scenario("commit-resume")
def test_commit_and_resume(shared_broker):
    scenarios.commit_and_resume(client(shared_broker.bootstrap_servers))


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(fresh_broker):
    b = fresh_broker()
    scenarios.resume_after_restart(client(b.bootstrap_servers), b)


@scenario("list-describe-groups")
def test_list_and_describe_groups(shared_broker):
    topic, group = unique("ck-desc"), unique("ck-desc")
    bootstrap = shared_broker.bootstrap_servers
    produce(bootstrap, topic, "d", 30)
    a = admin(bootstrap)
    with group_consumer(bootstrap, topic, group) as c:
        take(c, 30, commit=True)
        ends = {
            p: c.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(3)
        }
        listed = a.list_consumer_groups(request_timeout=10).result(timeout=15)
        described = a.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        offsets = a.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=10
        )[group].result(15)
    assert not listed.errors, listed.errors
    mine = [g for g in listed.valid if g.group_id == group]
    assert mine, f"{group} not in {[g.group_id for g in listed.valid]}"
    assert not mine[0].is_simple_consumer_group
    assert described.group_id == group
    assert not described.is_simple_consumer_group
    assert str(described.state).endswith("STABLE"), described.state
    assert described.partition_assignor in ("range", "roundrobin"), described.partition_assignor
    (m,) = described.members
    assert m.client_id == CLIENT_ID
    assert sorted(tp.partition for tp in m.assignment.topic_partitions) == [0, 1, 2]
    committed = {tp.partition: tp.offset for tp in offsets.topic_partitions if tp.topic == topic}
    assert committed == ends


@scenario("idempotent-producer")
def test_idempotent_producer(shared_broker):
    scenarios.idempotent_producer(client(shared_broker.bootstrap_servers), shared_broker)
