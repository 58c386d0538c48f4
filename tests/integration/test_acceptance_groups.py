"""Acceptance of the group coordinator issue, as stated there, with real clients.

1. Three consumers in one group on a 6-partition topic get disjoint assignments covering
   all six; closing one rebalances the other two within the session timeout, and they then
   cover all six. Synchronous, asynchronous and auto commits (one member each) are visible
   through OffsetFetch (the member's own `committed`) and through the client's admin API:
   list groups, describe groups, list group offsets, delete groups (refused while the group
   has members, done once it is empty). With kafka-python, confluent-kafka (range, and
   cooperative-sticky with its incremental rebalance callbacks) and aiokafka.
2. After a graceful restart and after a crash (KmockBroker.kill(), then start), committed
   offsets are back and a consumer resumes exactly after its last acknowledged commit
   (each consumer commits, has it acknowledged, and leaves before the broker goes down).
3. Static membership: a member with group.instance.id that restarts within its session
   timeout gets its partitions back, and the other member does not rebalance (no rebalance
   callback, same generation, same member id in DescribeGroups) for a whole session timeout
   after the old instance went away.

The brokers accept session timeouts down to 1 s, so that members can run with 3 s sessions
and 300 ms heartbeats. Records are produced with confluent-kafka whatever the consumer
(it is the fastest producer, and producing is not what these scenarios are about).
"""

from __future__ import annotations

import asyncio
import queue
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Coroutine, Iterator, Sequence
from concurrent.futures import Future
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from typing import Any, TypeVar

import aiokafka
import aiokafka.errors
import kafka
import kafka.errors
import pytest
from aiokafka.abc import ConsumerRebalanceListener as AioListener
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.coordinator.protocol import ConsumerProtocolMemberAssignment
from aiokafka.protocol.admin import DeleteGroupsRequest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException
from confluent_kafka import Producer as CkProducer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from protocol.errors import ErrorCode
from tests.integration.harness import (
    KAFKA_PYTHON_POLL_MS,
    REQUEST_TIMEOUT_MS,
    GroupMember,
    Rec,
    check_records,
    confluent_conf,
    confluent_consume,
    confluent_send,
    deadline,
    kafka_python_consumer_options,
    kafka_python_rec,
    unique,
    value,
    wait_until,
)
from tests.integration.scenarios import ends_of

pytestmark = pytest.mark.integration

T = TypeVar("T")
L = TypeVar("L")

PARTITIONS = 6
SESSION_TIMEOUT_MS = 3000
HEARTBEAT_MS = 300
SESSION_S = SESSION_TIMEOUT_MS / 1000
BROKER = {"group.min.session.timeout.ms": 1000}
WAIT_S = 45  # for anything but the timings under test
CK_ID = "kmock-acceptance"


# --- topics and records (confluent-kafka) -----------------------------------------------------


def create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    a = AdminClient(confluent_conf(bootstrap, CK_ID))
    a.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=1)], request_timeout=10
    )[topic].result(timeout=15)


class Topic:
    """A topic of ours: produces keyed records `<prefix>-<i>` and keeps its end offsets."""

    def __init__(self, bootstrap: str, name: str, partitions: int) -> None:
        self.bootstrap, self.name, self.partitions = bootstrap, name, partitions
        self.ends = dict.fromkeys(range(partitions), 0)
        create_topic(bootstrap, name, partitions)

    def produce(self, prefix: str, n: int) -> dict[int, int]:
        failed: list[str] = []

        def delivered(err: KafkaError | None, msg: Any) -> None:
            if err is not None:
                failed.append(f"{msg.value()!r}: {err}")
            else:
                self.ends[msg.partition()] = max(self.ends[msg.partition()], msg.offset() + 1)

        p = CkProducer(confluent_conf(self.bootstrap, CK_ID, **{"linger.ms": 5}))
        confluent_send(p, self.name, prefix, range(n), delivered, headers=None)
        left = p.flush(20)
        assert left == 0, f"{left} records undelivered in 20 s"
        assert not failed, f"deliveries failed: {failed[:3]}"
        return dict(self.ends)


def kafka_python_options(bootstrap: str, client_id: str, group: str, **kw: Any) -> dict[str, Any]:
    """A consumer's options in `group` under kafka-python's names (aiokafka takes the same),
    with this module's group timing."""
    return kafka_python_consumer_options(
        bootstrap,
        client_id,
        group_id=group,
        session_timeout_ms=SESSION_TIMEOUT_MS,
        heartbeat_interval_ms=HEARTBEAT_MS,
        **kw,
    )


# --- members ----------------------------------------------------------------------------------


class Member(GroupMember):
    """One group member (see GroupMember) that also commits what it consumed in its `commit`
    mode ("sync", "async" or "auto"), and records every rebalance callback. Other threads
    ask it things through `call`, which runs a function in the member's thread between two
    polls (kafka-python and aiokafka consumers must not be used from two threads)."""

    CLIENT = ""
    # What a commit may be answered around a rebalance (Kafka answers the same): the
    # member commits again after its next poll.
    COMMIT_RACES: tuple[type[BaseException], ...] = ()
    STOP_S = 20.0

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        group: str,
        name: str,
        *,
        commit: str = "sync",
        instance_id: str | None = None,
        assignor: str | None = None,
    ) -> None:
        self.commit, self.instance_id, self.assignor = commit, instance_id, assignor
        self.client_id = f"kmock-acceptance-{self.CLIENT}-{name}"
        self.events: list[tuple[float, str, frozenset[int]]] = []  # (monotonic, kind, parts)
        self.commit_errors: list[str] = []
        self._consumed = 0  # polls that returned records
        self._acked = 0  # ... whose offsets a commit acknowledged (sync and async modes)
        self._async_pending = False
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]]] = queue.SimpleQueue()
        super().__init__(bootstrap, topic, group, name)

    # -- what each client implements besides GroupMember's; all run in the member's thread --

    @abstractmethod
    def _commit_sync(self) -> None: ...

    @abstractmethod
    def _commit_async(self, done: Callable[[BaseException | None], None]) -> None: ...

    @abstractmethod
    def _committed(self, partitions: Sequence[int]) -> dict[int, int | None]: ...

    def _generation(self) -> int | None:
        return None

    # -- for kafka-python and aiokafka, whose consumers take the same options and listeners --

    def _options(self) -> dict[str, Any]:
        return kafka_python_options(
            self.bootstrap,
            self.client_id,
            self.group,
            group_instance_id=self.instance_id,
            enable_auto_commit=self.commit == "auto",
            auto_commit_interval_ms=200,
        )

    def _listener(self, base: type[L]) -> L:
        """A rebalance listener (a subclass of the client's `base`) that records callbacks."""
        member = self

        class Listener(base):  # type: ignore[valid-type,misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                member._event("revoked", (tp.partition for tp in revoked))

            def on_partitions_assigned(self, assigned: Any) -> None:
                member._event("assigned", (tp.partition for tp in assigned))

        return Listener()

    # -- the member's thread --

    def _event(self, kind: str, partitions: Any) -> None:
        with self._lock:
            self.events.append((time.monotonic(), kind, frozenset(partitions)))

    def _main(self) -> None:
        try:
            super()._main()
        finally:
            while not self._calls.empty():
                _, fut = self._calls.get()
                fut.set_exception(AssertionError(f"member {self.name} is gone"))

    def _step(self) -> list[Rec]:
        self._serve_calls()
        records = super()._step()
        self._consumed += bool(records)
        self._maybe_commit()
        return records

    def _serve_calls(self) -> None:
        while not self._calls.empty():
            fn, fut = self._calls.get()
            try:
                fut.set_result(fn())
            except Exception as e:  # handed to the caller's thread
                fut.set_exception(e)

    def _maybe_commit(self) -> None:
        if self.commit == "auto" or self._consumed <= self._acked:
            return
        upto = self._consumed
        if self.commit == "sync":
            try:
                self._commit_sync()
            except self.COMMIT_RACES as e:
                self.commit_errors.append(repr(e))
            else:
                self._acked = upto
        elif not self._async_pending:
            self._async_pending = True

            def done(error: BaseException | None) -> None:
                self._async_pending = False
                if error is None:
                    self._acked = max(self._acked, upto)
                else:
                    self.commit_errors.append(repr(error))

            self._commit_async(done)

    # -- any thread --

    def call(self, fn: Callable[[], T], timeout: float = 20) -> T:
        self._raise()
        fut: Future[T] = Future()
        self._calls.put((fn, fut))
        return fut.result(timeout)

    def committed(self) -> dict[int, int | None]:
        """OffsetFetch through this member's consumer, for the partitions it holds."""
        return self.call(lambda: self._committed(sorted(self._assigned())))

    def generation(self) -> int | None:
        return self.call(self._generation)

    def rebalance_events(self) -> list[tuple[float, str, frozenset[int]]]:
        with self._lock:
            return list(self.events)

    def describe(self) -> str:
        with self._lock:
            events = [(kind, sorted(p)) for _, kind, p in self.events]
            return (
                f"member {self.name} ({self.CLIENT}, {self.commit} commits): assignment "
                f"{sorted(self._assignment or ())}, {len(self._records)} records, rebalance "
                f"callbacks {events}, commit errors {self.commit_errors[-3:]}, "
                f"error {self._error!r}"
            )


class KafkaPythonMember(Member):
    CLIENT = "kafka-python"
    COMMIT_RACES = (
        kafka.errors.CommitFailedError,
        kafka.errors.RebalanceInProgressError,
        kafka.errors.IllegalGenerationError,
        kafka.errors.UnknownMemberIdError,
    )

    def _open(self) -> None:
        self.c = kafka.KafkaConsumer(**self._options())
        self.c.subscribe([self.topic], listener=self._listener(kafka.ConsumerRebalanceListener))

    def _poll(self) -> list[Rec]:
        batch = self.c.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)
        return [kafka_python_rec(r) for rs in batch.values() for r in rs]

    def _commit_sync(self) -> None:
        self.c.commit()

    def _commit_async(self, done: Callable[[BaseException | None], None]) -> None:
        self.c.commit_async(
            callback=lambda offsets, r: done(r if isinstance(r, BaseException) else None)
        )

    def _committed(self, partitions: Sequence[int]) -> dict[int, int | None]:
        return {p: self.c.committed(kafka.TopicPartition(self.topic, p)) for p in partitions}

    def _generation(self) -> int | None:
        return int(self.c.group_metadata().generation_id)


class ConfluentMember(Member):
    CLIENT = "confluent-kafka"
    COMMIT_RACES = (KafkaException,)  # narrowed to the race codes in _commit_sync
    RACE_CODES = (
        KafkaError.REBALANCE_IN_PROGRESS,
        KafkaError.ILLEGAL_GENERATION,
        KafkaError.UNKNOWN_MEMBER_ID,
    )

    def _open(self) -> None:
        conf = confluent_conf(
            self.bootstrap,
            self.client_id,
            **{
                "group.id": self.group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": self.commit == "auto",
                "auto.commit.interval.ms": 200,
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": HEARTBEAT_MS,
                "fetch.wait.max.ms": 100,
                "on_commit": self._on_commit,
            },
        )
        if self.instance_id is not None:
            conf["group.instance.id"] = self.instance_id
        if self.assignor is not None:
            conf["partition.assignment.strategy"] = self.assignor
        self._async_done: Callable[[BaseException | None], None] | None = None
        self.c = CkConsumer(conf)
        # The callbacks do not assign: the client then does it itself, incrementally for
        # cooperative-sticky.
        self.c.subscribe(
            [self.topic],
            on_assign=lambda c, tps: self._event("assigned", (tp.partition for tp in tps)),
            on_revoke=lambda c, tps: self._event("revoked", (tp.partition for tp in tps)),
            on_lost=lambda c, tps: self._event("lost", (tp.partition for tp in tps)),
        )

    def _on_commit(self, err: KafkaError | None, partitions: Any) -> None:
        done, self._async_done = self._async_done, None
        if done is None:  # an auto commit
            return
        if err is None or err.code() == KafkaError._NO_OFFSET:  # nothing left to commit
            done(None)
        else:
            done(KafkaException(err))

    def _poll(self) -> list[Rec]:
        return confluent_consume(self.c, 100, 0.1)

    def _commit_sync(self) -> None:
        try:
            self.c.commit(asynchronous=False)
        except KafkaException as e:
            code = e.args[0].code()
            if code == KafkaError._NO_OFFSET:  # nothing left to commit
                return
            if code not in self.RACE_CODES:
                raise AssertionError(f"commit failed: {e}") from e
            raise

    def _commit_async(self, done: Callable[[BaseException | None], None]) -> None:
        self._async_done = done
        try:
            self.c.commit(asynchronous=True)
        except KafkaException as e:
            self._async_done = None
            done(e)

    def _committed(self, partitions: Sequence[int]) -> dict[int, int | None]:
        tps = self.c.committed([CkTopicPartition(self.topic, p) for p in partitions], timeout=10)
        return {tp.partition: tp.offset if tp.offset >= 0 else None for tp in tps}


class AiokafkaMember(Member):
    """The consumer lives on an event loop of the member's thread, which runs whenever the
    member polls (nearly always), so heartbeats and auto commits go on in the background.
    aiokafka has no commit_async: an "async" member starts commit() as a task and goes on
    polling."""

    CLIENT = "aiokafka"
    COMMIT_RACES = (
        aiokafka.errors.CommitFailedError,
        aiokafka.errors.RebalanceInProgressError,
        aiokafka.errors.IllegalGenerationError,
        aiokafka.errors.UnknownMemberIdError,
    )

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def _open(self) -> None:
        self.loop = asyncio.new_event_loop()

        async def start() -> aiokafka.AIOKafkaConsumer:
            c = aiokafka.AIOKafkaConsumer(**self._options())
            c.subscribe([self.topic], listener=self._listener(AioListener))
            await c.start()
            return c

        self.c = self._run(start())

    def _poll(self) -> list[Rec]:
        batch = self._run(self.c.getmany(timeout_ms=100))
        return [kafka_python_rec(r) for rs in batch.values() for r in rs]

    def _commit_sync(self) -> None:
        self._run(self.c.commit())

    def _commit_async(self, done: Callable[[BaseException | None], None]) -> None:
        task = self.loop.create_task(self.c.commit())
        task.add_done_callback(
            lambda t: done(t.exception() if not t.cancelled() else asyncio.CancelledError())
        )

    def _committed(self, partitions: Sequence[int]) -> dict[int, int | None]:
        return {
            p: self._run(self.c.committed(aiokafka.TopicPartition(self.topic, p)))
            for p in partitions
        }

    def _close(self) -> None:
        try:
            self._run(self.c.stop())
        finally:
            self.loop.close()


# --- admin clients, seen the same way ---------------------------------------------------------


@dataclass(frozen=True)
class MemberView:
    member_id: str
    instance_id: str | None
    partitions: frozenset[int]


@dataclass(frozen=True)
class GroupView:
    state: str  # Kafka's names: Stable, Empty, ...
    protocol_type: str
    protocol: str
    members: dict[str, MemberView]  # by client id


class Admin(ABC):
    """One client's admin API: list groups, describe a group, list its offsets, delete it."""

    @abstractmethod
    def groups(self) -> dict[str, str]:
        """group id -> protocol type"""
        ...

    @abstractmethod
    def describe(self, group: str) -> GroupView: ...

    @abstractmethod
    def offsets(self, group: str) -> dict[tuple[str, int], int]: ...

    @abstractmethod
    def delete(self, group: str) -> int:
        """The error code DeleteGroups answered for the group."""
        ...

    def close(self) -> None:  # noqa: B027 (a default: confluent's AdminClient has no close)
        """Release the client; nothing to do unless the client has something to close."""


class KafkaPythonAdmin(Admin):
    def __init__(self, bootstrap: str) -> None:
        self.a = kafka.KafkaAdminClient(
            bootstrap_servers=bootstrap,
            client_id="kmock-acceptance-admin",
            request_timeout_ms=REQUEST_TIMEOUT_MS,
        )

    def groups(self) -> dict[str, str]:
        return {g["group_id"]: g["protocol_type"] for g in self.a.list_groups()}

    def describe(self, group: str) -> GroupView:
        d = self.a.describe_groups([group])[group]
        assert d["error"] is None, d
        members = {}
        for m in d["members"]:
            assignment = m["member_assignment"] or {"assigned_partitions": []}
            parts = frozenset(p for t in assignment["assigned_partitions"] for p in t["partitions"])
            members[m["client_id"]] = MemberView(m["member_id"], m["group_instance_id"], parts)
        return GroupView(d["group_state"], d["protocol_type"], d["protocol_data"], members)

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        got = self.a.list_group_offsets({group: None}).get(group, {})
        return {(tp.topic, tp.partition): om.offset for tp, om in got.items()}

    def delete(self, group: str) -> int:
        result = self.a.delete_groups([group])[group]
        return 0 if result == "OK" else int(getattr(kafka.errors, result).errno)

    def close(self) -> None:
        self.a.close()


# confluent_kafka.ConsumerGroupState names -> Kafka's.
_CK_STATES = {
    "STABLE": "Stable",
    "EMPTY": "Empty",
    "PREPARING_REBALANCING": "PreparingRebalance",
    "COMPLETING_REBALANCING": "CompletingRebalance",
    "DEAD": "Dead",
}


class ConfluentAdmin(Admin):
    def __init__(self, bootstrap: str) -> None:
        self.a = AdminClient(confluent_conf(bootstrap, CK_ID))

    def groups(self) -> dict[str, str]:
        listed = self.a.list_consumer_groups(request_timeout=10).result(timeout=15)
        assert not listed.errors, listed.errors
        return {g.group_id: "" if g.is_simple_consumer_group else "consumer" for g in listed.valid}

    def describe(self, group: str) -> GroupView:
        d = self.a.describe_consumer_groups([group], request_timeout=10)[group].result(15)
        members = {
            m.client_id: MemberView(
                m.member_id,
                m.group_instance_id,
                frozenset(tp.partition for tp in m.assignment.topic_partitions),
            )
            for m in d.members
        }
        protocol_type = "" if d.is_simple_consumer_group else "consumer"
        return GroupView(_CK_STATES[d.state.name], protocol_type, d.partition_assignor, members)

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        got = self.a.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group)], request_timeout=10
        )[group].result(15)
        return {(tp.topic, tp.partition): tp.offset for tp in got.topic_partitions or ()}

    def delete(self, group: str) -> int:
        try:
            self.a.delete_consumer_groups([group], request_timeout=10)[group].result(15)
        except KafkaException as e:
            return int(e.args[0].code())
        return 0


class AiokafkaAdmin(Admin):
    """AIOKafkaAdminClient on a loop of its own. It has no delete_consumer_groups: DeleteGroups
    goes through its request path with aiokafka's own DeleteGroupsRequest."""

    def __init__(self, bootstrap: str) -> None:
        self.loop = asyncio.new_event_loop()

        async def start() -> AIOKafkaAdminClient:
            a = AIOKafkaAdminClient(
                bootstrap_servers=bootstrap,
                client_id="kmock-acceptance-admin",
                request_timeout_ms=REQUEST_TIMEOUT_MS,
            )
            await a.start()
            return a

        self.a = self._run(start())

    def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(asyncio.wait_for(coro, 20))

    def groups(self) -> dict[str, str]:
        return {g[0]: g[1] for g in self._run(self.a.list_consumer_groups())}

    def describe(self, group: str) -> GroupView:
        (response,) = self._run(self.a.describe_consumer_groups([group]))
        (g,) = response.to_object()["groups"]
        assert g["error_code"] == 0, g
        members = {}
        for m in g["members"]:
            parts: frozenset[int] = frozenset()
            if m["member_assignment"]:
                decoded = ConsumerProtocolMemberAssignment.decode(m["member_assignment"])
                parts = frozenset(p for _, ps in decoded.assignment for p in ps)
            members[m["client_id"]] = MemberView(m["member_id"], None, parts)
        return GroupView(g["state"], g["protocol_type"], g["protocol"], members)

    def offsets(self, group: str) -> dict[tuple[str, int], int]:
        got = self._run(self.a.list_consumer_group_offsets(group))
        return {(tp.topic, tp.partition): om.offset for tp, om in got.items()}

    def delete(self, group: str) -> int:
        async def delete() -> int:
            node = await self.a.find_coordinator(group)
            response = await self.a._send_request(DeleteGroupsRequest([group]), node)
            ((group_id, error_code),) = response.results
            assert group_id == group
            return int(error_code)

        return self._run(delete())

    def close(self) -> None:
        try:
            self._run(self.a.close())
        finally:
            self.loop.close()


class Members:
    """The members a scenario started: `state()` for its messages, and `running(admin)`
    around the scenario to clean up after it."""

    def __init__(self) -> None:
        self._started: list[Member] = []

    def __iter__(self) -> Iterator[Member]:
        return iter(list(self._started))

    def add(self, member: Member) -> Member:
        self._started.append(member)
        return member

    def state(self) -> str:
        return "\n".join(m.describe() for m in self._started)

    @contextmanager
    def running(self, admin: Admin) -> Iterator[None]:
        """When the block ends, stop every member and close `admin`; an assertion raised in
        the block is told every member's state."""
        try:
            yield
        except AssertionError as e:
            raise AssertionError(f"{e}\n{self.state()}") from None
        finally:
            for m in self._started:
                with suppress(AssertionError):
                    m.stop()
            admin.close()


# --- scenario 1: three members, commits, admin, one leaves ------------------------------------


def split(members: Sequence[Member], each: int) -> bool:
    """Every member holds `each` partitions, and together they hold all of them once."""
    sets = [m.assignment() for m in members]
    if any(s is None or len(s) != each for s in sets):
        return False
    return len(frozenset().union(*sets)) == each * len(members) == PARTITIONS  # type: ignore[arg-type]


def contiguous_ranges(members: Sequence[Member]) -> None:
    """The range assignor gives each member a run of consecutive partitions."""
    for m in members:
        parts = sorted(m.assignment() or ())
        assert parts == list(range(parts[0], parts[0] + len(parts))), (
            f"member {m.name} holds {parts}: not a range"
        )


def consumed(members: Sequence[Member], prefix: str, n: int) -> bool:
    values = {r.value for m in members for r in m.records()}
    return values >= {value(prefix, i) for i in range(n)}


def group_lifecycle(
    fresh_broker: Any,
    member: type[Member],
    make_admin: Callable[[str], Admin],
    *,
    protocol: str,
    assignor: str | None = None,
    after_leave: Callable[[Member, Member, dict[str, Any]], None] | None = None,
) -> None:
    bootstrap = fresh_broker(**BROKER).bootstrap_servers
    admin = make_admin(bootstrap)
    tag = f"acc-{member.CLIENT}"
    topic = Topic(bootstrap, unique(tag), PARTITIONS)
    group = unique(tag)
    members = Members()
    state = members.state

    def start(name: str, commit: str) -> Member:
        return members.add(
            member(bootstrap, topic.name, group, name, commit=commit, assignor=assignor)
        )

    def commits_visible(ms: Sequence[Member], ends: dict[int, int]) -> None:
        for m in ms:
            wait_until(
                lambda m=m: (got := m.committed()) == {p: ends[p] for p in got} and bool(got),
                WAIT_S,
                f"member {m.name}'s {m.commit} commits (up to {ends}) to be visible through "
                "OffsetFetch",
                state,
            )

    with members.running(admin):
        a, b, c = start("a", "sync"), start("b", "async"), start("c", "auto")
        wait_until(
            lambda: split([a, b, c], 2), WAIT_S, "three members with two partitions each", state
        )
        if protocol == "range":
            contiguous_ranges([a, b, c])
        # Produced only now, so that each partition is consumed and committed by the one
        # member that holds it, in that member's way.
        ends = topic.produce("g1", 600)
        wait_until(
            lambda: consumed([a, b, c], "g1", 600), WAIT_S, "the group to consume 600", state
        )
        check_records([r for m in members for r in m.records()], "g1", 600, exactly_once=False)
        commits_visible([a, b, c], ends)

        assert admin.groups().get(group) == "consumer", f"{group} not listed as a consumer group"
        view = admin.describe(group)
        assert (view.state, view.protocol_type, view.protocol) == ("Stable", "consumer", protocol)
        assert {cid: mv.partitions for cid, mv in view.members.items()} == {
            m.client_id: m.assignment() for m in (a, b, c)
        }, view
        want = {(topic.name, p): end for p, end in ends.items()}
        assert admin.offsets(group) == want
        assert admin.delete(group) == ErrorCode.NON_EMPTY_GROUP, "a group with members was deleted"

        before = {
            "a": a.assignment(),
            "b": b.assignment(),
            "c": c.assignment(),
            "a_events": len(a.rebalance_events()),
            "b_events": len(b.rebalance_events()),
        }
        c.stop()
        assert c.closing_at is not None
        wait_until(
            lambda: split([a, b], 3),
            max(0.0, c.closing_at + SESSION_S - time.monotonic()),
            f"the other two to take all six within the session timeout ({SESSION_S:g} s) of "
            "the third member's close",
            state,
        )
        if after_leave is not None:
            after_leave(a, b, before)

        ends = topic.produce("g2", 60)
        wait_until(lambda: consumed([a, b], "g2", 60), WAIT_S, "the two to consume 60 more", state)
        commits_visible([a, b], ends)
        assert admin.offsets(group) == {(topic.name, p): end for p, end in ends.items()}
        view = admin.describe(group)
        assert view.state == "Stable", view
        assert {cid: mv.partitions for cid, mv in view.members.items()} == {
            m.client_id: m.assignment() for m in (a, b)
        }, view

        a.stop()
        b.stop()
        view = admin.describe(group)
        assert (view.state, view.members) == ("Empty", {}), view
        assert admin.delete(group) == 0, "the empty group was not deleted"
        assert group not in admin.groups()
        assert admin.offsets(group) == {}, "the deleted group still has offsets"


def range_eager(a: Member, b: Member, before: dict[str, Any]) -> None:
    """Eager protocol: both remaining members gave up everything, then got new ranges."""
    contiguous_ranges([a, b])
    for m in (a, b):
        later = m.rebalance_events()[before[f"{m.name}_events"] :]
        revoked = [p for _, kind, p in later if kind == "revoked"]
        assert before[m.name] in revoked, (
            f"member {m.name} held {sorted(before[m.name])} and never had it revoked: {later}"
        )


def cooperative_incremental(a: Member, b: Member, before: dict[str, Any]) -> None:
    """Incremental: the remaining members keep what they held, revoke nothing, and their
    assign callbacks hand them exactly the partitions the third member left behind."""
    added: set[int] = set()
    for m in (a, b):
        later = m.rebalance_events()[before[f"{m.name}_events"] :]
        taken = [(kind, sorted(p)) for _, kind, p in later if kind != "assigned" and p]
        assert not taken, f"member {m.name} had partitions taken away: {taken}"
        assert before[m.name] <= (m.assignment() or frozenset()), (
            f"member {m.name} lost partitions it held"
        )
        added |= {p for _, kind, ps in later if kind == "assigned" for p in ps}
    assert added == before["c"], (
        f"incremental assignments {sorted(added)}, expected the leaver's {sorted(before['c'])}"
    )


@deadline(120)
def test_kafka_python_group_assignment_commits_admin_and_rebalance(fresh_broker):
    group_lifecycle(
        fresh_broker, KafkaPythonMember, KafkaPythonAdmin, protocol="range", after_leave=range_eager
    )


@pytest.mark.parametrize(
    ("assignor", "after_leave"),
    [("range", range_eager), ("cooperative-sticky", cooperative_incremental)],
    ids=["range", "cooperative-sticky-incremental"],
)
@deadline(120)
def test_confluent_group_assignment_commits_admin_and_rebalance(
    fresh_broker, assignor, after_leave
):
    group_lifecycle(
        fresh_broker,
        ConfluentMember,
        ConfluentAdmin,
        protocol=assignor,
        assignor=assignor,
        after_leave=after_leave,
    )


@deadline(120)
def test_aiokafka_group_assignment_commits_admin_and_rebalance(fresh_broker):
    group_lifecycle(fresh_broker, AiokafkaMember, AiokafkaAdmin, protocol="roundrobin")


# --- scenario 2: committed offsets survive a restart and a crash -------------------------------

# One consumer session: join the group, read the committed offsets (OffsetFetch), consume
# exactly `n` records, commit the next offsets of the partitions it read from (acknowledged
# when the call returns), leave. Returns (committed before, records, committed offsets).
Session = Callable[[str, str, str, int], tuple[dict[int, int | None], list[Rec], dict[int, int]]]


def kafka_python_session(bootstrap, topic, group, n):
    c = kafka.KafkaConsumer(
        **kafka_python_options(bootstrap, "kmock-acceptance-kafka-python", group)
    )
    with closing(c):
        committed = {p: c.committed(kafka.TopicPartition(topic, p)) for p in range(3)}
        c.subscribe([topic])
        got: list[Rec] = []

        def more() -> bool:
            batch = c.poll(timeout_ms=KAFKA_PYTHON_POLL_MS, max_records=n - len(got))
            got.extend(kafka_python_rec(r) for rs in batch.values() for r in rs)
            return len(got) >= n

        wait_until(more, WAIT_S, f"{n} records (got {len(got)})")
        acked = ends_of(got)
        c.commit(
            {
                kafka.TopicPartition(topic, p): kafka.OffsetAndMetadata(o, "", -1)
                for p, o in acked.items()
            }
        )
    return committed, got, acked


def confluent_session(bootstrap, topic, group, n):
    c = CkConsumer(
        confluent_conf(
            bootstrap,
            CK_ID,
            **{
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": SESSION_TIMEOUT_MS,
                "heartbeat.interval.ms": HEARTBEAT_MS,
                "fetch.wait.max.ms": 100,
            },
        )
    )
    try:
        tps = c.committed([CkTopicPartition(topic, p) for p in range(3)], timeout=10)
        committed = {tp.partition: tp.offset if tp.offset >= 0 else None for tp in tps}
        c.subscribe([topic])
        got: list[Rec] = []

        def more() -> bool:
            got.extend(confluent_consume(c, n - len(got), 0.1))
            return len(got) >= n

        wait_until(more, WAIT_S, f"{n} records (got {len(got)})")
        acked = ends_of(got)
        c.commit(
            offsets=[CkTopicPartition(topic, p, o) for p, o in acked.items()], asynchronous=False
        )
    finally:
        c.close()
    return committed, got, acked


def aiokafka_session(bootstrap, topic, group, n):
    async def session():
        c = aiokafka.AIOKafkaConsumer(
            topic, **kafka_python_options(bootstrap, "kmock-acceptance-aiokafka", group)
        )
        await c.start()
        try:
            committed = {p: await c.committed(aiokafka.TopicPartition(topic, p)) for p in range(3)}
            got: list[Rec] = []
            while len(got) < n:
                batch = await c.getmany(timeout_ms=100, max_records=n - len(got))
                got.extend(kafka_python_rec(r) for rs in batch.values() for r in rs)
            acked = ends_of(got)
            await c.commit({aiokafka.TopicPartition(topic, p): o for p, o in acked.items()})
        finally:
            await c.stop()
        return committed, got, acked

    return asyncio.run(asyncio.wait_for(session(), WAIT_S))


def commits_survive_restart_and_crash(fresh_broker: Any, session: Session) -> None:
    b = fresh_broker(**BROKER)
    topic = Topic(b.bootstrap_servers, unique("acc-resume"), 3)
    group = unique("acc-resume")
    topic.produce("r", 300)
    acked: dict[int, int] = {}
    everything: list[Rec] = []

    def resume(n: int, after: str) -> None:
        committed, got, newly = session(b.bootstrap_servers, topic.name, group, n)
        assert committed == {p: acked.get(p) for p in range(3)}, (
            f"committed offsets after {after}: {committed}, last acknowledged {acked}"
        )
        firsts: dict[int, int] = {}
        for r in got:
            firsts.setdefault(r.partition, r.offset)
        assert firsts == {p: acked.get(p, 0) for p in firsts}, (
            f"after {after} the consumer started at {firsts}, "
            f"not right after the last acknowledged commit {acked}"
        )
        everything.extend(got)
        acked.update(newly)

    resume(100, "the first session")
    b.restart()
    resume(100, "a graceful restart")
    b.kill()
    b.start()
    resume(100, "a crash")
    check_records(everything, "r", 300)


@deadline(90)
def test_kafka_python_resumes_after_last_commit_across_restart_and_crash(fresh_broker):
    commits_survive_restart_and_crash(fresh_broker, kafka_python_session)


@deadline(90)
def test_confluent_resumes_after_last_commit_across_restart_and_crash(fresh_broker):
    commits_survive_restart_and_crash(fresh_broker, confluent_session)


@deadline(90)
def test_aiokafka_resumes_after_last_commit_across_restart_and_crash(fresh_broker):
    commits_survive_restart_and_crash(fresh_broker, aiokafka_session)


# --- scenario 3: static membership ------------------------------------------------------------


def static_member_rejoins(
    fresh_broker: Any, member: type[Member], make_admin: Callable[[str], Admin], *, leader: str
) -> None:
    """`o` (dynamic) and `s` (static) share the partitions; `leader` joins first, so it leads
    the group. `s` closes (a static member sends no LeaveGroup) and a new consumer with the
    same group.instance.id takes its place within the session timeout: it gets the same
    partitions, and for a session timeout after the old one went away `o` sees no
    rebalance."""
    b = fresh_broker(**BROKER)
    topic = Topic(b.bootstrap_servers, unique("acc-static"), PARTITIONS)
    group = unique("acc-static")
    topic.produce("s0", 60)
    admin = make_admin(b.bootstrap_servers)
    members = Members()
    state = members.state

    def start(name: str, instance_id: str | None) -> Member:
        return members.add(
            member(b.bootstrap_servers, topic.name, group, name, instance_id=instance_id)
        )

    with members.running(admin):
        first = start(leader, "static-s" if leader == "s" else None)
        wait_until(
            lambda: first.assignment() == frozenset(range(PARTITIONS)),
            WAIT_S,
            "the first member to hold every partition",
            state,
        )
        second = "o" if leader == "s" else "s"
        start(second, "static-s" if second == "s" else None)
        o, s = (m for name in ("o", "s") for m in members if m.name == name)
        wait_until(
            lambda: split([o, s], 3), WAIT_S, "two members with three partitions each", state
        )
        wait_until(lambda: consumed(members, "s0", 60), WAIT_S, "the group to consume 60", state)

        view = admin.describe(group)
        assert view.state == "Stable", view
        assert view.members[s.client_id].instance_id == "static-s", view
        o_id, s_id = view.members[o.client_id].member_id, view.members[s.client_id].member_id
        o_events, o_parts, s_parts = o.rebalance_events(), o.assignment(), s.assignment()
        o_generation = o.generation()

        s.stop()
        assert s.closed_at is not None
        view = admin.describe(group)
        assert view.state == "Stable", f"a static member's close changed the group: {view}"
        assert set(view.members) == {o.client_id, s.client_id}, (
            f"a static member's close changed the group: {view}"
        )

        s2 = start("s", "static-s")
        wait_until(
            lambda: s2.assignment() == s_parts,
            max(0.0, s.closed_at + SESSION_S - time.monotonic()),
            f"the restarted static member to get {sorted(s_parts or ())} back within the "
            f"session timeout ({SESSION_S:g} s)",
            state,
        )
        # Hold on for a session timeout (and two heartbeats) past the old instance's close:
        # the group keeps consuming, and nothing expires or rebalances.
        until = s.closed_at + SESSION_S + 2 * HEARTBEAT_MS / 1000
        rounds = 0
        while time.monotonic() < until or rounds < 2:
            prefix = f"s{rounds + 1}"
            topic.produce(prefix, 30)
            wait_until(
                lambda prefix=prefix: consumed([o, s2], prefix, 30),
                WAIT_S,
                f"round {rounds + 1} of records to be consumed",
                state,
            )
            rounds += 1

        assert o.rebalance_events() == o_events, "the other member went through a rebalance"
        assert o.assignment() == o_parts
        assert s2.assignment() == s_parts
        assert o.generation() == o_generation, "the group's generation changed"
        # (kafka-python reports an empty revocation before its first assignment.)
        assert [kind for _, kind, p in s2.rebalance_events() if p] == ["assigned"], (
            "the restarted static member went through more than one assignment"
        )
        view = admin.describe(group)
        assert view.state == "Stable", view
        assert set(view.members) == {o.client_id, s2.client_id}, view
        assert view.members[o.client_id].member_id == o_id, "the other member's id changed"
        assert view.members[s2.client_id].member_id != s_id, (
            "the restarted static member kept the old instance's member id"
        )
        assert view.members[s2.client_id].partitions == s_parts, view


@pytest.mark.parametrize("leader", ["o", "s"], ids=["static-follower", "static-leader"])
@deadline(90)
def test_kafka_python_static_member_rejoins_without_rebalance(fresh_broker, leader):
    static_member_rejoins(fresh_broker, KafkaPythonMember, KafkaPythonAdmin, leader=leader)


@pytest.mark.parametrize("leader", ["o", "s"], ids=["static-follower", "static-leader"])
@deadline(90)
def test_confluent_static_member_rejoins_without_rebalance(fresh_broker, leader):
    static_member_rejoins(fresh_broker, ConfluentMember, ConfluentAdmin, leader=leader)
