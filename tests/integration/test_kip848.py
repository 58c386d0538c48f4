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

import abc
import threading
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

from tests.integration.harness import (
    KAFKA_PYTHON_POLL_MS,
    confluent_conf,
    deadline,
    kafka_python_group_consumer,
    unique,
    wait_until,
)

pytestmark = pytest.mark.integration

PARTITIONS = 6
CLIENT_ID = "kmock-kip848"
# Each phase settles in a few seconds; a loaded 2-core machine (a soak and a fuzz beside the
# suite) once took a kafka-python rebalance past 30 s.
WAIT_S = 60.0
# Members learn the interval from the broker: short, so that reconciliation (which moves
# one heartbeat at a time) takes a few seconds at most.
OVERRIDES = {
    "group.consumer.heartbeat.interval.ms": 300,
    "group.consumer.session.timeout.ms": 10_000,
}


def _member(bootstrap: str, group: str, topic: str, **conf: Any) -> CkConsumer:
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
                **conf,
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

    b = fresh_broker(**OVERRIDES, **{"group.consumer.migration.policy": "disabled"})
    topic, group = unique("kip848-mixed"), f"kip848-mixed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(confluent_conf(b.bootstrap_servers, CLIENT_ID))
    admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(10)
    classic = kafka_python_group_consumer(
        topic, bootstrap_servers=b.bootstrap_servers, group_id=group
    )
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


# --- online migration ----------------------------------------------------------------------


class _Stream:
    """A steady produce stream and what the group's members made of it.

    A record counts as consumed once the commit after the poll that returned it succeeded;
    when a commit fails (the member is in a rebalance), its records do not count, and the
    member seeks back to them on the partitions it still has, as an application that
    processes after committing would. Every record must be consumed exactly once: no
    offset of a partition by two members, and none twice by one.
    """

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.topic = topic
        self.producer = CkProducer(confluent_conf(bootstrap, CLIENT_ID, **{"acks": "all"}))
        self.sent: set[tuple[int, int]] = set()  # (partition, offset)
        self.consumed: dict[tuple[int, int], str] = {}  # (partition, offset) -> member
        self.errors: list[str] = []
        self.lock = threading.Lock()
        self.counter = 0

    def produce(self, n: int = 6) -> None:
        def delivered(err: Any, msg: Any) -> None:
            assert err is None, err
            with self.lock:
                self.sent.add((msg.partition(), msg.offset()))

        for _ in range(n):
            self.counter += 1
            self.producer.produce(
                self.topic, value=f"r{self.counter}".encode(), on_delivery=delivered
            )
        self.producer.poll(0)

    def flush(self) -> None:
        assert self.producer.flush(10) == 0

    def accept(self, member: str, records: list[tuple[int, int]]) -> None:
        with self.lock:
            for key in records:
                if key in self.consumed:
                    self.errors.append(
                        f"partition {key[0]} offset {key[1]} consumed by {self.consumed[key]} "
                        f"and by {member}"
                    )
                self.consumed[key] = member

    def missing(self) -> set[tuple[int, int]]:
        with self.lock:
            return self.sent - set(self.consumed)

    def count(self, member: str) -> int:
        with self.lock:
            return sum(1 for m in self.consumed.values() if m == member)


class _Member(abc.ABC):
    """A member polling and committing in its own thread, as applications run them."""

    name: str

    def start(self, stream: _Stream) -> None:
        self._stop = threading.Event()
        self._failure: Exception | None = None

        def run() -> None:
            try:
                while not self._stop.is_set():
                    self.step(stream)
            except Exception as e:  # handed to the test's thread by stop()
                self._failure = e
            finally:
                self.close()

        self._thread = threading.Thread(target=run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """Stop polling and close (the member leaves the group)."""
        self._stop.set()
        self._thread.join(30)
        assert not self._thread.is_alive(), f"{self.name} did not stop"
        if self._failure is not None:
            raise self._failure

    @abc.abstractmethod
    def step(self, stream: _Stream) -> None:
        """Poll once, hand what was consumed to `stream`, commit."""

    @abc.abstractmethod
    def close(self) -> None:
        """Leave the group and close the client."""

    @abc.abstractmethod
    def assignment(self) -> set[int]:
        """The partitions the member owns now."""


class _Classic(_Member):
    """A kafka-python member (the classic protocol, eager range assignor)."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str) -> None:
        from tests.integration.harness import kafka_python_consumer_options

        self.name = name
        self.consumer = kafka_python_group_consumer(
            topic, **kafka_python_consumer_options(bootstrap, name, group_id=group)
        )

    def assignment(self) -> set[int]:
        return {tp.partition for tp in set(self.consumer.assignment())}

    def step(self, stream: _Stream) -> None:
        from kafka.errors import KafkaError as PyKafkaError

        batches = self.consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)
        records = [(r.partition, r.offset) for rs in batches.values() for r in rs]
        if not records:
            return
        try:
            self.consumer.commit()
        except PyKafkaError:
            for tp, rs in batches.items():
                if tp in self.consumer.assignment():
                    self.consumer.seek(tp, min(r.offset for r in rs))
            return
        stream.accept(self.name, records)

    def close(self) -> None:
        self.consumer.close()


class _Modern(_Member):
    """A confluent-kafka member (group.protocol=consumer, or what `conf` says)."""

    def __init__(self, name: str, bootstrap: str, group: str, topic: str, **conf: Any) -> None:
        self.name = name
        self.consumer = _member(bootstrap, group, topic, **conf)
        self.assigned: set[int] = set()

    def assignment(self) -> set[int]:
        return set(self.assigned)

    def step(self, stream: _Stream) -> None:
        messages = self.consumer.consume(num_messages=100, timeout=0.2)
        self.assigned = _assignment(self.consumer)
        for m in messages:
            if m.error():
                raise KafkaException(m.error())
        if not messages:
            return
        try:
            self.consumer.commit(asynchronous=False)
        except KafkaException:
            firsts: dict[int, int] = {}
            for m in messages:
                firsts[m.partition()] = min(firsts.get(m.partition(), m.offset()), m.offset())
            for partition, offset in firsts.items():
                if partition in self.assigned:
                    self.consumer.seek(TopicPartition(stream.topic, partition, offset))
            return
        stream.accept(self.name, [(m.partition(), m.offset()) for m in messages])

    def close(self) -> None:
        self.consumer.close()


def _produce_until(
    stream: _Stream, members: list[_Member], until: Any, what: str, produce: bool = True
) -> None:
    """Produce a steady stream (about 300 records a second) until `until()`."""
    end = time.monotonic() + WAIT_S
    while not until():
        if time.monotonic() > end:
            raise AssertionError(
                f"timed out after {WAIT_S:g} s waiting for {what}; assignments "
                f"{ {m.name: sorted(m.assignment()) for m in members} }, "
                f"{len(stream.missing())} records not consumed"
            )
        if produce:
            stream.produce()
        # The stream's pace: wait up to 20 ms for the producer's delivery reports (the
        # members poll in their own threads).
        stream.producer.poll(0.02)


def _covered(members: list[_Member]) -> bool:
    parts = [m.assignment() for m in members]
    return all(parts) and sorted(p for a in parts for p in a) == list(range(PARTITIONS))


def _group_type(admin: AdminClient, group: str) -> Any:
    listed = admin.list_consumer_groups(request_timeout=10).result(10)
    return {g.group_id: g.type for g in listed.valid}.get(group)


def _add(
    stream: _Stream,
    members: list[_Member],
    new: _Member,
    running: list[_Member],
    who: str,
    until: Any = lambda: True,
) -> list[_Member]:
    """Start `new` (added to `running`) and produce until it has its share of the
    partitions and consumed some, and `until()`; returns the members with it."""
    new.start(stream)
    running.append(new)
    members = [*members, new]
    _produce_until(
        stream,
        members,
        lambda: _covered(members) and stream.count(new.name) > 0 and until(),
        f"{who} to take its share and consume",
    )
    return members


def _two_classic_members(
    bootstrap: str, admin: AdminClient, group: str, topic: str, running: list[_Member]
) -> tuple[_Stream, list[_Member]]:
    """The topic, a stream to it, and two kafka-python members (added to `running`)
    covering its partitions."""
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(10)
    stream = _Stream(bootstrap, topic)
    classic: list[_Member] = [_Classic(f"classic-{i}", bootstrap, group, topic) for i in range(2)]
    for m in classic:
        m.start(stream)
        running.append(m)
    _produce_until(stream, classic, lambda: _covered(classic), "two classic members")
    return stream, classic


@deadline(180)
def test_a_classic_group_upgrades_online_and_downgrades_back(fresh_broker):
    """Two kafka-python members consume a steady stream from a 6-partition topic; a
    confluent-kafka `group.protocol=consumer` member joins (the group becomes a consumer
    group, the kafka-python members are served inside it) and later leaves (the group is
    classic again); the kafka-python members keep going, also after a broker restart.
    Every record is consumed exactly once across it all."""
    b = fresh_broker(**OVERRIDES)
    bootstrap = b.bootstrap_servers
    topic, group = unique("kip848-migration"), f"kip848-migration-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(confluent_conf(bootstrap, CLIENT_ID))
    running: list[_Member] = []
    try:
        stream, classic = _two_classic_members(bootstrap, admin, group, topic, running)
        assert _group_type(admin, group) == ConsumerGroupType.CLASSIC

        # Upgrade: the consumer-protocol member joins the classic group.
        modern = _Modern("consumer-0", bootstrap, group, topic)
        _add(stream, classic, modern, running, "the consumer-protocol member")
        d = _describe(admin, group, 3)
        assert d.type == ConsumerGroupType.CONSUMER
        assert _group_type(admin, group) == ConsumerGroupType.CONSUMER

        # Downgrade: the last consumer-protocol member leaves.
        running.remove(modern)
        modern.stop()
        _produce_until(
            stream,
            classic,
            lambda: _covered(classic) and _group_type(admin, group) == ConsumerGroupType.CLASSIC,
            "the classic group to be back, both members covering every partition",
        )
        stream.flush()
        _produce_until(stream, classic, lambda: not stream.missing(), "every record", False)

        # A restart keeps the classic group; its members carry on.
        b.restart()
        admin = AdminClient(confluent_conf(bootstrap, CLIENT_ID))
        assert _group_type(admin, group) == ConsumerGroupType.CLASSIC
        before = len(stream.sent)
        _produce_until(
            stream,
            classic,
            lambda: len(stream.sent) > before + 300,
            "records produced after the restart",
        )
        stream.flush()
        _produce_until(
            stream, classic, lambda: not stream.missing(), "every record after the restart", False
        )
        assert _group_type(admin, group) == ConsumerGroupType.CLASSIC
        assert stream.errors == []
        assert set(stream.consumed) == stream.sent
    finally:
        for m in running:
            m.stop()


@deadline(180)
def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades(fresh_broker):
    """Two kafka-python members and a static confluent-kafka `group.protocol=consumer`
    member (group.instance.id) share a stream in an upgraded group. The static member
    stops (a static leave: its place is kept); a confluent-kafka classic member with the
    same group.instance.id takes it, which turns the group classic again
    (validateOnlineDowngradeWithReplacedMember). Every record is consumed exactly once."""
    b = fresh_broker(**OVERRIDES)
    bootstrap = b.bootstrap_servers
    topic, group = unique("kip848-static"), f"kip848-static-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(confluent_conf(bootstrap, CLIENT_ID))
    running: list[_Member] = []
    try:
        stream, classic = _two_classic_members(bootstrap, admin, group, topic, running)
        modern = _Modern("static-consumer", bootstrap, group, topic, **{"group.instance.id": "i0"})
        _add(stream, classic, modern, running, "the static consumer-protocol member")
        running.remove(modern)
        modern.stop()
        assert _group_type(admin, group) == ConsumerGroupType.CONSUMER, "its place is kept"

        replacement = _Modern(
            "static-classic", bootstrap, group, topic,
            **{"group.protocol": "classic", "group.instance.id": "i0",
               "session.timeout.ms": 10_000, "partition.assignment.strategy": "range"},
        )  # fmt: skip
        members = _add(
            stream,
            classic,
            replacement,
            running,
            "the classic replacement, in a classic group",
            lambda: _group_type(admin, group) == ConsumerGroupType.CLASSIC,
        )
        stream.flush()
        _produce_until(stream, members, lambda: not stream.missing(), "every record", False)
        assert stream.errors == []
        assert set(stream.consumed) == stream.sent
    finally:
        for m in running:
            m.stop()
