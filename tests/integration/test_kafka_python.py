"""kafka-python (pure Python, sync) against kmock: every scenario of the matrix.

The producer runs with the client's defaults (in 3.x: idempotent, acks=all) unless the
scenario says otherwise. Consumers commit by hand so that resume points are exact.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, closing
from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    KAFKA_PYTHON_POLL_MS,
    MEMBER_AUTO_COMMIT,
    REQUEST_TIMEOUT_MS,
    GroupMember,
    Rec,
    encoded_headers,
    kafka_python_consumer_options,
    kafka_python_rec,
    key,
    subscribed,
    unique,
    value,
    wait_until,
)
from tests.integration.matrix import scenario

pytestmark = pytest.mark.integration

CLIENT = "kafka-python"
NOT_EXPRESSIBLE: dict[str, str] = {}

CLIENT_ID = "kmock-kafka-python"


def producer(bootstrap: str, **kw: Any) -> KafkaProducer:
    return KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=CLIENT_ID,
        linger_ms=5,
        max_block_ms=15000,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        **kw,
    )


def consumer(bootstrap: str, *, client_id: str = CLIENT_ID, **kw: Any) -> KafkaConsumer:
    return KafkaConsumer(**kafka_python_consumer_options(bootstrap, client_id, **kw))


def admin(bootstrap: str) -> KafkaAdminClient:
    return KafkaAdminClient(
        bootstrap_servers=bootstrap, client_id=CLIENT_ID, request_timeout_ms=REQUEST_TIMEOUT_MS
    )


def produce(
    bootstrap: str,
    topic: str,
    prefix: str,
    n: int,
    *,
    start: int = 0,
    **kw: Any,
) -> list[Any]:
    hdrs = encoded_headers()
    p = producer(bootstrap, **kw)
    try:
        futures = [
            p.send(topic, key=key(i).encode(), value=value(prefix, i).encode(), headers=hdrs)
            for i in range(start, n)
        ]
        p.flush(timeout=20)
        return [f.get(timeout=1) for f in futures]
    finally:
        p.close(timeout=5)


def poll_until(c: KafkaConsumer, n: int, timeout: float, *, commit: bool = False) -> list[Rec]:
    """Poll until `n` records arrived (no more are taken); optionally commit each batch."""
    got: list[Rec] = []

    def more() -> bool:
        batch = c.poll(timeout_ms=KAFKA_PYTHON_POLL_MS, max_records=n - len(got))
        for records in batch.values():
            got.extend(kafka_python_rec(r) for r in records)
        if commit and batch:
            c.commit()
        return len(got) >= n

    wait_until(more, timeout, f"{n} records (got {len(got)})")
    return got


def consume_all(bootstrap: str, topic: str, n: int, timeout: float = 20) -> list[Rec]:
    """Read `n` records from the beginning of every partition, without a group."""
    with closing(consumer(bootstrap, group_id=None)) as c:
        parts = wait_until(lambda: c.partitions_for_topic(topic), timeout, f"partitions of {topic}")
        c.assign([TopicPartition(topic, p) for p in sorted(parts)])
        return poll_until(c, n, timeout)


def group_consumer(bootstrap: str, topic: str, group: str) -> AbstractContextManager[KafkaConsumer]:
    return subscribed(consumer(bootstrap, group_id=group), topic)


def consume_and_commit(bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
    with group_consumer(bootstrap, topic, group) as c:
        return poll_until(c, n, 30, commit=True)


def client(bootstrap: str) -> scenarios.Client:
    return scenarios.python_client("kp", bootstrap, produce, consume_all, consume_and_commit)


@scenario("metadata")
def test_metadata(shared_broker):
    topic = unique("kp-meta")
    produce(shared_broker.bootstrap_servers, topic, "m", 3)  # auto-creates it
    with closing(admin(shared_broker.bootstrap_servers)) as a:
        cluster = a.describe_cluster()
        described = a.describe_topics([topic])
    scenarios.check_cluster(
        shared_broker,
        cluster_id=cluster["cluster_id"],
        controller_id=cluster["controller_id"],
        brokers=[(b["broker_id"], b["host"], b["port"]) for b in cluster["brokers"]],
    )
    (t,) = described
    assert t["error_code"] == 0
    assert t["name"] == topic
    scenarios.check_partitions(
        shared_broker,
        [
            (
                p["partition_index"],
                p["leader_id"],
                p["replica_nodes"],
                p["isr_nodes"],
                p["error_code"],
            )
            for p in t["partitions"]
        ],
    )


@scenario("create-delete-topic")
def test_create_delete_topic(shared_broker):
    topic = unique("kp-admin")
    with closing(admin(shared_broker.bootstrap_servers)) as a:
        a.create_topics({topic: {"num_partitions": 3, "replication_factor": 1}})
        (t,) = a.describe_topics([topic])
        assert t["error_code"] == 0
        assert sorted(p["partition_index"] for p in t["partitions"]) == [0, 1, 2]
        assert topic in a.list_topics()
        a.delete_topics([topic])
        wait_until(lambda: topic not in a.list_topics(), 10, f"{topic} to disappear")


@scenario("keys-headers")
def test_keys_and_headers(shared_broker):
    scenarios.keys_and_headers(client(shared_broker.bootstrap_servers))


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(shared_broker, codec):
    scenarios.compression(client(shared_broker.bootstrap_servers), shared_broker, codec)


class Member(GroupMember):
    """One group member polling in its own thread."""

    def _open(self) -> None:
        self.c = consumer(
            self.bootstrap,
            group_id=self.group,
            client_id=f"{CLIENT_ID}-{self.name}",
            **MEMBER_AUTO_COMMIT,
        )
        self.c.subscribe([self.topic])

    def _poll(self) -> list[Rec]:
        batch = self.c.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)
        return [kafka_python_rec(r) for records in batch.values() for r in records]


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
    topic, group = unique("kp-desc"), unique("kp-desc")
    bootstrap = shared_broker.bootstrap_servers
    produce(bootstrap, topic, "d", 30)
    with group_consumer(bootstrap, topic, group) as c, closing(admin(bootstrap)) as a:
        poll_until(c, 30, 20, commit=True)
        ends = c.end_offsets([TopicPartition(topic, p) for p in range(3)])
        listed = {g["group_id"]: g for g in a.list_groups()}
        assert group in listed, f"{group} not in {sorted(listed)}"
        assert listed[group]["protocol_type"] == "consumer"
        d = a.describe_groups([group])[group]
        offsets = a.list_group_offsets({group: None})[group]
    assert d["group_id"] == group
    assert d["error"] is None
    assert d["group_state"] == "Stable"
    assert d["protocol_type"] == "consumer"
    assert d["protocol_data"] in ("range", "roundrobin")
    (m,) = d["members"]
    assert m["client_id"] == CLIENT_ID
    (assigned,) = m["member_assignment"]["assigned_partitions"]
    assert assigned == {"topic": topic, "partitions": [0, 1, 2]}
    committed = {tp.partition: meta.offset for tp, meta in offsets.items() if tp.topic == topic}
    assert committed == {tp.partition: end for tp, end in ends.items()}


@scenario("idempotent-producer")
def test_idempotent_producer(shared_broker):
    scenarios.idempotent_producer(client(shared_broker.bootstrap_servers), shared_broker)
