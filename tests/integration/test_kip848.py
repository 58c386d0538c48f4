"""KIP-848 consumer groups with confluent-kafka (librdkafka, `group.protocol=consumer`).

One round, run on a fresh broker and again on the same group after a graceful restart:

1. three members join and converge to disjoint assignments covering the six partitions
   of a topic; then one record per partition is produced, and between them they read
   exactly those six records (first round: from the start; second round: from the offsets
   committed before the restart, so nothing already committed comes back);
2. the admin client's describe_consumer_groups (ConsumerGroupDescribe) shows a
   consumer-protocol group with the three members and their assignments, and
   list_consumer_groups lists it as a consumer group;
3. every member commits (OffsetCommit v9 with its member epoch), and OffsetFetch gives
   the commits back; one member leaves and the other two cover all six partitions, then
   read exactly the six records produced after that, the leaver's partitions resumed
   from its commits.

Members are polled in turn from the test's thread; every wait has its own deadline, and
the whole scenario has the conftest's.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterable
from typing import Any

import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import (
    ConsumerGroupState,
    ConsumerGroupType,
    KafkaException,
    TopicPartition,
)
from confluent_kafka import Producer as CkProducer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.integration.harness import confluent_conf, deadline, unique, wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 6
CLIENT_ID = "kmock-kip848"
WAIT_S = 30.0
# Members learn the interval from the broker: short, so that reconciliation (which moves
# one heartbeat at a time) takes a few seconds at most.
OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": 300,
    "group.consumer.session.timeout.ms": 10_000,
}


def _member(bootstrap: str, group: str, topic: str) -> CkConsumer:
    c = CkConsumer(
        confluent_conf(
            bootstrap,
            CLIENT_ID,
            **{
                "group.id": group,
                "group.protocol": "consumer",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            },
        )
    )
    c.subscribe([topic])
    return c


def _produce(bootstrap: str, topic: str, tag: str) -> set[tuple[int, str]]:
    """One record per partition; returns (partition, value) of each."""
    p = CkProducer(confluent_conf(bootstrap, CLIENT_ID, **{"acks": "all"}))
    sent = {(i, f"{tag}-{i}") for i in range(PARTITIONS)}
    for partition, v in sent:
        p.produce(topic, value=v.encode(), partition=partition)
    assert p.flush(10) == 0
    return sent


def _assignment(c: CkConsumer) -> set[int]:
    return {tp.partition for tp in c.assignment()}


def _poll_until(
    members: Iterable[CkConsumer],
    done: Any,
    what: str,
    seen: list[tuple[int, str]],
) -> None:
    """Poll every member in turn, adding what they read to `seen`, until `done()`."""
    members = list(members)
    end = time.monotonic() + WAIT_S
    while not done():
        if time.monotonic() > end:
            raise AssertionError(
                f"timed out after {WAIT_S:g} s waiting for {what}; assignments "
                f"{[sorted(_assignment(c)) for c in members]}, read {sorted(seen)}"
            )
        for c in members:
            m = c.poll(0.05)
            if m is None:
                continue
            if m.error():
                raise KafkaException(m.error())
            seen.append((m.partition(), m.value().decode()))


def _disjoint_and_complete(members: list[CkConsumer]) -> bool:
    parts = [_assignment(c) for c in members]
    return all(parts) and sorted(p for a in parts for p in a) == list(range(PARTITIONS))


def _describe(admin: AdminClient, group: str, members: int) -> Any:
    """The group's description once it is Stable with `members` members."""

    def stable() -> Any:
        d = admin.describe_consumer_groups([group], request_timeout=10)[group].result(10)
        return d if d.state == ConsumerGroupState.STABLE and len(d.members) == members else None

    return wait_until(stable, WAIT_S, f"{group} Stable with {members} members")


def _round(bootstrap: str, topic: str, group: str, tag: str) -> None:
    admin = AdminClient(confluent_conf(bootstrap, CLIENT_ID))
    members = [_member(bootstrap, group, topic) for _ in range(3)]
    try:
        # The records come once the members have converged: the first member to join owns
        # every partition for a moment, and whatever it read then would be read again by
        # the next owner (at-least-once, with Kafka as with kmock).
        seen: list[tuple[int, str]] = []
        _poll_until(
            members, lambda: _disjoint_and_complete(members), "three members to converge", seen
        )
        assert seen == [], "nothing to read: every earlier record is committed"
        first = _produce(bootstrap, topic, f"{tag}-first")
        _poll_until(members, lambda: len(seen) >= PARTITIONS, "the six records", seen)
        assert _disjoint_and_complete(members)
        assert sorted(seen) == sorted(first), "each record read once, none committed before"

        d = _describe(admin, group, 3)
        assert d.type == ConsumerGroupType.CONSUMER
        assert not d.is_simple_consumer_group
        described = [
            {tp.partition for tp in m.assignment.topic_partitions if tp.topic == topic}
            for m in d.members
        ]
        assert sorted(p for a in described for p in a) == list(range(PARTITIONS))
        assert sorted(map(sorted, described)) == sorted(sorted(_assignment(c)) for c in members)
        listed = admin.list_consumer_groups(request_timeout=10).result(10)
        types = {g.group_id: g.type for g in listed.valid}
        assert types[group] == ConsumerGroupType.CONSUMER

        for c in members:
            c.commit(asynchronous=False)
        positions = {
            tp.partition: tp.offset for c in members for tp in c.position(list(c.assignment()))
        }
        committed = members[0].committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
        assert {tp.partition: tp.offset for tp in committed} == positions

        leaver = members.pop()
        leaver.close()
        seen = []
        _poll_until(
            members, lambda: _disjoint_and_complete(members), "two members to cover six", seen
        )
        second = _produce(bootstrap, topic, f"{tag}-second")
        _poll_until(members, lambda: len(seen) >= PARTITIONS, "the six new records", seen)
        assert sorted(seen) == sorted(second), "the leaver's partitions resumed from its commits"
        _describe(admin, group, 2)
        for c in members:
            c.commit(asynchronous=False)
    finally:
        for c in members:
            c.close()


@deadline(150)
def test_consumer_protocol_group_converges_resumes_and_survives_restart(fresh_broker):
    b = fresh_broker(**OVERRIDES)
    topic, group = unique("kip848"), f"kip848-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(confluent_conf(b.bootstrap_servers, CLIENT_ID))
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)

    _round(b.bootstrap_servers, topic, group, "before")
    b.restart()
    admin = AdminClient(confluent_conf(b.bootstrap_servers, CLIENT_ID))
    listed = admin.list_consumer_groups(request_timeout=10).result(10)
    assert {g.group_id: g.type for g in listed.valid}.get(group) == ConsumerGroupType.CONSUMER
    _round(b.bootstrap_servers, topic, group, "after")


@deadline(60)
def test_a_consumer_protocol_member_cannot_join_a_classic_group_with_members(fresh_broker):
    """No online migration (group.consumer.migration.policy=disabled): librdkafka gets
    GROUP_ID_NOT_FOUND, which it reports as a fatal error, as against Kafka with migration
    disabled; the kafka-python member keeps its partitions."""
    from confluent_kafka import KafkaError
    from kafka import KafkaConsumer

    b = fresh_broker(**OVERRIDES)
    topic, group = unique("kip848-mixed"), f"kip848-mixed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(confluent_conf(b.bootstrap_servers, CLIENT_ID))
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(10)
    classic = KafkaConsumer(topic, bootstrap_servers=b.bootstrap_servers, group_id=group)
    modern = None
    try:
        wait_until(
            lambda: classic.poll(100) is not None and classic.assignment(),
            WAIT_S,
            "the classic member's assignment",
        )
        modern = _member(b.bootstrap_servers, group, topic)
        errors: list[Any] = []

        def refused() -> bool:
            m = modern.poll(0.1)
            classic.poll(10)
            if m is not None and m.error():
                errors.append(m.error())
            return bool(errors)

        wait_until(refused, WAIT_S, "the consumer-protocol member to be refused")
        assert errors[0].code() == KafkaError._FATAL
        assert "group id does not exist" in errors[0].str()
        assert modern.assignment() == []
        assert {tp.partition for tp in classic.assignment()} == {0, 1}
        listed = admin.list_consumer_groups(request_timeout=10).result(10)
        types = {g.group_id: g.type for g in listed.valid}
        assert types[group] == ConsumerGroupType.CLASSIC
    finally:
        if modern is not None:
            modern.close()
        classic.close()
