"""GroupCoordinator: the classic-protocol group coordinator as a pure, synchronous state machine.

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

import functools
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import TypeVar

from coordinator.classic.group import (
    CONSUMER_PROTOCOL_TYPE,
    Group,
    Member,
    OffsetAndMetadata,
    Parked,
    TopicPartition,
)
from coordinator.records import (
    CoordinatorRecord,
    group_metadata_record,
    group_tombstone,
    offset_commit_record,
    offset_from_value,
    offset_tombstone,
)
from coordinator.classic.state import GroupState
from protocol.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
)
from protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
)
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    MemberResponse,
)
from protocol.messages.list_groups import ListedGroup, ListGroupsRequest, ListGroupsResponse
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse

__all__ = ["CoordinatorConfig", "GroupCoordinator", "Outcome", "Reply", "RequestContext"]

_S = GroupState
_E = ErrorCode

# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member's first JoinGroup is given
# up after this long (it cannot heartbeat while parked, and a retry would leave a ghost).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000
# DescribeGroups authorized_operations when asked for: READ, DELETE and DESCRIBE, what Kafka
# reports for a group without an authorizer.
GROUP_AUTHORIZED_OPERATIONS = (1 << 3) | (1 << 6) | (1 << 8)
AUTHORIZED_OPERATIONS_OMITTED = -(2**31)
# ListGroups v5 group_type: every group here uses the classic protocol.
CLASSIC_GROUP_TYPE = "classic"

_Topic = TypeVar("_Topic", OffsetFetchResponseTopic, OffsetFetchResponseTopics)


@dataclass(frozen=True, slots=True)
class RequestContext:
    api_version: int
    client_id: str
    client_host: str


@dataclass(frozen=True, slots=True)
class Reply:
    token: int  # opaque, issued by the broker per request
    response: object  # a protocol response dataclass


@dataclass(frozen=True, slots=True)
class Outcome:
    replies: tuple[Reply, ...] = ()
    records: tuple[CoordinatorRecord, ...] = ()  # to append to __consumer_offsets first


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions
    group_min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    # group.initial.rebalance.delay.ms. Kafka's default is 3000; a dev broker answers the
    # first JoinGroup of an empty group without waiting for more members to turn up.
    group_initial_rebalance_delay_ms: int = 0
    group_max_size: int = 2**31 - 1  # group.max.size
    offsets_retention_minutes: int = 10080  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes


# --- what happens when a record is durable, or is not ----------------------------------------


@dataclass(eq=False, slots=True)
class _CommitWrite:
    """An offset commit: applied to memory once durable, unless a deletion cancelled it."""

    group: Group
    partition: TopicPartition
    offset: OffsetAndMetadata
    token: int
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class _AssignmentWrite:
    """The leader's assignment; the SyncGroup replies of `tokens` stand or fall with it."""

    group: Group
    generation_id: int
    tokens: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class _StaticMemberWrite:
    """A static member replaced without a rebalance; undone if the record is not durable."""

    group: Group
    group_instance_id: str
    old_member_id: str
    new_member_id: str
    old_protocols: list[tuple[str, bytes]]
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    leader_before: str | None
    token: int
    api_version: int


@dataclass(frozen=True, slots=True)
class _TombstoneWrite:
    """Tombstones: a Dead `group` leaves memory once they are written (durable or not)."""

    group: Group | None
    token: int | None  # the DeleteGroups/OffsetDelete reply that depends on them


_Effect = _CommitWrite | _AssignmentWrite | _StaticMemberWrite | _TombstoneWrite


class _Timer(Enum):
    JOIN = "join"
    SYNC = "sync"
    PENDING_MEMBER = "pending member"
    SESSION = "session"
    RETENTION = "retention"


class _Out:
    """Replies and records collected while handling one call."""

    __slots__ = ("records", "replies")

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.records: list[CoordinatorRecord] = []

    def reply(self, token: int, response: object) -> None:
        self.replies.append(Reply(token, response))

    def outcome(self) -> Outcome:
        return Outcome(tuple(self.replies), tuple(self.records))


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
    def __init__(self, config: CoordinatorConfig) -> None:
        self.config = config
        self._groups: dict[str, Group] = {}
        # id(record) -> (record, what to do once it is durable or failed).
        self._effects: dict[int, tuple[CoordinatorRecord, _Effect]] = {}
        # wall_ms - now_ms at the last call that carried both clocks.
        self._wall_offset_ms: int | None = None
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
        return [g.group_id for g in self._groups.values() if g.state is not _S.DEAD]

    def groups_by_state(self) -> dict[str, int]:
        """Number of groups per state (every state present, for metrics)."""
        counts = {str(state): 0 for state in GroupState}
        for group in self._groups.values():
            counts[str(group.state)] += 1
        return counts

    # --- JoinGroup -------------------------------------------------------------------------

    def join(
        self, ctx: RequestContext, request: JoinGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        """Add or update a member; the reply usually waits until the join phase ends.

        Version rules: v0 has no rebalance timeout (the session timeout stands in); from v4
        a member without an id is first sent MEMBER_ID_REQUIRED with its new id; from v5
        members may be static (group_instance_id); v7 adds protocol_type to the response
        and makes protocol_name nullable; v9 lets a rejoining static leader skip the
        assignment.
        """
        out = _Out()
        version = ctx.api_version
        group_id, member_id = request.group_id, request.member_id
        if not group_id:
            out.reply(token, _join_error(version, _E.INVALID_GROUP_ID, member_id))
            return out.outcome()
        cfg = self.config
        timeout = request.session_timeout_ms
        if not cfg.group_min_session_timeout_ms <= timeout <= cfg.group_max_session_timeout_ms:
            out.reply(token, _join_error(version, _E.INVALID_SESSION_TIMEOUT, member_id))
            return out.outcome()
        group = self._groups.get(group_id)
        if group is None:
            if member_id:
                out.reply(token, _join_error(version, _E.UNKNOWN_MEMBER_ID, member_id))
                return out.outcome()
            group = self._groups[group_id] = Group(group_id, _S.EMPTY, now_ms)

        if not self._accepts_joining_member(group, member_id):
            group.remove(member_id)
            out.reply(token, _join_error(version, _E.GROUP_MAX_SIZE_REACHED, ""))
        elif not member_id:
            self._join_new_member(ctx, request, group, token, now_ms, out)
        else:
            self._join_known_member(ctx, request, group, token, now_ms, out)
        self._maybe_complete_join(group, now_ms, out)
        return out.outcome()

    def _accepts_joining_member(self, group: Group, member_id: str) -> bool:
        """group.max.size. While rebalancing, members count once they have rejoined, so the
        last to rejoin of a group over the limit (the limit was lowered) are turned away."""
        member = group.members.get(member_id)
        if group.state is _S.PREPARING_REBALANCE:
            if member is not None and member.awaiting_join is not None:
                return True
            return group.num_awaiting_join() < self.config.group_max_size
        if group.state in (_S.COMPLETING_REBALANCE, _S.STABLE):
            return member is not None or len(group.members) < self.config.group_max_size
        return True

    def _join_new_member(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: Group,
        token: int,
        now_ms: int,
        out: _Out,
    ) -> None:
        version = ctx.api_version
        if group.state is _S.DEAD:
            out.reply(token, _join_error(version, _E.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(request.protocol_type, _protocol_names(request)):
            out.reply(token, _join_error(version, _E.INCONSISTENT_GROUP_PROTOCOL, ""))
            return
        instance_id = request.group_instance_id
        new_member_id = f"{ctx.client_id if instance_id is None else instance_id}-{uuid.uuid4()}"
        if instance_id is not None:
            old_member_id = group.static_members.get(instance_id)
            if old_member_id is None:
                self._add_member(ctx, request, group, new_member_id, token, now_ms, out)
            else:
                self._replace_static_member(
                    ctx, request, group, old_member_id, new_member_id, token, now_ms, out
                )
        elif version >= 4:
            group.pending_members[new_member_id] = now_ms + request.session_timeout_ms
            out.reply(token, _join_error(version, _E.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member(ctx, request, group, new_member_id, token, now_ms, out)

    def _join_known_member(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: Group,
        token: int,
        now_ms: int,
        out: _Out,
    ) -> None:
        version, member_id = ctx.api_version, request.member_id
        if group.state is _S.DEAD:
            out.reply(token, _join_error(version, _E.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(request.protocol_type, _protocol_names(request)):
            out.reply(token, _join_error(version, _E.INCONSISTENT_GROUP_PROTOCOL, member_id))
            return
        # A pending member is dynamic. Kafka fails (UNKNOWN_SERVER_ERROR) on a pending id sent
        # with a group_instance_id; here that request meets the static-member checks instead.
        if member_id in group.pending_members and request.group_instance_id is None:
            self._add_member(ctx, request, group, member_id, token, now_ms, out)
            return
        error = _member_error(group, member_id, request.group_instance_id)
        if error is not None:
            out.reply(token, _join_error(version, error, member_id))
            return
        member = group.members[member_id]
        self._touch(member, now_ms)
        protocols = _protocols(request)
        if group.state is _S.PREPARING_REBALANCE:
            self._update_member_and_rebalance(ctx, request, group, member, token, now_ms, out)
        elif group.state is _S.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # It missed the JoinGroup response: send this generation's again.
                out.reply(token, self._join_result(version, group, member))
            else:
                self._update_member_and_rebalance(ctx, request, group, member, token, now_ms, out)
        else:
            assert group.state is _S.STABLE  # an Empty group has no member to validate
            if group.is_leader(member_id) or not member.matches(protocols):
                # The leader rejoins to rebalance for changes its assignor sees (topic
                # metadata) that member metadata does not show.
                self._update_member_and_rebalance(ctx, request, group, member, token, now_ms, out)
            else:
                out.reply(token, self._join_result(version, group, member, with_members=False))

    def _add_member(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: Group,
        member_id: str,
        token: int,
        now_ms: int,
        out: _Out,
    ) -> None:
        member = Member(
            member_id=member_id,
            group_instance_id=request.group_instance_id,
            client_id=ctx.client_id,
            client_host=ctx.client_host,
            rebalance_timeout_ms=_rebalance_timeout_ms(ctx, request),
            session_timeout_ms=request.session_timeout_ms,
            protocol_type=request.protocol_type,
            protocols=_protocols(request),
            is_new=True,
            awaiting_join=Parked(token, ctx.api_version),
            heartbeat_deadline_ms=now_ms + NEW_MEMBER_JOIN_TIMEOUT_MS,
        )
        if group.state is _S.PREPARING_REBALANCE and group.previous_state is _S.EMPTY:
            group.new_member_added = True  # extends the initial delay
        group.add(member)
        self._maybe_prepare_rebalance(group, now_ms, out)

    def _update_member_and_rebalance(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: Group,
        member: Member,
        token: int,
        now_ms: int,
        out: _Out,
    ) -> None:
        if member.awaiting_join is not None:
            superseded = member.awaiting_join
            out.reply(
                superseded.token,
                _join_error(superseded.api_version, _E.REBALANCE_IN_PROGRESS, member.member_id),
            )
        group.update_member(
            member,
            _protocols(request),
            _rebalance_timeout_ms(ctx, request),
            request.session_timeout_ms,
        )
        _park_join(member, token, ctx.api_version)
        self._maybe_prepare_rebalance(group, now_ms, out)

    def _replace_static_member(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: Group,
        old_member_id: str,
        new_member_id: str,
        token: int,
        now_ms: int,
        out: _Out,
    ) -> None:
        """A static member rejoins without its member id (a restarted instance): it takes the
        old member's place under a new id, and the old id is fenced."""
        version = ctx.api_version
        instance_id = request.group_instance_id
        assert instance_id is not None
        leader_before = group.leader_id
        old = group.members[old_member_id]
        self._answer_parked(old, _E.FENCED_INSTANCE_ID, out)
        member = group.rename_member(old_member_id, new_member_id)
        old_protocols = member.protocols
        old_rebalance_timeout_ms = member.rebalance_timeout_ms
        old_session_timeout_ms = member.session_timeout_ms
        group.update_member(
            member,
            _protocols(request),
            _rebalance_timeout_ms(ctx, request),
            request.session_timeout_ms,
        )
        _park_join(member, token, version)

        if group.state is _S.STABLE:
            if group.protocol_name != group.select_protocol():
                self._prepare_rebalance(group, now_ms, out)
                return
            # Same protocol: no rebalance. Persist the new member id, keep the assignment.
            member.awaiting_join = None
            self._touch(member, now_ms)
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            record = group_metadata_record(group, assignment, self._state_wall_ms(group))
            self._emit(
                out,
                record,
                _StaticMemberWrite(
                    group,
                    instance_id,
                    old_member_id,
                    new_member_id,
                    old_protocols,
                    old_rebalance_timeout_ms,
                    old_session_timeout_ms,
                    leader_before,
                    token,
                    version,
                ),
            )
            if version >= 9:
                # The leader learns it leads but must not run the assignor again (KIP-814).
                is_leader = group.is_leader(new_member_id)
                response = self._join_result(
                    version, group, member, with_members=is_leader, skip_assignment=is_leader
                )
            else:
                # Before v9, the old leader id is sent back, so a restarted leader does not
                # believe it leads and compute an assignment a Stable group would ignore.
                response = self._join_result(
                    version, group, member, with_members=False, leader=leader_before
                )
            out.reply(token, response)
        elif group.state is _S.COMPLETING_REBALANCE:
            # The leader may have assigned to the old id already: start over.
            self._prepare_rebalance(group, now_ms, out)
        # PreparingRebalance: the member waits with the others.

    # --- rebalance -------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, now_ms: int, out: _Out) -> None:
        if group.can_rebalance():
            self._prepare_rebalance(group, now_ms, out)

    def _prepare_rebalance(self, group: Group, now_ms: int, out: _Out) -> None:
        if group.state is _S.COMPLETING_REBALANCE:
            for member in group.members.values():
                member.assignment = b""
            self._propagate_assignment(group, _E.REBALANCE_IN_PROGRESS, now_ms, out)
        group.sync_deadline_ms = None
        initial = group.state is _S.EMPTY
        group.transition_to(_S.PREPARING_REBALANCE, now_ms)
        if initial:
            # Wait for more members before the first generation, extending the delay while
            # new ones arrive, up to the rebalance timeout in all.
            delay = self.config.group_initial_rebalance_delay_ms
            group.new_member_added = False
            group.initial_delay_ms = delay
            group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay, 0)
            group.join_deadline_ms = now_ms + delay
        elif group.has_all_members_joined():
            self._complete_join(group, now_ms, out)
        else:
            group.join_deadline_ms = now_ms + group.rebalance_timeout_ms()

    def _maybe_complete_join(self, group: Group, now_ms: int, out: _Out) -> None:
        """End the join phase if everyone has rejoined (never early in an initial rebalance)."""
        if (
            group.state is _S.PREPARING_REBALANCE
            and group.previous_state is not _S.EMPTY
            and group.has_all_members_joined()
        ):
            self._complete_join(group, now_ms, out)

    def _complete_join(self, group: Group, now_ms: int, out: _Out) -> None:
        group.join_deadline_ms = None
        group.new_member_added = False
        group.initial_remaining_ms = 0
        # Dynamic members that did not rejoin are gone; static ones keep their place.
        for member in list(group.members.values()):
            if member.awaiting_join is None and member.group_instance_id is None:
                self._remove_member(group, member, out)
        if group.members and not group.maybe_elect_new_joined_leader():
            # Only static members that have not rejoined: wait another rebalance timeout
            # (their sessions may expire meanwhile).
            group.join_deadline_ms = now_ms + max(group.rebalance_timeout_ms(), 1)
            return

        group.generation_id += 1
        group.pending_sync_members.clear()
        if not group.members:
            group.protocol_name = None
            group.subscribed_topics = group.compute_subscribed_topics()
            group.transition_to(_S.EMPTY, now_ms)
            # Kafka writes the empty generation; if the write fails it only warns.
            self._emit(out, group_metadata_record(group, {}, self._state_wall_ms(group)))
            return
        group.protocol_name = group.select_protocol()
        group.subscribed_topics = group.compute_subscribed_topics()
        group.transition_to(_S.COMPLETING_REBALANCE, now_ms)
        for member in group.members.values():
            if member.awaiting_join is not None:
                parked, member.awaiting_join = member.awaiting_join, None
                out.reply(parked.token, self._join_result(parked.api_version, group, member))
            self._touch(member, now_ms)
            member.is_new = False
            group.pending_sync_members.add(member.member_id)
        group.sync_deadline_ms = now_ms + group.rebalance_timeout_ms()

    def _join_result(
        self,
        version: int,
        group: Group,
        member: Member,
        *,
        with_members: bool | None = None,
        skip_assignment: bool = False,
        leader: str | None = None,
    ) -> JoinGroupResponse:
        """This generation as `member` sees it; only the leader gets the members' metadata."""
        if with_members is None:
            with_members = group.is_leader(member.member_id)
        if leader is None:
            leader = group.leader_id
        return _join_response(
            version,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=leader or "",
            member_id=member.member_id,
            members=group.current_member_metadata() if with_members else [],
            skip_assignment=skip_assignment,
        )

    def _propagate_assignment(
        self, group: Group, error: ErrorCode, now_ms: int, out: _Out
    ) -> list[int]:
        """Answer every parked SyncGroup: its assignment, or `error`. Returns the tokens."""
        tokens = []
        for member in group.members.values():
            if member.awaiting_sync is None:
                continue
            parked, member.awaiting_sync = member.awaiting_sync, None
            if error is _E.NONE:
                response = SyncGroupResponse(
                    error_code=_E.NONE,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                )
            else:
                response = SyncGroupResponse(error_code=error)
            out.reply(parked.token, response)
            tokens.append(parked.token)
            self._touch(member, now_ms)
        return tokens

    # --- SyncGroup -------------------------------------------------------------------------

    def sync(
        self, ctx: RequestContext, request: SyncGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        """Followers wait for the leader's assignment; the leader's SyncGroup stores it.

        v5: protocol_type and protocol_name, when sent, must be the group's.
        """
        group, member = self._member_of(
            request.group_id, request.member_id, request.group_instance_id, request.generation_id
        )
        for sent, known in (
            (request.protocol_type, group.protocol_type),
            (request.protocol_name, group.protocol_name),
        ):
            if sent is not None and sent != known:
                raise KafkaError(
                    _E.INCONSISTENT_GROUP_PROTOCOL,
                    f"group {group.group_id!r}: protocol {sent!r} != {known!r}",
                )
        out = _Out()
        if group.state is _S.PREPARING_REBALANCE:
            out.reply(token, SyncGroupResponse(error_code=_E.REBALANCE_IN_PROGRESS))
        elif group.state is _S.COMPLETING_REBALANCE:
            if member.awaiting_sync is not None:
                out.reply(
                    member.awaiting_sync.token,
                    SyncGroupResponse(error_code=_E.REBALANCE_IN_PROGRESS),
                )
            _park_sync(member, token, ctx.api_version)
            self._synced(group, member)
            if group.is_leader(member.member_id):
                self._store_assignment(group, request, now_ms, out)
        else:
            assert group.state is _S.STABLE  # an Empty group has no member to validate
            self._synced(group, member)
            self._touch(member, now_ms)
            out.reply(
                token,
                SyncGroupResponse(
                    error_code=_E.NONE,
                    protocol_type=group.protocol_type,
                    protocol_name=group.protocol_name,
                    assignment=member.assignment,
                ),
            )
        return out.outcome()

    def _synced(self, group: Group, member: Member) -> None:
        group.pending_sync_members.discard(member.member_id)
        if not group.pending_sync_members:
            group.sync_deadline_ms = None

    def _store_assignment(
        self, group: Group, request: SyncGroupRequest, now_ms: int, out: _Out
    ) -> None:
        """The leader's assignment: members it left out get an empty one."""
        sent = {a.member_id: bytes(a.assignment) for a in request.assignments}
        assignment = {member_id: sent.get(member_id, b"") for member_id in group.members}
        # Written as the group stands before Stable, as Kafka writes it.
        record = group_metadata_record(group, assignment, self._state_wall_ms(group))
        for member_id, member in group.members.items():
            member.assignment = assignment[member_id]
        group.transition_to(_S.STABLE, now_ms)
        tokens = self._propagate_assignment(group, _E.NONE, now_ms, out)
        self._emit(out, record, _AssignmentWrite(group, group.generation_id, tuple(tokens)))

    # --- Heartbeat, LeaveGroup -------------------------------------------------------------

    def heartbeat(
        self, ctx: RequestContext, request: HeartbeatRequest, token: int, now_ms: int
    ) -> Outcome:
        """Keep the member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""
        group, member = self._member_of(
            request.group_id, request.member_id, request.group_instance_id, request.generation_id
        )
        self._touch(member, now_ms)
        rebalancing = group.state is _S.PREPARING_REBALANCE
        code = _E.REBALANCE_IN_PROGRESS if rebalancing else _E.NONE
        return Outcome(replies=(Reply(token, HeartbeatResponse(error_code=code)),))

    def leave(
        self, ctx: RequestContext, request: LeaveGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        """Remove members, by member id or (v3+, for admin tools) by group_instance_id alone.

        v0-2 name one member and carry its error at the top level; v3+ answer per member.
        """
        version = ctx.api_version
        group = self._live_group(request.group_id)
        if version >= 3:
            identities = list(request.members)
        else:
            identities = [MemberIdentity(member_id=request.member_id)]
        out = _Out()
        results = []
        members_left = False
        for identity in identities:
            code, was_member = self._leave_one(group, identity, out)
            members_left |= was_member
            results.append(
                MemberResponse(
                    member_id=identity.member_id,
                    group_instance_id=identity.group_instance_id,
                    error_code=code,
                )
            )
        if members_left:
            self._rebalance_after_removal(group, now_ms, out)
        else:
            # Pending member ids going away may end a join phase they held open.
            self._maybe_complete_join(group, now_ms, out)
        if version >= 3:
            response = LeaveGroupResponse(error_code=_E.NONE, members=results)
        else:
            response = LeaveGroupResponse(error_code=results[0].error_code)
        out.reply(token, response)
        return out.outcome()

    def _leave_one(
        self, group: Group, identity: MemberIdentity, out: _Out
    ) -> tuple[ErrorCode, bool]:
        """The member's answer, and whether a member (not a pending id) left."""
        member_id, instance_id = identity.member_id, identity.group_instance_id
        if not member_id:
            # An admin tool removes a static member by its instance id alone.
            if instance_id is None or instance_id not in group.static_members:
                return _E.UNKNOWN_MEMBER_ID, False
            member_id = group.static_members[instance_id]
        elif member_id in group.pending_members:
            group.remove(member_id)
            return _E.NONE, False
        else:
            error = _member_error(group, member_id, instance_id)
            if error is not None:
                return error, False
        self._remove_member(group, group.members[member_id], out)
        return _E.NONE, True

    def _remove_member(self, group: Group, member: Member, out: _Out) -> None:
        """Drop a member, answering what it has parked with UNKNOWN_MEMBER_ID."""
        self._answer_parked(member, _E.UNKNOWN_MEMBER_ID, out)
        group.remove(member.member_id)

    def _answer_parked(self, member: Member, error: ErrorCode, out: _Out) -> None:
        if member.awaiting_join is not None:
            parked, member.awaiting_join = member.awaiting_join, None
            member_id = member.member_id if error is _E.FENCED_INSTANCE_ID else ""
            out.reply(parked.token, _join_error(parked.api_version, error, member_id))
        if member.awaiting_sync is not None:
            parked, member.awaiting_sync = member.awaiting_sync, None
            out.reply(parked.token, SyncGroupResponse(error_code=error))

    def _rebalance_after_removal(self, group: Group, now_ms: int, out: _Out) -> None:
        """Members are gone: a settled group rebalances, a rebalancing one may be done."""
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, now_ms, out)
        else:
            self._maybe_complete_join(group, now_ms, out)

    # --- request checks --------------------------------------------------------------------

    def _live_group(self, group_id: str) -> Group:
        """The group a member request names; refuses a bad id, an unknown or a Dead group."""
        if not group_id:
            raise KafkaError(_E.INVALID_GROUP_ID, "the group id is empty")
        group = self._groups.get(group_id)
        if group is None:
            raise KafkaError(_E.UNKNOWN_MEMBER_ID, f"group {group_id!r} does not exist")
        if group.state is _S.DEAD:
            raise KafkaError(_E.COORDINATOR_NOT_AVAILABLE, f"group {group_id!r} is Dead")
        return group

    def _member_of(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> tuple[Group, Member]:
        """The group and member a SyncGroup or Heartbeat comes from, at this generation."""
        group = self._live_group(group_id)
        error = _member_error(group, member_id, group_instance_id)
        if error is not None:
            raise KafkaError(
                error,
                f"group {group_id!r}: member {member_id!r} (instance {group_instance_id!r})",
            )
        _check_generation(group, generation_id)
        return group, group.members[member_id]

    def _touch(self, member: Member, now_ms: int) -> None:
        """A request from the member: its session runs from now.

        A member waiting in a JoinGroup or SyncGroup keeps what it has (no deadline, or a
        new member's join timeout), as Kafka counts it alive until it is answered.
        """
        if member.awaiting_join is None and member.awaiting_sync is None:
            member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms

    # --- OffsetCommit ----------------------------------------------------------------------

    def commit_offsets(
        self,
        ctx: RequestContext,
        request: OffsetCommitRequest,
        token: int,
        now_ms: int,
        wall_ms: int,
    ) -> Outcome:
        """Write the offsets as records; memory changes only when they are durable.

        Members commit with their generation; generation -1 without a member id commits
        for a group without members (standalone consumers, admin tools), creating it if
        need be. v1: a partition's commit_timestamp other than -1 is its commit time. v2-4:
        retention_time_ms other than -1 sets an expire timestamp. v9: an unknown group with
        a generation is GROUP_ID_NOT_FOUND (ILLEGAL_GENERATION before).
        """
        self._wall_offset_ms = wall_ms - now_ms
        version = ctx.api_version
        group_id = request.group_id
        generation_id = request.generation_id_or_member_epoch
        group = self._groups.get(group_id)
        if group is None:
            if generation_id >= 0:
                code = _E.GROUP_ID_NOT_FOUND if version >= 9 else _E.ILLEGAL_GENERATION
                raise KafkaError(code, f"group {group_id!r} does not exist")
            group = self._groups[group_id] = Group(group_id, _S.EMPTY, now_ms)
        member = self._check_offset_commit(group, generation_id, request)
        if member is not None:
            self._touch(member, now_ms)

        retention_ms = request.retention_time_ms if 2 <= version <= 4 else -1
        expire_ms = None if retention_ms == -1 else wall_ms + retention_ms
        out = _Out()
        topics = []
        for topic in request.topics:
            partitions = []
            for p in topic.partitions:
                metadata = p.committed_metadata
                if metadata is not None and _java_length(metadata) > (
                    self.config.offset_metadata_max_bytes
                ):
                    code = _E.OFFSET_METADATA_TOO_LARGE
                else:
                    code = _E.NONE
                    offset = OffsetAndMetadata(
                        offset=p.committed_offset,
                        leader_epoch=p.committed_leader_epoch,
                        metadata=metadata or "",
                        # v1 may name the commit time; -1 (and every later version): now.
                        commit_timestamp_ms=wall_ms
                        if version != 1 or p.commit_timestamp == -1
                        else p.commit_timestamp,
                        expire_timestamp_ms=expire_ms,
                    )
                    partition = (topic.name, p.partition_index)
                    group.pending_offset_commits[partition] += 1
                    self._emit(
                        out,
                        offset_commit_record(group_id, topic.name, p.partition_index, offset),
                        _CommitWrite(group, partition, offset, token),
                    )
                partitions.append(
                    OffsetCommitResponsePartition(
                        partition_index=p.partition_index, error_code=code
                    )
                )
            topics.append(OffsetCommitResponseTopic(name=topic.name, partitions=partitions))
        out.reply(token, OffsetCommitResponse(topics=topics))
        return out.outcome()

    def _check_offset_commit(
        self, group: Group, generation_id: int, request: OffsetCommitRequest
    ) -> Member | None:
        """Who may commit: the group's members with its generation, or anyone with
        generation -1 while the group has no members. Returns the committing member."""
        if group.state is _S.DEAD:
            raise KafkaError(_E.COORDINATOR_NOT_AVAILABLE, f"group {group.group_id!r} is Dead")
        if generation_id < 0 and group.state is _S.EMPTY:
            return None
        member_id, instance_id = request.member_id, request.group_instance_id
        if generation_id < 0 and not member_id and instance_id is None:
            raise KafkaError(
                _E.UNKNOWN_MEMBER_ID,
                f"group {group.group_id!r} has members: only they may commit",
            )
        error = _member_error(group, member_id, instance_id)
        if error is not None:
            raise KafkaError(error, f"group {group.group_id!r}: member {member_id!r}")
        _check_generation(group, generation_id)
        if group.state is _S.COMPLETING_REBALANCE:
            # The member has this generation's JoinGroup response but no assignment yet.
            raise KafkaError(_E.REBALANCE_IN_PROGRESS, f"group {group.group_id!r}")
        return group.members[member_id]

    # --- OffsetFetch -----------------------------------------------------------------------

    def fetch_offsets(
        self, ctx: RequestContext, request: OffsetFetchRequest, now_ms: int
    ) -> OffsetFetchResponse:
        """Committed offsets from memory (-1 where none). Topics None: every partition the
        group has offsets for. v7 require_stable: UNSTABLE_OFFSET_COMMIT for a partition
        with a commit not yet durable. v8+: many groups per request."""
        stable = request.require_stable
        if ctx.api_version >= 8:
            return OffsetFetchResponse(
                groups=[
                    OffsetFetchResponseGroup(
                        group_id=g.group_id,
                        topics=self._fetch(
                            g.group_id,
                            _wanted(g.topics),
                            stable,
                            OffsetFetchResponseTopics,
                            OffsetFetchResponsePartitions,
                        ),
                    )
                    for g in request.groups
                ]
            )
        return OffsetFetchResponse(
            topics=self._fetch(
                request.group_id,
                _wanted(request.topics),
                stable,
                OffsetFetchResponseTopic,
                OffsetFetchResponsePartition,
            ),
            error_code=_E.NONE,
        )

    def _fetch(
        self,
        group_id: str,
        wanted: list[tuple[str, list[int]]] | None,
        require_stable: bool,
        topic_type: Callable[..., _Topic],
        partition_type: Callable[..., object],
    ) -> list[_Topic]:
        """The answer for one group, in the response shape of the version (v8 renamed the
        nested structs; the fields are the same)."""
        group = self._groups.get(group_id)
        offsets = group.offsets if group is not None else {}
        pending = group.pending_offset_commits if group is not None else {}
        if wanted is None:
            by_topic: dict[str, list[int]] = {}
            for topic, partition in sorted(offsets):
                by_topic.setdefault(topic, []).append(partition)
            wanted = list(by_topic.items())
        result = []
        for topic, partitions in wanted:
            answers = []
            for partition in partitions:
                offset = offsets.get((topic, partition))
                if require_stable and (topic, partition) in pending:
                    code, offset = _E.UNSTABLE_OFFSET_COMMIT, None
                else:
                    code = _E.NONE
                answers.append(
                    partition_type(
                        partition_index=partition,
                        committed_offset=-1 if offset is None else offset.offset,
                        committed_leader_epoch=-1 if offset is None else offset.leader_epoch,
                        metadata="" if offset is None else offset.metadata,
                        error_code=code,
                    )
                )
            result.append(topic_type(name=topic, partitions=answers))
        return result

    # --- DescribeGroups, ListGroups --------------------------------------------------------

    def describe_groups(
        self, ctx: RequestContext, request: DescribeGroupsRequest
    ) -> DescribeGroupsResponse:
        """A group that does not exist is described as Dead, with no error (v0-5).
        Member metadata, assignments and the protocol are given only for Stable groups."""
        operations = AUTHORIZED_OPERATIONS_OMITTED
        if ctx.api_version >= 3 and request.include_authorized_operations:
            operations = GROUP_AUTHORIZED_OPERATIONS
        described = []
        for group_id in request.groups:
            group = self._groups.get(group_id)
            if group is None:
                described.append(
                    DescribedGroup(
                        error_code=_E.NONE,
                        group_id=group_id,
                        group_state=str(_S.DEAD),
                        protocol_type="",
                        protocol_data="",
                        members=[],
                        authorized_operations=operations,
                    )
                )
                continue
            protocol = group.protocol_name if group.state is _S.STABLE else None
            described.append(
                DescribedGroup(
                    error_code=_E.NONE,
                    group_id=group_id,
                    group_state=str(group.state),
                    protocol_type=group.protocol_type or "",
                    protocol_data=protocol or "",
                    members=[
                        DescribedGroupMember(
                            member_id=m.member_id,
                            group_instance_id=m.group_instance_id,
                            client_id=m.client_id,
                            client_host=m.client_host,
                            member_metadata=b"" if protocol is None else m.metadata(protocol),
                            member_assignment=b"" if protocol is None else m.assignment,
                        )
                        for m in group.members.values()
                    ],
                    authorized_operations=operations,
                )
            )
        return DescribeGroupsResponse(groups=described)

    def list_groups(self, ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
        """Every group, filtered by state (v4+, case-insensitive) and by type (v5+: only
        "classic" matches, as every group here is a classic group)."""
        states = (
            {s.strip().lower() for s in request.states_filter} if ctx.api_version >= 4 else set()
        )
        types = {t.lower() for t in request.types_filter} if ctx.api_version >= 5 else set()
        if types and CLASSIC_GROUP_TYPE not in types:
            return ListGroupsResponse(error_code=_E.NONE, groups=[])
        return ListGroupsResponse(
            error_code=_E.NONE,
            groups=[
                ListedGroup(
                    group_id=g.group_id,
                    protocol_type=g.protocol_type or "",
                    group_state=str(g.state),
                    group_type=CLASSIC_GROUP_TYPE,
                )
                for g in self._groups.values()
                if g.state is not _S.DEAD and (not states or str(g.state).lower() in states)
            ],
        )

    # --- DeleteGroups, OffsetDelete --------------------------------------------------------

    def delete_groups(
        self, ctx: RequestContext, request: DeleteGroupsRequest, token: int, now_ms: int
    ) -> Outcome:
        """Delete Empty groups with their offsets (tombstones); NON_EMPTY_GROUP otherwise."""
        out = _Out()
        results = []
        for group_id in dict.fromkeys(request.groups_names):
            group = self._groups.get(group_id)
            if group is None or group.state is _S.DEAD:
                code = _E.GROUP_ID_NOT_FOUND
            elif group.state is _S.EMPTY:
                self._bury(group, [], now_ms, out, token)
                code = _E.NONE
            else:
                code = _E.NON_EMPTY_GROUP
            results.append(DeletableGroupResult(group_id=group_id, error_code=code))
        out.reply(token, DeleteGroupsResponse(results=results))
        return out.outcome()

    def delete_offsets(
        self, ctx: RequestContext, request: OffsetDeleteRequest, token: int, now_ms: int
    ) -> Outcome:
        """Delete committed offsets of an Empty group, or of topics a "consumer" group does
        not subscribe to (GROUP_SUBSCRIBED_TO_TOPIC for those it does)."""
        group_id = request.group_id
        if not group_id:
            raise KafkaError(_E.INVALID_GROUP_ID, "the group id is empty")
        group = self._groups.get(group_id)
        if group is None or group.state is _S.DEAD:
            raise KafkaError(_E.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist")
        if group.state is not _S.EMPTY and group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise KafkaError(_E.NON_EMPTY_GROUP, f"group {group_id!r} has members")
        out = _Out()
        topics = []
        eligible: dict[TopicPartition, None] = {}
        for topic in request.topics:
            subscribed = group.state is not _S.EMPTY and group.is_subscribed_to_topic(topic.name)
            code = _E.GROUP_SUBSCRIBED_TO_TOPIC if subscribed else _E.NONE
            if not subscribed:
                eligible.update(
                    dict.fromkeys((topic.name, p.partition_index) for p in topic.partitions)
                )
            topics.append(
                OffsetDeleteResponseTopic(
                    name=topic.name,
                    partitions=[
                        OffsetDeleteResponsePartition(
                            partition_index=p.partition_index, error_code=code
                        )
                        for p in topic.partitions
                    ],
                )
            )
        removed = [
            tp for tp in eligible if tp in group.offsets or tp in group.pending_offset_commits
        ]
        tombstones = self._drop_offsets(group, removed)
        if group.state is _S.EMPTY and not group.has_offsets():
            self._bury(group, tombstones, now_ms, out, token)
        else:
            self._emit_all(out, tombstones, _TombstoneWrite(None, token))
        out.reply(token, OffsetDeleteResponse(error_code=_E.NONE, topics=topics))
        return out.outcome()

    def _drop_offsets(
        self, group: Group, partitions: list[TopicPartition]
    ) -> list[CoordinatorRecord]:
        """Forget offsets (and cancel commits on their way); their tombstones."""
        wanted = set(partitions)
        for _, effect in self._effects.values():
            if (
                isinstance(effect, _CommitWrite)
                and effect.group is group
                and effect.partition in wanted
            ):
                effect.cancelled = True
        for tp in partitions:
            group.offsets.pop(tp, None)
            group.pending_offset_commits.pop(tp, None)
        return [offset_tombstone(group.group_id, topic, p) for topic, p in partitions]

    def _bury(
        self,
        group: Group,
        tombstones: list[CoordinatorRecord],
        now_ms: int,
        out: _Out,
        token: int | None,
    ) -> None:
        """An Empty group without a future: Dead, with tombstones for what is left of it.

        The group tombstone is written only if a GroupMetadata record may exist (generation
        above 0), as Kafka does. The group leaves memory once the tombstones are written.
        """
        left = sorted(set(group.offsets) | set(group.pending_offset_commits))
        records = tombstones + self._drop_offsets(group, left)
        if group.generation_id > 0:
            records.append(group_tombstone(group.group_id))
        group.pending_members.clear()
        group.join_deadline_ms = group.sync_deadline_ms = None
        group.transition_to(_S.DEAD, now_ms)
        if records:
            self._emit_all(out, records, _TombstoneWrite(group, token))
        else:
            del self._groups[group.group_id]

    # --- after the append ------------------------------------------------------------------

    def on_appended(self, outcome: Outcome, now_ms: int) -> None:
        """The outcome's records are durable: apply the commits, forget Dead groups."""
        for record in outcome.records:
            effect = self._take_effect(record)
            if isinstance(effect, _CommitWrite):
                if not effect.cancelled:
                    _commit_done(effect)
                    effect.group.offsets[effect.partition] = effect.offset
            elif isinstance(effect, _TombstoneWrite) and effect.group is not None:
                self._forget(effect.group)

    def on_append_failed(self, outcome: Outcome, code: ErrorCode, now_ms: int) -> Outcome:
        """The outcome's records could not be written (`code`, a storage error).

        Returns replacement replies for the outcome's tokens (records: none): commits fail
        on every partition written, the SyncGroups of a lost assignment fail and the group
        rebalances, a static member's replacement is undone. Replies that did not depend on
        the records stand.
        """
        group_error = _group_write_error(code)
        out = _Out()
        failed: dict[int, ErrorCode] = {}
        special: dict[int, object] = {}
        for record in outcome.records:
            effect = self._take_effect(record)
            if isinstance(effect, _CommitWrite):
                if not effect.cancelled:
                    _commit_done(effect)
                failed[effect.token] = _offset_write_error(code)
            elif isinstance(effect, _AssignmentWrite):
                group = effect.group
                if (
                    self._groups.get(group.group_id) is group
                    and group.generation_id == effect.generation_id
                    and group.state is _S.STABLE
                ):
                    for member in group.members.values():
                        member.assignment = b""
                    self._prepare_rebalance(group, now_ms, out)
                    assert not out.records, "a Stable group's members must all rejoin first"
                failed.update(dict.fromkeys(effect.tokens, group_error))
            elif isinstance(effect, _StaticMemberWrite):
                special[effect.token] = self._undo_static_member(effect, group_error, now_ms)
            elif isinstance(effect, _TombstoneWrite):
                if effect.group is not None:
                    self._forget(effect.group)
                if effect.token is not None:
                    failed[effect.token] = group_error
        replies = []
        for reply in outcome.replies:
            if reply.token in special:
                replies.append(Reply(reply.token, special[reply.token]))
            elif reply.token in failed:
                replies.append(Reply(reply.token, _with_error(reply.response, failed[reply.token])))
            else:
                replies.append(reply)
        return Outcome(replies=(*replies, *out.replies))

    def _undo_static_member(
        self, effect: _StaticMemberWrite, error: ErrorCode, now_ms: int
    ) -> JoinGroupResponse:
        group = effect.group
        if (
            self._groups.get(group.group_id) is group
            and group.static_members.get(effect.group_instance_id) == effect.new_member_id
        ):
            member = group.members[effect.new_member_id]
            group.update_member(
                member,
                effect.old_protocols,
                effect.old_rebalance_timeout_ms,
                effect.old_session_timeout_ms,
            )
            group.rename_member(effect.new_member_id, effect.old_member_id)
            self._touch(member, now_ms)
        return _join_response(
            effect.api_version,
            error=error,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=effect.leader_before or "",
        )

    def _emit(self, out: _Out, record: CoordinatorRecord, effect: _Effect | None = None) -> None:
        out.records.append(record)
        if effect is not None:
            self._effects[id(record)] = (record, effect)

    def _emit_all(self, out: _Out, records: list[CoordinatorRecord], effect: _Effect) -> None:
        """Records that stand or fall together: the effect rides on the last one."""
        for record in records[:-1]:
            self._emit(out, record)
        if records:
            self._emit(out, records[-1], effect)

    def _take_effect(self, record: CoordinatorRecord) -> _Effect | None:
        entry = self._effects.get(id(record))
        if entry is None or entry[0] is not record:
            return None
        del self._effects[id(record)]
        return entry[1]

    def _forget(self, group: Group) -> None:
        if self._groups.get(group.group_id) is group:
            del self._groups[group.group_id]

    def _state_wall_ms(self, group: Group) -> int:
        wall_ms = group.state_wall_ms(self._wall_offset_ms)
        return -1 if wall_ms is None else wall_ms

    # --- timers ----------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When `expire` next has work (monotonic ms), or None."""
        return min((d[0] for d in self._deadlines()), default=None)

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
        self._wall_offset_ms = wall_ms - now_ms
        out = _Out()
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
                self._expire_offsets(now_ms, wall_ms, out)
                continue
            assert group is not None
            if timer is _Timer.JOIN:
                self._join_deadline(group, now_ms, out)
            elif timer is _Timer.SYNC:
                self._sync_deadline(group, now_ms, out)
            elif timer is _Timer.PENDING_MEMBER:
                group.remove(member_id)
                self._maybe_complete_join(group, now_ms, out)
            else:
                self._session_deadline(group, group.members[member_id], now_ms, out)

    def _join_deadline(self, group: Group, now_ms: int, out: _Out) -> None:
        if group.new_member_added and group.initial_remaining_ms != 0:
            # Initial rebalance, and someone new came: wait another delay (Kafka's
            # InitialDelayedJoin), within what is left of the rebalance timeout.
            group.new_member_added = False
            delay = min(self.config.group_initial_rebalance_delay_ms, group.initial_remaining_ms)
            group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
            group.initial_delay_ms = delay
            group.join_deadline_ms = now_ms + delay
        else:
            self._complete_join(group, now_ms, out)

    def _sync_deadline(self, group: Group, now_ms: int, out: _Out) -> None:
        """Members that got this generation's JoinGroup response but never sent SyncGroup
        are removed, and the group rebalances."""
        group.sync_deadline_ms = None
        assert group.pending_sync_members, "the deadline goes when the last member syncs"
        for member_id in [m for m in group.members if m in group.pending_sync_members]:
            self._remove_member(group, group.members[member_id], out)
        self._prepare_rebalance(group, now_ms, out)

    def _session_deadline(self, group: Group, member: Member, now_ms: int, out: _Out) -> None:
        """A silent member, or a new member whose first JoinGroup waited too long."""
        self._remove_member(group, member, out)
        self._rebalance_after_removal(group, now_ms, out)

    def _expire_offsets(self, now_ms: int, wall_ms: int, out: _Out) -> None:
        """offsets.retention.minutes: tombstone expired offsets; an Empty group with no
        offsets left is Dead (Kafka's cleanupGroupMetadata)."""
        retention_ms = self.config.offsets_retention_minutes * 60_000
        for group in list(self._groups.values()):
            if group.state is _S.DEAD:
                continue
            expired = self._expired_offsets(group, wall_ms, retention_ms)
            tombstones = self._drop_offsets(group, expired)
            if group.state is _S.EMPTY and not group.has_offsets():
                self._bury(group, tombstones, now_ms, out, None)
            else:
                out.records.extend(tombstones)

    def _expired_offsets(
        self, group: Group, wall_ms: int, retention_ms: int
    ) -> list[TopicPartition]:
        """Which offsets have outlived offsets.retention.minutes.

        Standalone commits (a group that never had members) count from their commit time.
        An Empty group's offsets count from the time it became Empty. A Stable "consumer"
        group whose subscriptions are known loses only offsets of topics it no longer
        subscribes to, counting from their commit time. Other groups keep theirs. An offset
        committed with a retention time (OffsetCommit v2-4) expires at its own time.
        """
        base_ms: int | None = None
        skip: frozenset[str] = frozenset()
        if group.protocol_type is not None:
            if group.state is _S.EMPTY:
                base_ms = group.state_wall_ms(self._wall_offset_ms)
            elif (
                group.protocol_type == CONSUMER_PROTOCOL_TYPE
                and group.subscribed_topics is not None
                and group.state is _S.STABLE
            ):
                skip = group.subscribed_topics
            else:
                return []
        expired = []
        for tp, offset in group.offsets.items():
            if tp in group.pending_offset_commits or tp[0] in skip:
                continue
            if offset.expire_timestamp_ms is not None:
                is_expired = wall_ms >= offset.expire_timestamp_ms
            else:
                since_ms = offset.commit_timestamp_ms if base_ms is None else base_ms
                is_expired = wall_ms - since_ms >= retention_ms
            if is_expired:
                expired.append(tp)
        return expired

    # --- load ------------------------------------------------------------------------------

    def replay(self, key_bytes: bytes, value_bytes: bytes | None) -> None:
        """Fold one __consumer_offsets record, in log order, into the state being loaded.

        A tombstone deletes. Record types other than offsets and classic groups (KIP-848
        groups) are skipped, as Kafka skips types it does not know.
        """
        key, value = decode_record(key_bytes, value_bytes)
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
                self._touch(member, now_ms)
        self._retention_check_ms = now_ms


# --- helpers ---------------------------------------------------------------------------------


def _wanted(
    topics: Sequence[OffsetFetchRequestTopic | OffsetFetchRequestTopics] | None,
) -> list[tuple[str, list[int]]] | None:
    return None if topics is None else [(t.name, t.partition_indexes) for t in topics]


def _park_join(member: Member, token: int, api_version: int) -> None:
    """A known member waits in the join phase. It cannot heartbeat meanwhile (Kafka mutes
    the connection), so it is alive until answered, when its session restarts. A new
    member keeps its deadline: its first JoinGroup times out (NEW_MEMBER_JOIN_TIMEOUT_MS)."""
    member.awaiting_join = Parked(token, api_version)
    if not member.is_new:
        member.heartbeat_deadline_ms = None


def _park_sync(member: Member, token: int, api_version: int) -> None:
    """A member waits for the leader's assignment, alive until answered (as _park_join)."""
    member.awaiting_sync = Parked(token, api_version)
    member.heartbeat_deadline_ms = None


def _protocols(request: JoinGroupRequest) -> list[tuple[str, bytes]]:
    return [(p.name, bytes(p.metadata)) for p in request.protocols]


def _protocol_names(request: JoinGroupRequest) -> set[str]:
    return {p.name for p in request.protocols}


def _rebalance_timeout_ms(ctx: RequestContext, request: JoinGroupRequest) -> int:
    """JoinGroup v0 has no rebalance timeout: the session timeout stands in (Kafka)."""
    return request.session_timeout_ms if ctx.api_version == 0 else request.rebalance_timeout_ms


def _member_error(group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
    """Kafka's validateCurrentMember: a static member's instance id must map to the member id
    sent (FENCED_INSTANCE_ID if another holds it); any other member must be known."""
    if group_instance_id is not None:
        current = group.static_members.get(group_instance_id)
        if current is None:
            return _E.UNKNOWN_MEMBER_ID
        return None if current == member_id else _E.FENCED_INSTANCE_ID
    return None if member_id in group.members else _E.UNKNOWN_MEMBER_ID


def _check_generation(group: Group, generation_id: int) -> None:
    if generation_id != group.generation_id:
        raise KafkaError(
            _E.ILLEGAL_GENERATION,
            f"group {group.group_id!r}: generation {generation_id} != {group.generation_id}",
        )


def _join_response(
    version: int,
    *,
    error: ErrorCode = _E.NONE,
    generation_id: int = -1,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    leader: str = "",
    member_id: str = "",
    members: list[JoinGroupResponseMember] | None = None,
    skip_assignment: bool = False,
) -> JoinGroupResponse:
    # protocol_name is nullable from v7: Kafka sends null there for "none" and "" below.
    if version < 7 and protocol_name is None:
        protocol_name = ""
    elif version >= 7 and protocol_name == "":
        protocol_name = None
    return JoinGroupResponse(
        error_code=error,
        generation_id=generation_id,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        leader=leader,
        skip_assignment=skip_assignment,
        member_id=member_id,
        members=members or [],
    )


def _join_error(version: int, error: ErrorCode, member_id: str) -> JoinGroupResponse:
    return _join_response(version, error=error, member_id=member_id)


def _java_length(text: str) -> int:
    """String.length() in Java: UTF-16 code units (what offset.metadata.max.bytes counts)."""
    return len(text.encode("utf-16-le")) // 2


def _commit_done(effect: _CommitWrite) -> None:
    pending = effect.group.pending_offset_commits
    pending[effect.partition] -= 1
    if pending[effect.partition] <= 0:
        del pending[effect.partition]


def _group_write_error(code: ErrorCode) -> ErrorCode:
    """A failed __consumer_offsets write, as Kafka reports it to group requests."""
    if code in (
        _E.UNKNOWN_TOPIC_OR_PARTITION,
        _E.NOT_ENOUGH_REPLICAS,
        _E.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        _E.REQUEST_TIMED_OUT,
    ):
        return _E.COORDINATOR_NOT_AVAILABLE
    if code in (_E.NOT_LEADER_OR_FOLLOWER, _E.KAFKA_STORAGE_ERROR):
        return _E.NOT_COORDINATOR
    if code in (_E.MESSAGE_SIZE_TOO_LARGE, _E.RECORD_LIST_TOO_LARGE, _E.INVALID_FETCH_SIZE):
        return _E.UNKNOWN_SERVER_ERROR
    return code


def _offset_write_error(code: ErrorCode) -> ErrorCode:
    """The same for OffsetCommit, where a record too large is INVALID_COMMIT_OFFSET_SIZE.

    We differ from Kafka for a failed disk: Kafka answers NOT_COORDINATOR (its coordinator
    may move to a healthy broker); kmock is the only broker, so it says what happened,
    KAFKA_STORAGE_ERROR, which clients treat as retriable as well.
    """
    if code in (_E.MESSAGE_SIZE_TOO_LARGE, _E.RECORD_LIST_TOO_LARGE, _E.INVALID_FETCH_SIZE):
        return _E.INVALID_COMMIT_OFFSET_SIZE
    if code == _E.KAFKA_STORAGE_ERROR:
        return code
    return _group_write_error(code)


def _with_error(response: object, error: ErrorCode) -> object:
    """A reply whose records were not written, failed where its API keeps errors."""
    if isinstance(response, OffsetCommitResponse):
        return OffsetCommitResponse(
            topics=[
                OffsetCommitResponseTopic(
                    name=t.name,
                    partitions=[
                        OffsetCommitResponsePartition(
                            partition_index=p.partition_index,
                            error_code=error if p.error_code == _E.NONE else p.error_code,
                        )
                        for p in t.partitions
                    ],
                )
                for t in response.topics
            ]
        )
    if isinstance(response, SyncGroupResponse):
        return SyncGroupResponse(error_code=error)
    if isinstance(response, DeleteGroupsResponse):
        return DeleteGroupsResponse(
            results=[
                DeletableGroupResult(
                    group_id=r.group_id,
                    error_code=error if r.error_code == _E.NONE else r.error_code,
                )
                for r in response.results
            ]
        )
    assert isinstance(response, OffsetDeleteResponse), response
    return OffsetDeleteResponse(error_code=error)


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
