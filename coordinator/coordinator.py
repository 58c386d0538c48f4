"""GroupCoordinator: the group coordinator as a pure, synchronous state machine.

The facade, as Kafka's GroupCoordinatorShard is one over GroupMetadataManager and
OffsetMetadataManager: it holds the group map, answers the verbs by handing them to
`ClassicMembership` (coordinator/classic/membership.py: join, sync, heartbeat, leave,
rebalance, static members) or `OffsetManager` (coordinator/offsets.py: commit, fetch,
delete, expiry), describes and lists groups, runs the timers, settles writes through
`Writes` (coordinator/writes.py) and loads __consumer_offsets by replay.

The KIP-848 consumer groups (coordinator/consumer/) sit behind the same facade: one group
id names one group of either type, and a request of one protocol to a group of the other is
answered, and the group converted online, as Kafka's GroupMetadataManager does it under
group.consumer.migration.policy (coordinator/migration.py). A consumer group's committed
offsets are kept, as everyone's, by `OffsetManager`, on an Empty classic `Group` that only
holds them and that ListGroups, DescribeGroups and the metrics do not show. The consumer coordinator
applies its records as it builds them (they are its state, as Kafka's replay makes them);
the broker appends them like any other, and should they not be written the change is
undone (`UndoWrite`, coordinator/migration.py).

Every request handler takes the request dataclass, a `RequestContext` and the time, and
returns an `Outcome`: the replies to send and the __consumer_offsets records to append
before they go out. JoinGroup and SyncGroup may park: their own token gets no reply yet, and
a later call (another member's join, the leader's sync, `expire`) returns it. The broker
appends `outcome.records`, then calls `on_appended` (or `on_append_failed`, which returns
replacement replies for the same tokens), then delivers the replies. Timers are data: the
broker sleeps until `next_deadline_ms()` and calls `expire`.

Requests refused as a whole raise `KafkaError`; answers that depend on the state (a
heartbeat during a rebalance) are set in the response, as Kafka splits them. JoinGroup is
the exception: its errors are replies, because Kafka's error responses carry a member id
(the one sent, or the one assigned with MEMBER_ID_REQUIRED) that `error_response` cannot
know.

Where kmock differs from Kafka, and why:

- The leader's SyncGroup moves the group to Stable at once and returns every parked member's
  reply together with the GroupMetadata record; the broker holds those replies until the
  record is durable. Kafka stays CompletingRebalance until the write completes. A follower
  whose SyncGroup arrives in between gets its assignment from the Stable group; should the
  write fail, the group rebalances and that member learns it at its next heartbeat.
- A request Kafka leaves unanswered gets an answer, because the broker waits for every
  token: a JoinGroup or SyncGroup superseded by a second one from the same member gets
  REBALANCE_IN_PROGRESS, and a parked SyncGroup of a member that is removed gets
  UNKNOWN_MEMBER_ID.
- Group calls carry only the monotonic clock. The wall-clock time of a state change, which
  GroupMetadataValue.currentStateTimestamp stores and which Empty groups' offsets expire
  from after a restart, is derived from the wall-minus-monotonic offset seen at the last
  call that carried both (`commit_offsets`, `expire`; the first retention check is due at
  once after loading, as in Kafka). Before any such call it is written as -1 (unknown), as
  Kafka's older record versions do.
- A Dead group stays in memory until its tombstones are durable, so requests in between get
  the Dead answers (COORDINATOR_NOT_AVAILABLE, GROUP_ID_NOT_FOUND), which Kafka gives to
  requests racing with a removal.
- A deleted group's pending commits are cancelled and tombstoned too, so that a commit
  appended just before the deletion does not come back on replay.
- If tombstones cannot be written, the DeleteGroups/OffsetDelete answer carries the error,
  but memory stays as deleted (a Dead group cannot come back). Kafka's classic coordinator
  answered such deletes with success and only logged the failed write.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Iterator, Mapping, Sequence
from enum import Enum

from coordinator.classic.describe import (
    GROUP_AUTHORIZED_OPERATIONS,
    describe_groups,
)
from coordinator.classic.group import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    Member,
    OffsetAndMetadata,
    leave_each,
    touch,
)
from coordinator.classic.membership import ClassicMembership
from coordinator.classic.state import GroupState
from coordinator.clock import WallClock
from coordinator.config import CoordinatorConfig
from coordinator.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupState,
    TopicImage,
)
from coordinator.consumer.records import ConsumerGroupRecord
from coordinator.migration import Migration
from coordinator.offsets import CommittedOffset, OffsetManager
from coordinator.outcome import Outcome, OutcomeBuilder, Reply, RequestContext
from coordinator.records import offset_from_value
from coordinator.writes import (
    AssignmentWrite,
    CommitWrite,
    StaticMemberWrite,
    TombstoneWrite,
    TxnCommitWrite,
    UndoWrite,
    Writes,
    group_write_error,
)
from protocol.consumer_offsets import (
    ConsumerGroupRecordKey,
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.messages import sync_group
from protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
)
from protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from protocol.messages.describe_groups import (
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.join_group import JoinGroupRequest
from protocol.messages.leave_group import LeaveGroupRequest
from protocol.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
)
from protocol.messages.offset_delete import OffsetDeleteRequest
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
)
from protocol.messages.sync_group import SyncGroupRequest
from protocol.messages.txn_offset_commit import TxnOffsetCommitRequest

__all__ = ["CoordinatorConfig", "GroupCoordinator", "Outcome", "Reply", "RequestContext"]

_S = GroupState
_E = ErrorCode

# ListGroups v5 group_type (Kafka's Group.GroupType).
CLASSIC_GROUP_TYPE = "classic"
CONSUMER_GROUP_TYPE = "consumer"


class _Timer(Enum):
    JOIN = "join"
    SYNC = "sync"
    PENDING_MEMBER = "pending member"
    SESSION = "session"
    RETENTION = "retention"


@functools.lru_cache(maxsize=65536)
def _partition_for(group_id: str, num_partitions: int) -> int:
    # Java's String.hashCode runs over UTF-16 code units in int32 arithmetic; Utils.abs maps
    # Integer.MIN_VALUE to 0 and is Math.abs otherwise. Cached: asked for every record the
    # coordinator writes, and the hash is a Python loop over the name.
    units = group_id.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    return (0 if h == -(2**31) else abs(h)) % num_partitions


class GroupCoordinator:
    def __init__(
        self, config: CoordinatorConfig, consumer_config: ConsumerGroupConfig | None = None
    ) -> None:
        self.config = config
        self._groups: dict[str, Group] = {}
        self._writes = Writes()
        self._clock = WallClock()
        self.membership = ClassicMembership(config, self._groups, self._writes, self._clock)
        self.offsets = OffsetManager(config, self._groups, self._writes, self._clock)
        # The KIP-848 consumer groups. A group id names one group: a classic one in
        # `_groups`, or a consumer one here, whose offsets (and only those) are kept on an
        # Empty offsets-only Group in `_groups` that nothing else shows.
        self.consumer = ConsumerGroupCoordinator(consumer_config)
        self.offsets.consumer_subscriptions = self._consumer_subscriptions
        self.migration = Migration(
            config, self._groups, self.consumer, self.membership, self._writes, self._clock
        )
        self._retention_check_ms: int | None = None  # scheduled by finish_load
        # Replayed records, folded by key, until finish_load builds the groups.
        self._loaded_groups: dict[str, GroupMetadataValue] = {}
        self._loaded_offsets: dict[tuple[str, str, int], OffsetAndMetadata] = {}

    # --- lookups ---------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        """The group's partition of __consumer_offsets: Kafka's
        `Utils.abs(groupId.hashCode) % offsets.topic.num.partitions`."""
        return _partition_for(group_id, self.config.offsets_topic_num_partitions)

    def group(self, group_id: str) -> Group | None:
        """The group's state, for tests and admin tools (read it, do not change it)."""
        return self._groups.get(group_id)

    def group_ids(self) -> list[str]:
        classic = [
            g.group_id
            for g in self._groups.values()
            if g.state is not _S.DEAD and g.group_id not in self.consumer.groups
        ]
        return classic + list(self.consumer.groups)

    def group_type(self, group_id: str) -> str | None:
        """ "classic", "consumer", or None for a group that does not exist."""
        if group_id in self.consumer.groups:
            return CONSUMER_GROUP_TYPE
        group = self._groups.get(group_id)
        return None if group is None or group.state is _S.DEAD else CLASSIC_GROUP_TYPE

    def _consumer_subscriptions(self, group_id: str) -> frozenset[str] | None:
        """The topics a consumer group's members subscribe to (their offsets do not
        expire), or None when `group_id` is not a consumer group."""
        group = self.consumer.groups.get(group_id)
        if group is None:
            return None
        return frozenset(group.all_subscribed_topic_names(group.members.values()))

    def committed_offsets(self) -> list[CommittedOffset]:
        """Every live group's committed offsets (OffsetManager.committed_offsets)."""
        return self.offsets.committed_offsets()

    def groups_by_state(self) -> dict[tuple[str, str], int]:
        """Number of groups per (group type, state): every state of each type present, for
        metrics. A consumer group's offsets-only Group is not counted."""
        counts = {(CLASSIC_GROUP_TYPE, str(state)): 0 for state in GroupState}
        counts.update({(CONSUMER_GROUP_TYPE, str(s)): 0 for s in ConsumerGroupState})
        for group in self._groups.values():
            if group.group_id not in self.consumer.groups:
                counts[(CLASSIC_GROUP_TYPE, str(group.state))] += 1
        for consumer_group in self.consumer.groups.values():
            counts[(CONSUMER_GROUP_TYPE, str(consumer_group.state))] += 1
        return counts

    # --- the verbs -------------------------------------------------------------------------

    def join(
        self, ctx: RequestContext, request: JoinGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        """JoinGroup; to a consumer group: coordinator/migration.py."""
        return self.migration.join(ctx, request, token, now_ms)

    def sync(
        self, ctx: RequestContext, request: SyncGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        return self.migration.sync(ctx, request, token, now_ms)

    def heartbeat(
        self, ctx: RequestContext, request: HeartbeatRequest, token: int, now_ms: int
    ) -> Outcome:
        return self.migration.heartbeat(ctx, request, token, now_ms)

    def leave(
        self, ctx: RequestContext, request: LeaveGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        to_consumer_group = self.migration.leave_consumer_group(ctx, request, token, now_ms)
        if to_consumer_group is not None:
            return to_consumer_group
        if ctx.api_version >= 3 and request.group_id and request.group_id not in self._groups:
            # Kafka 4.x (GroupCoordinatorService.leaveGroup): an unknown group is answered
            # NONE at the top level and UNKNOWN_MEMBER_ID for every member (v0-2 carry the
            # member's code at the top level: the membership raises it).
            response, _ = leave_each(ctx.api_version, request, lambda _: _E.UNKNOWN_MEMBER_ID)
            return Outcome(replies=(Reply(token, response),))
        return self.membership.leave(ctx, request, token, now_ms)

    # --- ConsumerGroupHeartbeat, ConsumerGroupDescribe ---------------------------------------

    def consumer_group_heartbeat(
        self,
        ctx: RequestContext,
        request: ConsumerGroupHeartbeatRequest,
        token: int,
        now_ms: int,
        wall_ms: int,
        topics_metadata: Mapping[str, TopicImage],
    ) -> Outcome:
        """ConsumerGroupHeartbeat (coordinator/consumer/coordinator.py); to a classic group
        of the same id: coordinator/migration.py (an upgrade, or GROUP_ID_NOT_FOUND)."""
        return self.migration.consumer_group_heartbeat(
            ctx, request, token, now_ms, wall_ms, topics_metadata
        )

    def consumer_group_describe(
        self,
        ctx: RequestContext,
        request: ConsumerGroupDescribeRequest,
        topics_metadata: Mapping[str, TopicImage],
    ) -> ConsumerGroupDescribeResponse:
        """ConsumerGroupDescribe: GROUP_ID_NOT_FOUND for a classic group or none."""
        described = []
        for d in self.consumer.describe(request.group_ids, topics_metadata):
            if d.error_code == _E.NONE:
                if request.include_authorized_operations:
                    ops = GROUP_AUTHORIZED_OPERATIONS
                    d = dataclasses.replace(d, authorized_operations=ops)  # type: ignore[type-var]
            elif self.group_type(d.group_id) == CLASSIC_GROUP_TYPE:
                d = dataclasses.replace(  # type: ignore[type-var]
                    d, error_message=f"Group {d.group_id} is not a consumer group."
                )
            described.append(d)
        return ConsumerGroupDescribeResponse(groups=described)

    def commit_offsets(
        self,
        ctx: RequestContext,
        request: OffsetCommitRequest,
        token: int,
        now_ms: int,
        wall_ms: int,
    ) -> Outcome:
        """OffsetCommit. To a consumer group, checked against the member's epoch (Kafka's
        ConsumerGroup.validateOffsetCommit: STALE_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, v9+),
        then written to its offsets-only Group as a commit without group management."""
        if request.group_id in self.consumer.groups:
            self.consumer.validate_offset_commit(
                request.group_id,
                request.member_id,
                request.generation_id_or_member_epoch,
                api_version=ctx.api_version,
            )
            return self.offsets.commit_offsets(
                ctx, request, token, now_ms, wall_ms, standalone=True
            )
        return self.offsets.commit_offsets(ctx, request, token, now_ms, wall_ms)

    def txn_commit_offsets(
        self,
        ctx: RequestContext,
        request: TxnOffsetCommitRequest,
        token: int,
        now_ms: int,
        wall_ms: int,
    ) -> Outcome:
        return self.offsets.txn_commit_offsets(ctx, request, token, now_ms, wall_ms)

    def complete_transaction(self, producer_id: int, commit: bool) -> None:
        """A COMMIT/ABORT marker of the producer reached __consumer_offsets."""
        self.offsets.complete_transaction(producer_id, commit)

    def fetch_offsets(
        self, ctx: RequestContext, request: OffsetFetchRequest, now_ms: int
    ) -> OffsetFetchResponse:
        """OffsetFetch. v9+ names the member: a consumer group's answer is checked against
        its epoch (ConsumerGroup.validateOffsetFetch), per group."""
        response = self.offsets.fetch_offsets(ctx, request, now_ms)
        if ctx.api_version < 9:
            return response
        errors: dict[str, ErrorCode] = {}
        for g in request.groups:
            if g.group_id in self.consumer.groups and g.member_id is not None:
                try:
                    self.consumer.validate_offset_fetch(g.group_id, g.member_id, g.member_epoch)
                except KafkaError as e:
                    errors[g.group_id] = e.code
        if errors:
            response = dataclasses.replace(  # type: ignore[type-var]
                response,
                groups=[
                    OffsetFetchResponseGroup(
                        group_id=g.group_id, topics=[], error_code=errors[g.group_id]
                    )
                    if g.group_id in errors
                    else g
                    for g in response.groups
                ],
            )
        return response

    def has_pending_commits(self, group_ids: Sequence[str]) -> bool:
        """Whether a commit of one of these groups is on its way to the log."""
        return self.offsets.has_pending_commits(group_ids)

    def delete_offsets(
        self, ctx: RequestContext, request: OffsetDeleteRequest, token: int, now_ms: int
    ) -> Outcome:
        return self.offsets.delete_offsets(ctx, request, token, now_ms)

    # --- DescribeGroups, ListGroups --------------------------------------------------------

    def describe_groups(
        self, ctx: RequestContext, request: DescribeGroupsRequest
    ) -> DescribeGroupsResponse:
        return describe_groups(self._groups, self.consumer.groups, ctx, request)

    def list_groups(self, ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
        """Every group, filtered by state (v4+, case-insensitive) and by type (v5+:
        "classic", "consumer"). Consumer groups have protocol type "consumer", as Kafka's."""
        states = (
            {s.strip().lower() for s in request.states_filter} if ctx.api_version >= 4 else set()
        )
        types = {t.lower() for t in request.types_filter} if ctx.api_version >= 5 else set()
        listed = []
        if not types or CLASSIC_GROUP_TYPE in types:
            listed += [
                ListedGroup(
                    group_id=g.group_id,
                    protocol_type=g.protocol_type or "",
                    group_state=str(g.state),
                    group_type=CLASSIC_GROUP_TYPE,
                )
                for g in self._groups.values()
                if g.state is not _S.DEAD
                and g.group_id not in self.consumer.groups
                and (not states or str(g.state).lower() in states)
            ]
        if not types or CONSUMER_GROUP_TYPE in types:
            listed += [
                ListedGroup(
                    group_id=c.group_id,
                    protocol_type=CONSUMER_PROTOCOL_TYPE,
                    group_state=str(c.state),
                    group_type=CONSUMER_GROUP_TYPE,
                )
                for c in self.consumer.groups.values()
                if not states or str(c.state).lower() in states
            ]
        return ListGroupsResponse(error_code=_E.NONE, groups=listed)

    # --- DeleteGroups, OffsetDelete --------------------------------------------------------

    def delete_groups(
        self, ctx: RequestContext, request: DeleteGroupsRequest, token: int, now_ms: int
    ) -> Outcome:
        """Delete Empty groups with their offsets (tombstones); NON_EMPTY_GROUP otherwise."""
        out = OutcomeBuilder()
        results: list[DeletableGroupResult] = []

        def failed(error: ErrorCode) -> DeleteGroupsResponse:
            """Should the tombstones not be written: the deleted groups carry the error,
            the others keep their answer."""
            return DeleteGroupsResponse(
                results=[
                    DeletableGroupResult(group_id=r.group_id, error_code=error)
                    if r.error_code == _E.NONE
                    else r
                    for r in results
                ]
            )

        for group_id in dict.fromkeys(request.groups_names):
            group = self._groups.get(group_id)
            if group_id in self.consumer.groups:
                try:
                    out.records.extend(self.consumer.delete_group(group_id).records)
                except KafkaError as e:
                    code = e.code
                else:
                    code = _E.NONE
                    if group is not None and group.state is not _S.DEAD:
                        self.offsets.bury(group, [], now_ms, out, (token, failed))
            elif group is None or group.state is _S.DEAD:
                code = _E.GROUP_ID_NOT_FOUND
            elif group.state is _S.EMPTY:
                self.offsets.bury(group, [], now_ms, out, (token, failed))
                code = _E.NONE
            else:
                code = _E.NON_EMPTY_GROUP
            results.append(DeletableGroupResult(group_id=group_id, error_code=code))
        out.reply(token, DeleteGroupsResponse(results=results))
        return out.outcome()

    def on_topics_deleted(self, topics: set[str], now_ms: int) -> Outcome:
        """Topics were deleted: their committed offsets go, in every group (tombstones)."""
        out = OutcomeBuilder()
        self.offsets.on_topics_deleted(topics, now_ms, out)
        return out.outcome()

    # --- after the append ------------------------------------------------------------------

    def on_appended(self, outcome: Outcome, now_ms: int) -> None:
        """The outcome's records are durable: apply the commits, forget Dead groups."""
        for record in outcome.records:
            effect = self._writes.take(record)
            if isinstance(effect, CommitWrite):
                self.offsets.committed(effect)
            elif isinstance(effect, TxnCommitWrite):
                self.offsets.txn_committed(effect)
            elif isinstance(effect, TombstoneWrite) and effect.group is not None:
                self._forget(effect.group)

    def on_append_failed(self, outcome: Outcome, code: ErrorCode, now_ms: int) -> Outcome:
        """The outcome's records could not be written (`code`, a storage error).

        Returns replacement replies for the outcome's tokens (records: none): commits fail
        on every partition written, the SyncGroups of a lost assignment fail and the group
        rebalances, a static member's replacement is undone. Replies that did not depend on
        the records stand.
        """
        group_error = group_write_error(code)
        out = OutcomeBuilder()
        commits: set[int] = set()  # tokens of OffsetCommits with a record not written
        txn_commits: set[int] = set()  # the same for TxnOffsetCommits
        special: dict[int, object] = {}
        for record in outcome.records:
            effect = self._writes.take(record)
            if isinstance(effect, CommitWrite):
                self.offsets.commit_failed(effect)
                commits.add(effect.token)
            elif isinstance(effect, TxnCommitWrite):
                txn_commits.add(effect.token)
            elif isinstance(effect, AssignmentWrite):
                group = effect.group
                if (
                    self._groups.get(group.group_id) is group
                    and group.generation_id == effect.generation_id
                    and group.state is _S.STABLE
                ):
                    for member in group.members.values():
                        member.assignment = b""
                    self.membership.prepare_rebalance(group, now_ms, out)
                    assert not out.records, "a Stable group's members must all rejoin first"
                for p in effect.parked:
                    special[p.token] = sync_group.error_response(
                        p.request, group_error, p.api_version
                    )
            elif isinstance(effect, StaticMemberWrite):
                special[effect.token] = self.membership.undo_static_member(
                    effect, group_error, now_ms
                )
            elif isinstance(effect, TombstoneWrite):
                if effect.group is not None:
                    self._forget(effect.group)
                if effect.reply is not None:
                    token, failed = effect.reply
                    special[token] = failed(group_error)
            elif isinstance(effect, UndoWrite):
                effect.undo(now_ms)
                if effect.reply is not None:
                    token, failed = effect.reply
                    special[token] = failed(group_error)
        replies = []
        for reply in outcome.replies:
            if reply.token in special:
                replies.append(Reply(reply.token, special[reply.token]))
            elif reply.token in commits:
                failed_commit = self.offsets.failed_commit(reply.response, code)
                replies.append(Reply(reply.token, failed_commit))
            elif reply.token in txn_commits:
                replies.append(
                    Reply(reply.token, self.offsets.failed_txn_commit(reply.response, code))
                )
            else:
                replies.append(reply)
        return Outcome(
            replies=(*replies, *out.replies),
            generations=tuple(out.generations),
            dead_groups=tuple(out.dead_groups),
        )

    def _forget(self, group: Group) -> None:
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]

    # --- timers ----------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When `expire` next has work (monotonic ms), or None."""
        deadlines = [d[0] for d in self._deadlines()]
        consumer = self.consumer.next_deadline_ms()
        if consumer is not None:
            deadlines.append(consumer)
        return min(deadlines, default=None)

    def _deadlines(self) -> Iterator[tuple[int, _Timer, Group | None, str]]:
        if self._retention_check_ms is not None:
            yield self._retention_check_ms, _Timer.RETENTION, None, ""
        for group in self._groups.values():
            if group.state is _S.DEAD:
                continue
            if group.join_deadline_ms is not None:
                yield group.join_deadline_ms, _Timer.JOIN, group, ""
            if group.sync_deadline_ms is not None:
                yield group.sync_deadline_ms, _Timer.SYNC, group, ""
            for member_id, deadline_ms in group.pending_members.items():
                yield deadline_ms, _Timer.PENDING_MEMBER, group, member_id
            for member in group.members.values():
                if member.heartbeat_deadline_ms is not None:
                    yield member.heartbeat_deadline_ms, _Timer.SESSION, group, member.member_id

    def expire(self, now_ms: int, wall_ms: int) -> Outcome:
        """Act on every deadline that has passed, in order: session timeouts, the end of
        join phases (rebalance timeout, initial delay), SyncGroups not sent in time, pending
        member ids never used, and the periodic offset retention check (tombstones)."""
        self._clock.seen(now_ms, wall_ms)
        out = OutcomeBuilder()
        self.migration.now_ms = now_ms  # fencing may downgrade a group
        self.migration.begin()
        fenced = self.consumer.expire(now_ms).records  # consumer group sessions
        self.migration.seal(fenced)  # not written: the members stay, retried later
        out.records.extend(fenced)
        while True:
            due = min(
                (d for d in self._deadlines() if d[0] <= now_ms), key=lambda d: d[0], default=None
            )
            if due is None:
                return out.outcome()
            _, timer, group, member_id = due
            if timer is _Timer.RETENTION:
                interval_ms = max(self.config.offsets_retention_check_interval_ms, 1)
                self._retention_check_ms = now_ms + interval_ms
                self.offsets.expire_offsets(now_ms, wall_ms, out)
                self._delete_empty_consumer_groups(out)
                continue
            assert group is not None
            if timer is _Timer.JOIN:
                self.membership.join_deadline(group, now_ms, out)
            elif timer is _Timer.SYNC:
                self.membership.sync_deadline(group, now_ms, out)
            elif timer is _Timer.PENDING_MEMBER:
                group.remove(member_id)
                self.membership.complete_join_if_all_joined(group, now_ms, out)
            else:
                self.membership.session_deadline(group, group.members[member_id], now_ms, out)

    def _delete_empty_consumer_groups(self, out: OutcomeBuilder) -> None:
        """Consumer groups without members or offsets go, as Kafka's cleanupGroupMetadata
        deletes them at the retention check (GroupMetadataManager.maybeDeleteGroup)."""
        for group_id, group in list(self.consumer.groups.items()):
            offsets = self._groups.get(group_id)
            if group.members or (
                offsets is not None and offsets.state is not _S.DEAD and offsets.has_offsets()
            ):
                continue
            out.records.extend(self.consumer.delete_group(group_id).records)
            out.dead_groups.append(group_id)

    # --- load ------------------------------------------------------------------------------

    def replay(self, key_bytes: bytes, value_bytes: bytes | None) -> None:
        """Fold one __consumer_offsets record, in log order, into the state being loaded.

        A tombstone deletes. Consumer group records go to the consumer groups; record
        types kmock does not know are skipped, as Kafka skips them.
        """
        key, value = decode_record(key_bytes, value_bytes)
        if isinstance(key, ConsumerGroupRecordKey):
            self.consumer.replay(ConsumerGroupRecord(key, value))  # type: ignore[arg-type]
            return
        if isinstance(key, OffsetCommitKey):
            partition = (key.group, key.topic, key.partition)
            if value is None:
                self._loaded_offsets.pop(partition, None)
            else:
                assert isinstance(value, OffsetCommitValue)
                self._loaded_offsets[partition] = offset_from_value(value)
        elif isinstance(key, GroupMetadataKey):
            if value is None:
                self._loaded_groups.pop(key.group, None)
            else:
                assert isinstance(value, GroupMetadataValue)
                self._loaded_groups[key.group] = value

    def replay_txn_offset(
        self, producer_id: int, key_bytes: bytes, value_bytes: bytes | None
    ) -> None:
        """A TxnOffsetCommit record whose transaction has no marker yet in the log: pending
        again, as before the restart. Call after `finish_load`."""
        key, value = decode_record(key_bytes, value_bytes)
        if isinstance(key, OffsetCommitKey) and isinstance(value, OffsetCommitValue):
            if key.group not in self._groups:
                self._groups[key.group] = Group(key.group, _S.EMPTY, 0)
            self.offsets.pending_txn.add(
                producer_id, key.group, (key.topic, key.partition), offset_from_value(value), -1
            )

    def finish_load(self, now_ms: int) -> None:
        """Build the groups replay found; members' sessions run from now. Call it once,
        after replay, even when there was nothing to replay: it schedules the first
        offset retention check (due at once, as Kafka's)."""
        for group_id, value in self._loaded_groups.items():
            self._groups[group_id] = _loaded_group(group_id, value, now_ms)
        for (group_id, topic, partition), offset in self._loaded_offsets.items():
            group = self._groups.get(group_id)
            if group is None:
                # Offsets without a group record: a group used for offsets only.
                group = self._groups[group_id] = Group(group_id, _S.EMPTY, now_ms)
                group.state_from_log = True
            group.offsets[(topic, partition)] = offset
        self._loaded_groups.clear()
        self._loaded_offsets.clear()
        for group in self._groups.values():
            for member in group.members.values():
                touch(member, now_ms)
            if len(group.members) > self.config.group_max_size:
                # Kafka's GroupMetadataManager.onLoaded: group.max.size was lowered since
                # the group formed; a rebalance gives the members a chance to commit, and
                # the last to rejoin are turned away (GROUP_MAX_SIZE_REACHED).
                out = OutcomeBuilder()
                self.membership.prepare_rebalance(group, now_ms, out)
                assert not out.records  # nothing written,
                assert not out.replies  # nothing parked
        self.consumer.finish_load(now_ms)
        self._retention_check_ms = now_ms


# --- helpers ---------------------------------------------------------------------------------


def _loaded_group(group_id: str, value: GroupMetadataValue, now_ms: int) -> Group:
    """A group as its last GroupMetadata record describes it: Stable with members, else Empty."""
    group = Group(group_id, _S.STABLE if value.members else _S.EMPTY, now_ms)
    group.state_from_log = True
    if value.current_state_timestamp != -1:
        group.logged_state_wall_ms = value.current_state_timestamp
    group.generation_id = value.generation
    protocol = value.protocol
    for m in value.members:
        group.add(
            Member(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                # GroupMetadataValue v0 has no rebalance timeout: the session timeout stands in.
                rebalance_timeout_ms=(
                    m.session_timeout if m.rebalance_timeout == -1 else m.rebalance_timeout
                ),
                session_timeout_ms=m.session_timeout,
                protocol_type=value.protocol_type,
                protocols=[] if protocol is None else [(protocol, m.subscription)],
                assignment=m.assignment,
            )
        )
    group.protocol_type = value.protocol_type or None
    group.protocol_name = value.protocol
    group.leader_id = value.leader
    group.subscribed_topics = group.compute_subscribed_topics()
    return group
