"""CoordinatorRuntime: drives the pure group coordinator from the trio world.

The coordinator (coordinator/) is a synchronous state machine that returns
`Outcome(replies, records)` and never waits. The group handlers call this runtime's typed
methods, one per API (`join_group`, `sync_group`, ..., `list_groups`). This runtime:

  * issues an opaque token per request and parks the request until a reply for its token
    appears in some outcome (JoinGroup and SyncGroup wait for other members);
  * appends `outcome.records` to __consumer_offsets (the partition of each record's group);
    when they include offset commits, in the strict durability mode, waits until an fsync
    covers them (group commit: many commits share one fsync; by default, as in Kafka, a
    commit is answered once written, broker.durability); then calls `on_appended` — in log
    order for commits, whatever order the fsync waits finish in — and only then delivers
    the replies. A failed write
    calls `on_append_failed` instead. Group metadata alone (a SyncGroup's assignment) is
    answered once written, without waiting for an fsync: Kafka does not fsync it either, a
    process crash cannot lose it (it is in the page cache), and losing it to an OS crash
    costs only a rebalance. Making every SyncGroup wait for the disk made rebalances slow
    and, on a busy disk, slower than some clients' poll loops tolerate;
  * runs the timer task: sleep until `next_deadline_ms()` (or until a call may have moved
    it), then `expire(now_ms, wall_ms)`;
  * replays __consumer_offsets at start, sets `replayed` when done (the server sets
    `broker.ready` once the transaction runtime has replayed too). Until then group
    requests meet one gate: COORDINATOR_LOAD_IN_PROGRESS, or the API's own answer in
    WHILE_LOADING. Transactional offset commits replay as Kafka's do: a transactional
    batch's offsets wait for their producer's marker, applied by COMMIT, dropped by ABORT,
    and still pending when the log has no marker for them yet;
  * writes TxnOffsetCommit's records in a transactional batch of the producer, as Kafka's
    coordinator does, so that the transaction's marker in the same partition decides them;
  * logs and counts what the outcomes report: rebalances (`generations`) and groups that
    died (`dead_groups`).

Coordinator methods are synchronous, so under trio they run without interruption: no locks.
"""

from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import math
import time
from collections.abc import Callable, Coroutine
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import trio

from broker.config import consumer_group_config
from broker.coordinator_batch import append_one, append_records
from broker.offsets_scan import scan_partition
from coordinator.config import CoordinatorConfig
from coordinator.consumer import TopicImage
from coordinator.coordinator import CONSUMER_GROUP_TYPE, GroupCoordinator
from coordinator.outcome import AnyRecord, Outcome
from coordinator.outcome import RequestContext as CoordinatorContext
from protocol.errors import ErrorCode, KafkaError
from protocol.kept import keep
from protocol.messages import (
    consumer_group_describe,
    consumer_group_heartbeat,
    delete_groups,
    describe_groups,
    heartbeat,
    join_group,
    leave_group,
    list_groups,
    offset_commit,
    offset_delete,
    offset_fetch,
    sync_group,
    txn_offset_commit,
)
from protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse
from protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse
from protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse
from protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse
from protocol.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from protocol.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse
from protocol.schema import DecodeError
from storage.layout import OFFSETS_TOPIC

if TYPE_CHECKING:
    from broker.config import Config
    from broker.controls.clock import Clock
    from broker.durability import Durability
    from broker.metrics import Metrics
    from broker.topics import Topic, TopicRegistry
    from protocol.records import BatchHeader
    from storage.log import Log

log = logging.getLogger("broker.runtime")

# Coordinator contexts kept, one per (version, client id, client host) (`context`).
_CONTEXTS_KEPT = 1024

_Req = TypeVar("_Req")
_Resp = TypeVar("_Resp")

# What a group API answers while __consumer_offsets is loading, where that is not
# COORDINATOR_LOAD_IN_PROGRESS: Heartbeat NONE, as Kafka 4.x's GroupCoordinatorService.heartbeat
# ("the group is still loading, so blindly respond"). SyncGroup gets
# COORDINATOR_LOAD_IN_PROGRESS in 4.x, like every other group API (3.x answered
# REBALANCE_IN_PROGRESS).
WHILE_LOADING: dict[type, ErrorCode] = {
    HeartbeatRequest: ErrorCode.NONE,
}


class Broker(Protocol):
    """What the runtime uses of broker.broker.Broker (a Protocol, so that the broker module,
    which owns the runtime, is not imported back)."""

    config: Config
    topics: TopicRegistry
    metrics: Metrics
    durability: Durability
    ready: trio.Event
    clock: Clock  # every timer waits on it (broker.controls.clock)

    def now_ms(self) -> int: ...
    def wall_ms(self) -> int: ...


class Caller(Protocol):
    """What the runtime reads of a request's context (broker.connection.RequestContext)."""

    @property
    def api_version(self) -> int: ...
    @property
    def client_id(self) -> str: ...
    @property
    def client_host(self) -> str: ...


class _Parked:
    """A request waiting for the reply to its token (most replies come in the call that
    issued the token, which then needs none: `_call`)."""

    __slots__ = ("answered", "event", "response", "unloaded")

    def __init__(self) -> None:
        self.answered = False
        self.event: trio.Event | None = None
        self.response: object = None
        # JoinGroup and SyncGroup with several brokers: (__consumer_offsets partition, the
        # broker the request came to, its NOT_COORDINATOR answer), for `unload`.
        self.unloaded: tuple[int, int, Callable[[], object]] | None = None


class _Appended:
    __slots__ = ("done", "outcome", "partitions")

    def __init__(self, outcome: Outcome, partitions: set[int]) -> None:
        self.outcome = outcome
        self.partitions = partitions
        self.done = False


class _Appending:
    """Records in the log whose outcome is not applied yet (`CoordinatorRuntime._finish`)."""

    __slots__ = ("durable", "entry", "written")

    def __init__(self, entry: _Appended, durable: bool, written: list[tuple[Log, int]]) -> None:
        self.entry = entry
        self.durable = durable
        self.written = written


class CoordinatorRuntime:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.coordinator = GroupCoordinator(
            CoordinatorConfig.from_settings(broker.config.__getitem__),
            consumer_group_config(broker.config),
        )
        # A classic member joining a consumer group subscribes by topic name (migration).
        self.coordinator.migration.topic_images = self.topics_metadata
        self.loaded = False
        self.replayed = trio.Event()
        self.replayed_records = 0
        self.replay_errors = 0
        self._tokens = itertools.count(1)
        self._parked: dict[int, _Parked] = {}
        # The token of the call whose verb and append run now, and its reply once
        # delivered (the token back to 0): `_call`.
        self._now_token = 0
        self._now_response: object = None
        self._wake = trio.Event()
        self._nursery: trio.Nursery | None = None
        # Outcomes appended (durably) but not yet applied, per __consumer_offsets partition
        # in log order: `on_appended` must follow the log, whatever order the fsyncs finish
        # in, but only within a partition; commits of unrelated groups do not wait.
        self._pending: dict[int, collections.deque[_Appended]] = {}
        # Set (and dropped) whenever commits took effect or failed: OffsetFetch with
        # require_stable waits on it (made by the first such fetch to wait).
        self._commits_settled: trio.Event | None = None
        self._contexts: dict[tuple[int, str, str], CoordinatorContext] = {}  # `context`
        # Transactional offset commits replay found without a marker (log, producer id, key,
        # value, batch): pending again once the groups are built.
        self._open_txn_offsets: list[tuple[Log, int, bytes, bytes | None, BatchHeader]] = []

    # --- startup ---------------------------------------------------------------------------

    def offsets_topic(self) -> Topic:
        """__consumer_offsets, created on first need (a group FindCoordinator or the first
        record to write), as Kafka creates it: a broker whose clients never use groups
        does not pay for its 50 partitions at start."""
        return self.broker.topics.offsets_topic(now_wall_ms=self.broker.wall_ms())

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            started = time.monotonic()
            topic = self.broker.topics.get(OFFSETS_TOPIC)
            for p in topic.partitions if topic is not None else ():
                await self._replay_partition(p.log)
            self.coordinator.finish_load(self.broker.now_ms())
            for plog, producer_id, key, value, header in self._open_txn_offsets:
                try:
                    self.coordinator.replay_txn_offset(producer_id, key, value)
                except DecodeError as e:
                    self._skip(plog, header, e)
            self._open_txn_offsets.clear()
            self.loaded = True
            self.replayed.set()
            log.info(
                "replayed %d __consumer_offsets records (%d groups) in %.0f ms",
                self.replayed_records,
                len(self.coordinator.group_ids()),
                (time.monotonic() - started) * 1000,
            )
            await self._timer()

    async def _replay_partition(self, plog: Log) -> None:
        """Replay one partition from its scan (broker.offsets_scan): only each key's last
        record is decoded, equivalent to replaying everything and several times faster on
        an uncompacted log."""
        latest, open_txns, replayed = await scan_partition(plog, self._skip)
        self.replayed_records += replayed
        for i, (key, (value, record_offset, header)) in enumerate(latest.items()):
            try:
                self.coordinator.replay(key, value)
            except DecodeError as e:
                self._skip(plog, header, e, record_offset)
            if i % 4096 == 4095:
                await trio.lowlevel.checkpoint()
        self._open_txn_offsets.extend(
            (plog, producer_id, key, value, header)
            for producer_id, records in open_txns.items()
            for key, value, _, header in records
        )

    def _skip(
        self, plog: Log, header: BatchHeader, error: Exception, offset: int | None = None
    ) -> None:
        """A damaged __consumer_offsets batch or record: Kafka fails the load of that
        partition; kmock skips what it cannot read, says so, and loads the rest, so one
        flipped bit costs the offsets it held, not every group on the partition."""
        where = (
            f"offset {offset}"
            if offset is not None
            else f"batch {header.base_offset}-{header.last_offset}"
        )
        self.replay_errors += 1
        log.error("skipped unreadable %s of %s during replay: %s", where, plog.path.name, error)

    # --- the group APIs --------------------------------------------------------------------
    #
    # One typed method per API, each named after it. Every one passes the one gate
    # (`_while_loading`) first, then runs its coordinator verb.

    async def join_group(self, ctx: Caller, request: JoinGroupRequest) -> JoinGroupResponse:
        return await self._call(
            ctx, request, join_group.error_response, self.coordinator.join, unloads=True
        )

    async def sync_group(self, ctx: Caller, request: SyncGroupRequest) -> SyncGroupResponse:
        return await self._call(
            ctx, request, sync_group.error_response, self.coordinator.sync, unloads=True
        )

    def _awaiting_join(self, group_id: str, token: int) -> str | None:
        """The member id of the classic member whose JoinGroup waits with `token`."""
        group = self.coordinator.group(group_id)
        for member in getattr(group, "members", {}).values():
            if member.awaiting_join is not None and member.awaiting_join.token == token:
                return str(member.member_id)
        return None

    def unload(self, partition: int, leader: int) -> None:
        """__consumer_offsets partition `partition` is led by broker `leader` now (-1: by
        none): every JoinGroup and SyncGroup parked at another broker for a group of that
        partition is answered NOT_COORDINATOR at once, so that its client finds the new
        coordinator and sends it again (Kafka's GroupCoordinatorShard.onUnloaded fails the
        pending joins and syncs of the groups it unloads). The group itself stays in the one
        coordinator of the process: the member's next JoinGroup takes its place again."""
        for slot in self._parked.values():
            if slot.unloaded is None or slot.answered:
                continue
            index, node, answer = slot.unloaded
            if index == partition and node != leader:
                slot.response = answer()
                slot.answered = True
                if slot.event is not None:
                    slot.event.set()

    async def heartbeat(self, ctx: Caller, request: HeartbeatRequest) -> HeartbeatResponse:
        # A classic member inside a consumer group can be given a join deadline by its
        # heartbeat (Kafka's classicGroupHeartbeatToConsumerGroup asks it to rejoin), which
        # may come before every deadline the timer knows; in a classic group a heartbeat
        # only restarts the member's session.
        classic = self.coordinator.group_type(request.group_id) != CONSUMER_GROUP_TYPE
        return await self._call(
            ctx,
            request,
            heartbeat.error_response,
            self.coordinator.heartbeat,
            postpones_only=classic,
        )

    async def leave_group(self, ctx: Caller, request: LeaveGroupRequest) -> LeaveGroupResponse:
        return await self._call(ctx, request, leave_group.error_response, self.coordinator.leave)

    def offset_commit(
        self, ctx: Caller, request: OffsetCommitRequest
    ) -> Coroutine[object, None, OffsetCommitResponse]:
        # `_call`'s coroutine itself, not one that awaits it: a frame less per commit.
        return self._call(
            ctx,
            request,
            offset_commit.error_response,
            self.coordinator.commit_offsets,
            postpones_only=True,
            wall_ms=self.broker.clock.wall_ms(),
        )

    async def txn_offset_commit(
        self, ctx: Caller, request: TxnOffsetCommitRequest
    ) -> TxnOffsetCommitResponse:
        return await self._call(
            ctx,
            request,
            txn_offset_commit.error_response,
            self.coordinator.txn_commit_offsets,
            postpones_only=True,
            producer=(request.producer_id, request.producer_epoch),
            wall_ms=self.broker.wall_ms(),
        )

    async def offset_delete(
        self, ctx: Caller, request: OffsetDeleteRequest
    ) -> OffsetDeleteResponse:
        return await self._call(
            ctx, request, offset_delete.error_response, self.coordinator.delete_offsets
        )

    async def delete_groups(
        self, ctx: Caller, request: DeleteGroupsRequest
    ) -> DeleteGroupsResponse:
        return await self._call(
            ctx, request, delete_groups.error_response, self.coordinator.delete_groups
        )

    async def topics_deleted(self, topics: set[str]) -> None:
        """Write the tombstones of the deleted topics' offsets (DeleteTopics calls this once
        the topics are gone). Before the load ends it waits for it: the replayed offsets
        must be there to be deleted."""
        await self.broker.ready.wait()
        outcome = self.coordinator.on_topics_deleted(topics, self.broker.now_ms())
        self._wake.set()
        await self.complete(outcome)

    async def consumer_group_heartbeat(
        self, ctx: Caller, request: ConsumerGroupHeartbeatRequest
    ) -> ConsumerGroupHeartbeatResponse:
        wall_ms = self.broker.wall_ms()
        topics = self.topics_metadata()

        def heartbeat(
            c: CoordinatorContext, r: ConsumerGroupHeartbeatRequest, token: int, now: int
        ) -> Outcome:
            return self.coordinator.consumer_group_heartbeat(c, r, token, now, wall_ms, topics)

        try:
            return await self._call(
                ctx, request, consumer_group_heartbeat.error_response, heartbeat
            )
        except KafkaError as e:
            if not self.loaded:
                raise
            # Kafka's answer carries the exception's message ("Group g is not a consumer
            # group."), which librdkafka logs; the dispatch site would leave it out.
            return ConsumerGroupHeartbeatResponse(error_code=e.code, error_message=e.detail or None)

    def consumer_group_describe(
        self, ctx: Caller, request: ConsumerGroupDescribeRequest
    ) -> ConsumerGroupDescribeResponse:
        self._while_loading(ctx, request, consumer_group_describe.error_response)
        return self.coordinator.consumer_group_describe(
            self.context(ctx), request, self.topics_metadata()
        )

    def topics_metadata(self) -> dict[str, TopicImage]:
        """Every topic as the consumer groups see it: name, id, partition count. Passed to
        each heartbeat, which bumps a group's epoch when its topics changed (created,
        deleted, new partitions), so every change reaches the groups at their next
        heartbeat, as Kafka's metadata image does at its next publish."""
        return {
            name: TopicImage(t.topic_id, name, len(t.partitions))
            for name, t in self.broker.topics.topics.items()
        }

    async def offset_fetch(self, ctx: Caller, request: OffsetFetchRequest) -> OffsetFetchResponse:
        """From memory; with require_stable (v7+), once the groups' commits on their way are
        durable and applied (Kafka 4.x runs such a fetch as a write operation, behind the
        writes before it)."""
        self._while_loading(ctx, request, offset_fetch.error_response)
        if request.require_stable:
            group_ids = (
                [g.group_id for g in request.groups] if ctx.api_version >= 8 else [request.group_id]
            )
            while self.coordinator.has_pending_commits(group_ids):
                if self._commits_settled is None:
                    self._commits_settled = trio.Event()
                await self._commits_settled.wait()
        return self.coordinator.fetch_offsets(self.context(ctx), request, self.broker.now_ms())

    def describe_groups(
        self, ctx: Caller, request: DescribeGroupsRequest
    ) -> DescribeGroupsResponse:
        self._while_loading(ctx, request, describe_groups.error_response)
        return self.coordinator.describe_groups(self.context(ctx), request)

    def list_groups(self, ctx: Caller, request: ListGroupsRequest) -> ListGroupsResponse:
        self._while_loading(ctx, request, list_groups.error_response)
        return self.coordinator.list_groups(self.context(ctx), request)

    # --- calls -----------------------------------------------------------------------------

    def context(self, ctx: Caller) -> CoordinatorContext:
        describable = getattr(ctx, "describable", None)  # set by broker.security
        key = (ctx.api_version, ctx.client_id, ctx.client_host)
        if describable is None:  # one per version and client: made once, not per request
            context = self._contexts.get(key)
            if context is None:
                context = keep(self._contexts, key, CoordinatorContext(*key), _CONTEXTS_KEPT)
            return context
        return CoordinatorContext(*key, describable)

    def _while_loading(
        self, ctx: Caller, request: _Req, error_response: Callable[[_Req, ErrorCode, int], _Resp]
    ) -> _Resp | None:
        """The one "not loaded yet" gate: None once __consumer_offsets is replayed; before,
        the API's answer from WHILE_LOADING (placed by its `error_response`), or
        COORDINATOR_LOAD_IN_PROGRESS raised for the dispatch site to place."""
        if self.loaded:
            return None
        code = WHILE_LOADING.get(type(request))
        if code is None:
            raise KafkaError(ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, "replaying __consumer_offsets")
        return error_response(request, code, ctx.api_version)

    async def _call(
        self,
        ctx: Caller,
        request: _Req,
        error_response: Callable[[_Req, ErrorCode, int], _Resp],
        verb: Callable[..., Outcome],
        *,
        postpones_only: bool = False,
        producer: tuple[int, int] | None = None,
        unloads: bool = False,
        wall_ms: int | None = None,
    ) -> _Resp:
        """Run a coordinator verb that takes a token; wait for the reply to that token.

        `postpones_only`: the verb can move deadlines only later (Heartbeat, OffsetCommit:
        a member's session restarts; a member that is not parked in a join or sync always
        has a deadline already), so the timer task need not wake to recompute the next one,
        a scan of every group; at worst it wakes at the old deadline and finds nothing due.
        `producer`: (id, epoch) of a transactional producer whose batch the records go in.
        `unloads`: the request waits for others and is answered NOT_COORDINATOR if its
        group's coordinator moves meanwhile (`unload`).
        `wall_ms`: for a verb that takes the date after `now_ms` (the commits').
        """
        if not self.loaded:
            return self._while_loading(ctx, request, error_response)  # type: ignore[return-value]
        token = next(self._tokens)
        # Most calls are answered in this step (a commit, a heartbeat): `_deliver` hands the
        # reply over through `_now_token`, and a slot is made only for a call that waits (a
        # JoinGroup parked for others; a commit waiting for its fsync).
        self._now_token = token
        try:
            now_ms = self.broker.clock.now_ms()  # broker.now_ms(), a call less
            if wall_ms is None:
                outcome = verb(self.context(ctx), request, token, now_ms)
            else:
                outcome = verb(self.context(ctx), request, token, now_ms, wall_ms)
            if not postpones_only:
                self._wake.set()
            # `complete`, without its coroutine: most outcomes have nothing left to await.
            appending = self._append_now(outcome, producer, now_ms, wall_ms)
        finally:
            answered, self._now_token = self._now_token == 0, 0
        if answered:
            response, self._now_response = self._now_response, None
            if appending is not None:
                await self._finish(appending)
            return response  # type: ignore[return-value]  # cast(), without its call
        slot = self._parked[token] = _Parked()
        if unloads and (node := getattr(ctx, "node_id", None)) is not None:
            group_id: str = request.group_id  # type: ignore[attr-defined]

            def refused() -> object:
                # Kafka's unloaded JoinGroup answer names the member (it may have been
                # given its id while it waited), so that it rejoins as itself.
                answer = error_response(request, ErrorCode.NOT_COORDINATOR, ctx.api_version)
                member_id = self._awaiting_join(group_id, token)
                if member_id is None:
                    return answer
                return dataclasses.replace(answer, member_id=member_id)  # type: ignore[type-var]

            slot.unloaded = (self.coordinator.partition_for(group_id), node, refused)
        try:
            if appending is not None:
                await self._finish(appending)
            if not slot.answered:
                slot.event = trio.Event()
                await slot.event.wait()
            # The coordinator answers each token with its API's response.
            return cast(_Resp, slot.response)
        finally:
            self._parked.pop(token, None)

    async def complete(self, outcome: Outcome, producer: tuple[int, int] | None = None) -> None:
        """Append the outcome's records (durably), apply them, then deliver its replies.
        With `producer`, in a transactional batch of that producer id and epoch."""
        appending = self._append_now(outcome, producer)
        if appending is not None:
            await self._finish(appending)

    def _append_now(
        self,
        outcome: Outcome,
        producer: tuple[int, int] | None = None,
        now_ms: int | None = None,
        wall_ms: int | None = None,
    ) -> _Appending | None:
        """The synchronous half of `complete`: the records go into the log in the caller's
        step, with no checkpoint between the coordinator's decision and the append (Kafka's
        CoordinatorRuntime appends a result's records in the event that produced it).
        Returns what `_finish` still has to do, or None when nothing is left. `now_ms`:
        when the outcome was decided, if the caller knows (it is applied in the same step);
        `wall_ms`: the date the verb was given, if any, which is then the records' date
        too when the clock writes its dates into records (`Clock.records_wall_ms`)."""
        if outcome.generations or outcome.dead_groups:
            self._report(outcome)
        records = outcome.records
        if not records:
            self._deliver(outcome)
            return None
        by_partition: dict[int, list[AnyRecord]]
        if len(records) == 1:  # the usual case: one commit, or one group's record
            record = records[0]
            durable = record.is_offset_commit
            pid = self.coordinator.partition_for(record.group_id)
            if (
                durable
                and producer is None
                and not self.broker.durability.strict
                and not (self._pending and self._pending.get(pid))
            ):
                # A commit of one partition: `append_records` below, without its loops.
                clock = self.broker.clock
                if wall_ms is None or not clock.records_wall_ms:
                    wall_ms = clock.record_ms()  # broker.wall_ms(), a call less
                try:
                    plog = append_one(self.broker.topics, wall_ms, pid, record)
                except (KafkaError, OSError) as e:
                    self._append_failed(_Appended(outcome, {pid}), False, e)
                    return None
                self.broker.durability.note_written(plog)
                self._apply(outcome, now_ms)
                return None
            by_partition = {pid: [record]}
        else:
            durable = any(r.is_offset_commit for r in records)
            by_partition = {}
            for record in records:
                pid = self.coordinator.partition_for(record.group_id)
                by_partition.setdefault(pid, []).append(record)
        if (
            durable
            and not self.broker.durability.strict
            and not (self._pending and any(self._pending.get(p) for p in by_partition))
        ):
            # Answered once written (Kafka's durability): nothing to wait for, and no
            # earlier outcome of these partitions is waiting to be applied, so this one is
            # applied at once, in log order, without the queue below.
            try:
                written = self._append_records(by_partition, producer)
            except (KafkaError, OSError) as e:
                self._append_failed(_Appended(outcome, set(by_partition)), False, e)
                return None
            for plog, end in written:
                self.broker.durability.note_written(plog, end)
            self._apply(outcome)
            return None
        entry = _Appended(outcome, set(by_partition))
        if durable:
            for p in entry.partitions:
                self._pending.setdefault(p, collections.deque()).append(entry)
        try:
            written = self._append_records(by_partition, producer)
        except (KafkaError, OSError) as e:
            self._append_failed(entry, durable, e)
            return None
        return _Appending(entry, durable, written)

    def _append_records(
        self, by_partition: dict[int, list[AnyRecord]], producer: tuple[int, int] | None
    ) -> list[tuple[Log, int]]:
        wall_ms = self.broker.wall_ms()
        topic = self.broker.topics.offsets_topic(now_wall_ms=wall_ms)
        return append_records(topic, wall_ms, by_partition, producer)

    async def _finish(self, appending: _Appending) -> None:
        """The rest of `complete`: wait for the fsync if need be, apply, deliver."""
        entry, durable = appending.entry, appending.durable
        try:
            for plog, end in appending.written:
                if durable:
                    await self.broker.durability.wait_durable(plog, end)
                else:
                    self.broker.durability.note_written(plog, end)
        except (KafkaError, OSError) as e:
            self._append_failed(entry, durable, e)
            return
        if durable:
            entry.done = True
            self._apply_ready(entry.partitions)
        else:
            self._apply(entry.outcome)

    def _append_failed(self, entry: _Appended, durable: bool, e: KafkaError | OSError) -> None:
        code = e.code if isinstance(e, KafkaError) else ErrorCode.KAFKA_STORAGE_ERROR
        if code is ErrorCode.KAFKA_STORAGE_ERROR:
            log.error("__consumer_offsets write failed: %s", e)
        else:  # refused by the log: the request's fault (a fenced producer's epoch, ...)
            log.warning("__consumer_offsets write refused: %s", e)
        if durable:
            for p in entry.partitions:
                self._pending[p].remove(entry)
            self._apply_ready(entry.partitions)
        failed = self.coordinator.on_append_failed(entry.outcome, code, self.broker.now_ms())
        self._settled()
        self._report(failed)
        self._deliver(failed)
        self._wake.set()

    def _settled(self) -> None:
        if self._commits_settled is not None:
            self._commits_settled.set()
            self._commits_settled = None

    def _apply(self, outcome: Outcome, now_ms: int | None = None) -> None:
        """The outcome's records are durable: its effects take place and its replies go;
        `now_ms`: when it was decided, if that was in this step (None: read the clock)."""
        self.coordinator.on_appended(outcome, self.broker.now_ms() if now_ms is None else now_ms)
        if self._commits_settled is not None:
            self._settled()
        self._deliver(outcome)
        for r in outcome.records:
            if not r.is_offset_commit:
                self._wake.set()  # offsets taking effect move no deadline
                break

    def _apply_ready(self, partitions: set[int]) -> None:
        """Apply every appended outcome that is durable and first in each of its partitions."""
        check = set(partitions)
        while check:
            p = check.pop()
            queue = self._pending.get(p)
            while (
                queue
                and queue[0].done
                and all(self._pending[x][0] is queue[0] for x in queue[0].partitions)
            ):
                entry = queue[0]
                for x in entry.partitions:
                    self._pending[x].popleft()
                    if not self._pending[x]:
                        del self._pending[x]
                    check.add(x)
                self._apply(entry.outcome)
                queue = self._pending.get(p)

    def _report(self, outcome: Outcome) -> None:
        """One INFO line and one metric per rebalance (a group entered a new generation),
        one INFO line per group that died."""
        for g in outcome.generations:
            log.info(
                "group %s rebalanced: generation %d, %d members, protocol %s/%s, leader %s",
                g.group_id,
                g.generation_id,
                g.members,
                g.protocol_type,
                g.protocol_name,
                g.leader_id,
            )
            self.broker.metrics.rebalances.labels(g.group_id).inc()
        for group_id in outcome.dead_groups:
            log.info("group %s is dead: deleted, or its last offset expired", group_id)

    def _deliver(self, outcome: Outcome) -> None:
        for reply in outcome.replies:
            if reply.token == self._now_token:  # the call running now (`_call`)
                self._now_token, self._now_response = 0, reply.response
                continue
            slot = self._parked.get(reply.token)
            if slot is not None and not slot.answered:
                slot.response = reply.response
                slot.answered = True
                if slot.event is not None:
                    slot.event.set()

    # --- timers ----------------------------------------------------------------------------

    async def _timer(self) -> None:
        while True:
            deadline_ms = self.coordinator.next_deadline_ms()
            deadline = math.inf if deadline_ms is None else deadline_ms / 1000
            await self.broker.clock.wait(self._wake, deadline)
            self._wake = trio.Event()
            if deadline_ms is not None and self.broker.clock.reached(deadline_ms):
                outcome = self.coordinator.expire(self.broker.now_ms(), self.broker.clock.wall_ms())
                # The records go into the log now, in this step, before any request
                # handled after this expiry can append its own (a commit, a DeleteGroups):
                # log order is decision order, which is what replay relies on.
                appending = self._append_now(outcome)
                if appending is not None:
                    assert self._nursery is not None
                    self._nursery.start_soon(self._finish, appending)
