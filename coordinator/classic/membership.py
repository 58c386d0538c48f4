"""ClassicMembership: join, sync, heartbeat, leave, rebalance and static members.

The classic-protocol part of Kafka's GroupMetadataManager (its classicGroupJoin,
classicGroupSync, classicGroupHeartbeat, classicGroupLeave and the rebalance timers). The
theory of operation and how each state answers each request are in `classic/state.py`; the
rules that need no request (leader, protocol vote, subscriptions) are on `Group`.

It shares the group map with the facade (`coordinator.coordinator`) and the offsets
manager, and hands its records to `Writes`, which keeps what must happen once they are
durable (a SyncGroup's assignment, a static member replaced without a rebalance).
"""

from __future__ import annotations

import uuid
from dataclasses import replace

from coordinator.classic.group import (
    Group,
    Member,
    Parked,
    check_generation,
    leave_each,
    member_error,
    touch,
)
from coordinator.classic.state import GroupState
from coordinator.clock import WallClock
from coordinator.config import CoordinatorConfig
from coordinator.outcome import GenerationStarted, Outcome, OutcomeBuilder, Reply, RequestContext
from coordinator.records import group_metadata_record
from coordinator.writes import AssignmentWrite, StaticMemberWrite, Writes
from protocol.errors import ErrorCode, KafkaError
from protocol.messages import join_group, sync_group
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupResponse,
    JoinGroupResponseMember,
)
from protocol.messages.leave_group import (
    LeaveGroupRequest,
    MemberIdentity,
)
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse

__all__ = ["NEW_MEMBER_JOIN_TIMEOUT_MS", "ClassicMembership"]

_S = GroupState
_E = ErrorCode

# Kafka's GroupCoordinator.NewMemberJoinTimeoutMs: a new member's first JoinGroup is given
# up after this long (it cannot heartbeat while parked, and a retry would leave a ghost).
NEW_MEMBER_JOIN_TIMEOUT_MS = 5 * 60 * 1000


class ClassicMembership:
    def __init__(
        self,
        config: CoordinatorConfig,
        groups: dict[str, Group],
        writes: Writes,
        clock: WallClock,
    ) -> None:
        self.config = config
        self.groups = groups  # shared with the facade, which owns it
        self.writes = writes
        self.clock = clock

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
        out = OutcomeBuilder()
        version = ctx.api_version
        group_id, member_id = request.group_id, request.member_id
        if not group_id:
            out.reply(token, _join_error(request, version, _E.INVALID_GROUP_ID, member_id))
            return out.outcome()
        cfg = self.config
        timeout = request.session_timeout_ms
        if not cfg.group_min_session_timeout_ms <= timeout <= cfg.group_max_session_timeout_ms:
            out.reply(token, _join_error(request, version, _E.INVALID_SESSION_TIMEOUT, member_id))
            return out.outcome()
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                out.reply(token, _join_error(request, version, _E.UNKNOWN_MEMBER_ID, member_id))
                return out.outcome()
            group = self.groups[group_id] = Group(group_id, _S.EMPTY, now_ms)

        if not self._accepts_joining_member(group, member_id):
            group.remove(member_id)
            out.reply(token, _join_error(request, version, _E.GROUP_MAX_SIZE_REACHED, ""))
        elif not member_id:
            self._join_new_member(ctx, request, group, token, now_ms, out)
        else:
            self._join_known_member(ctx, request, group, token, now_ms, out)
        self.maybe_complete_join(group, now_ms, out)
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
        out: OutcomeBuilder,
    ) -> None:
        version = ctx.api_version
        if group.state is _S.DEAD:
            out.reply(token, _join_error(request, version, _E.COORDINATOR_NOT_AVAILABLE, ""))
            return
        if not group.supports_protocols(request.protocol_type, _protocol_names(request)):
            out.reply(token, _join_error(request, version, _E.INCONSISTENT_GROUP_PROTOCOL, ""))
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
            out.reply(token, _join_error(request, version, _E.MEMBER_ID_REQUIRED, new_member_id))
        else:
            self._add_member(ctx, request, group, new_member_id, token, now_ms, out)

    def _join_known_member(
        self,
        ctx: RequestContext,
        request: JoinGroupRequest,
        group: Group,
        token: int,
        now_ms: int,
        out: OutcomeBuilder,
    ) -> None:
        version, member_id = ctx.api_version, request.member_id
        if group.state is _S.DEAD:
            out.reply(token, _join_error(request, version, _E.COORDINATOR_NOT_AVAILABLE, member_id))
            return
        if not group.supports_protocols(request.protocol_type, _protocol_names(request)):
            out.reply(
                token, _join_error(request, version, _E.INCONSISTENT_GROUP_PROTOCOL, member_id)
            )
            return
        # A pending member is dynamic. Kafka fails (UNKNOWN_SERVER_ERROR) on a pending id sent
        # with a group_instance_id; here that request meets the static-member checks instead.
        if member_id in group.pending_members and request.group_instance_id is None:
            self._add_member(ctx, request, group, member_id, token, now_ms, out)
            return
        error = member_error(group, member_id, request.group_instance_id)
        if error is not None:
            out.reply(token, _join_error(request, version, error, member_id))
            return
        member = group.members[member_id]
        touch(member, now_ms)
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
        out: OutcomeBuilder,
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
            awaiting_join=Parked(token, ctx.api_version, request),
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
        out: OutcomeBuilder,
    ) -> None:
        if member.awaiting_join is not None:
            superseded = member.awaiting_join
            out.reply(
                superseded.token,
                _join_error(
                    superseded.request,
                    superseded.api_version,
                    _E.REBALANCE_IN_PROGRESS,
                    member.member_id,
                ),
            )
        group.update_member(
            member,
            _protocols(request),
            _rebalance_timeout_ms(ctx, request),
            request.session_timeout_ms,
        )
        _park_join(member, token, ctx.api_version, request)
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
        out: OutcomeBuilder,
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
        _park_join(member, token, version, request)

        if group.state is _S.STABLE:
            if group.protocol_name != group.select_protocol():
                self.prepare_rebalance(group, now_ms, out)
                return
            # Same protocol: no rebalance. Persist the new member id, keep the assignment.
            member.awaiting_join = None
            touch(member, now_ms)
            assignment = {m.member_id: m.assignment for m in group.members.values()}
            record = group_metadata_record(group, assignment, self.clock.state_wall_ms(group))
            self.writes.emit(
                out,
                record,
                StaticMemberWrite(
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
            self.prepare_rebalance(group, now_ms, out)
        # PreparingRebalance: the member waits with the others.

    # --- rebalance -------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, now_ms: int, out: OutcomeBuilder) -> None:
        if group.can_rebalance():
            self.prepare_rebalance(group, now_ms, out)

    def prepare_rebalance(self, group: Group, now_ms: int, out: OutcomeBuilder) -> None:
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

    def maybe_complete_join(self, group: Group, now_ms: int, out: OutcomeBuilder) -> None:
        """End the join phase if everyone has rejoined (never early in an initial rebalance)."""
        if (
            group.state is _S.PREPARING_REBALANCE
            and group.previous_state is not _S.EMPTY
            and group.has_all_members_joined()
        ):
            self._complete_join(group, now_ms, out)

    def _complete_join(self, group: Group, now_ms: int, out: OutcomeBuilder) -> None:
        group.join_deadline_ms = None
        group.new_member_added = False
        group.initial_remaining_ms = 0
        # Dynamic members that did not rejoin are gone; static ones keep their place.
        for member in list(group.members.values()):
            if member.awaiting_join is None and member.group_instance_id is None:
                self.remove_member(group, member, out)
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
            self.writes.emit(out, group_metadata_record(group, {}, self.clock.state_wall_ms(group)))
            out.generations.append(_generation_started(group))
            return
        group.protocol_name = group.select_protocol()
        group.subscribed_topics = group.compute_subscribed_topics()
        group.transition_to(_S.COMPLETING_REBALANCE, now_ms)
        out.generations.append(_generation_started(group))
        for member in group.members.values():
            if member.awaiting_join is not None:
                parked, member.awaiting_join = member.awaiting_join, None
                out.reply(parked.token, self._join_result(parked.api_version, group, member))
            touch(member, now_ms)
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
        self, group: Group, error: ErrorCode, now_ms: int, out: OutcomeBuilder
    ) -> list[Parked[SyncGroupRequest]]:
        """Answer every parked SyncGroup: its assignment, or `error`. Returns them."""
        answered = []
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
                response = sync_group.error_response(parked.request, error, parked.api_version)
            out.reply(parked.token, response)
            answered.append(parked)
            touch(member, now_ms)
        return answered

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
        out = OutcomeBuilder()
        if group.state is _S.PREPARING_REBALANCE:
            out.reply(
                token,
                sync_group.error_response(request, _E.REBALANCE_IN_PROGRESS, ctx.api_version),
            )
        elif group.state is _S.COMPLETING_REBALANCE:
            superseded = member.awaiting_sync
            if superseded is not None:
                out.reply(
                    superseded.token,
                    sync_group.error_response(
                        superseded.request, _E.REBALANCE_IN_PROGRESS, superseded.api_version
                    ),
                )
            _park_sync(member, token, ctx.api_version, request)
            self._synced(group, member)
            if group.is_leader(member.member_id):
                self._store_assignment(group, request, now_ms, out)
        else:
            assert group.state is _S.STABLE  # an Empty group has no member to validate
            self._synced(group, member)
            touch(member, now_ms)
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
        self, group: Group, request: SyncGroupRequest, now_ms: int, out: OutcomeBuilder
    ) -> None:
        """The leader's assignment: members it left out get an empty one."""
        sent = {a.member_id: bytes(a.assignment) for a in request.assignments}
        assignment = {member_id: sent.get(member_id, b"") for member_id in group.members}
        # Written as the group stands before Stable, as Kafka writes it.
        record = group_metadata_record(group, assignment, self.clock.state_wall_ms(group))
        for member_id, member in group.members.items():
            member.assignment = assignment[member_id]
        group.transition_to(_S.STABLE, now_ms)
        parked = self._propagate_assignment(group, _E.NONE, now_ms, out)
        self.writes.emit(out, record, AssignmentWrite(group, group.generation_id, tuple(parked)))

    # --- Heartbeat, LeaveGroup -------------------------------------------------------------

    def heartbeat(
        self, ctx: RequestContext, request: HeartbeatRequest, token: int, now_ms: int
    ) -> Outcome:
        """Keep the member's session alive; REBALANCE_IN_PROGRESS tells it to rejoin."""
        group, member = self._member_of(
            request.group_id, request.member_id, request.group_instance_id, request.generation_id
        )
        touch(member, now_ms)
        rebalancing = group.state is _S.PREPARING_REBALANCE
        code = _E.REBALANCE_IN_PROGRESS if rebalancing else _E.NONE
        return Outcome(replies=(Reply(token, HeartbeatResponse(error_code=code)),))

    def leave(
        self, ctx: RequestContext, request: LeaveGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        """Remove members, by member id or (v3+, for admin tools) by group_instance_id alone.

        v0-2 name one member and carry its error at the top level; v3+ answer per member.
        """
        out = OutcomeBuilder()
        group = self.live_group(request.group_id)
        response, codes = leave_each(
            ctx.api_version, request, lambda identity: self._leave_one(group, identity, out)
        )
        if _E.NONE in codes:
            # Kafka 4.x (classicGroupLeaveToClassicGroup): a pending member id that leaves
            # counts as a member that left, so a Stable group rebalances (3.x only ended a
            # join phase the id held open); a rebalancing group ends its join phase if
            # everyone left has joined, except during the initial delay.
            if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
                self.prepare_rebalance(group, now_ms, out)
            else:
                self.maybe_complete_join(group, now_ms, out)
        out.reply(token, response)
        return out.outcome()

    def _leave_one(self, group: Group, identity: MemberIdentity, out: OutcomeBuilder) -> ErrorCode:
        """The member's answer; NONE when a member or a pending member id left."""
        member_id, instance_id = identity.member_id, identity.group_instance_id
        if not member_id:
            # An admin tool removes a static member by its instance id alone.
            if instance_id is None or instance_id not in group.static_members:
                return _E.UNKNOWN_MEMBER_ID
            member_id = group.static_members[instance_id]
        elif member_id in group.pending_members:
            group.remove(member_id)
            return _E.NONE
        else:
            error = member_error(group, member_id, instance_id)
            if error is not None:
                return error
        self.remove_member(group, group.members[member_id], out)
        return _E.NONE

    def remove_member(self, group: Group, member: Member, out: OutcomeBuilder) -> None:
        """Drop a member, answering what it has parked with UNKNOWN_MEMBER_ID."""
        self._answer_parked(member, _E.UNKNOWN_MEMBER_ID, out)
        group.remove(member.member_id)

    def _answer_parked(self, member: Member, error: ErrorCode, out: OutcomeBuilder) -> None:
        if member.awaiting_join is not None:
            parked, member.awaiting_join = member.awaiting_join, None
            member_id = member.member_id if error is _E.FENCED_INSTANCE_ID else ""
            out.reply(
                parked.token,
                _join_error(parked.request, parked.api_version, error, member_id),
            )
        if member.awaiting_sync is not None:
            syncing, member.awaiting_sync = member.awaiting_sync, None
            out.reply(
                syncing.token,
                sync_group.error_response(syncing.request, error, syncing.api_version),
            )

    def _rebalance_after_removal(self, group: Group, now_ms: int, out: OutcomeBuilder) -> None:
        """A timer removed a member: a settled group rebalances, a rebalancing one may be
        done (Kafka's removeMemberAndUpdateClassicGroup)."""
        if group.state in (_S.STABLE, _S.COMPLETING_REBALANCE):
            self.prepare_rebalance(group, now_ms, out)
        else:
            self.complete_join_if_all_joined(group, now_ms, out)

    def complete_join_if_all_joined(self, group: Group, now_ms: int, out: OutcomeBuilder) -> None:
        """After a timer removed a member or a pending member id: end the join phase if
        everyone left has joined, the initial one's delay included. Kafka 4.x does so
        (removeMemberAndUpdateClassicGroup, removePendingMemberAndUpdateClassicGroup);
        3.x waited the initial delay out (its InitialDelayedJoin never completed early)."""
        if group.state is _S.PREPARING_REBALANCE and group.has_all_members_joined():
            self._complete_join(group, now_ms, out)

    # --- request checks --------------------------------------------------------------------

    def live_group(self, group_id: str) -> Group:
        """The group a member request names; refuses a bad id, an unknown or a Dead group."""
        if not group_id:
            raise KafkaError(_E.INVALID_GROUP_ID, "the group id is empty")
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(_E.UNKNOWN_MEMBER_ID, f"group {group_id!r} does not exist")
        if group.state is _S.DEAD:
            raise KafkaError(_E.COORDINATOR_NOT_AVAILABLE, f"group {group_id!r} is Dead")
        return group

    def _member_of(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> tuple[Group, Member]:
        """The group and member a SyncGroup or Heartbeat comes from, at this generation."""
        group = self.live_group(group_id)
        error = member_error(group, member_id, group_instance_id)
        if error is not None:
            raise KafkaError(
                error,
                f"group {group_id!r}: member {member_id!r} (instance {group_instance_id!r})",
            )
        check_generation(group, generation_id)
        return group, group.members[member_id]

    # --- timers ---------------------------------------------------------------------------

    def join_deadline(self, group: Group, now_ms: int, out: OutcomeBuilder) -> None:
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

    def sync_deadline(self, group: Group, now_ms: int, out: OutcomeBuilder) -> None:
        """Members that got this generation's JoinGroup response but never sent SyncGroup
        are removed, and the group rebalances."""
        group.sync_deadline_ms = None
        assert group.pending_sync_members, "the deadline goes when the last member syncs"
        for member_id in [m for m in group.members if m in group.pending_sync_members]:
            self.remove_member(group, group.members[member_id], out)
        self.prepare_rebalance(group, now_ms, out)

    def session_deadline(
        self, group: Group, member: Member, now_ms: int, out: OutcomeBuilder
    ) -> None:
        """A silent member, or a new member whose first JoinGroup waited too long."""
        self.remove_member(group, member, out)
        self._rebalance_after_removal(group, now_ms, out)

    # --- after a failed write -------------------------------------------------------------

    def undo_static_member(
        self, effect: StaticMemberWrite, error: ErrorCode, now_ms: int
    ) -> JoinGroupResponse:
        group = effect.group
        if (
            self.groups.get(group.group_id) is group
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
            touch(member, now_ms)
        return _join_response(
            effect.api_version,
            error=error,
            generation_id=group.generation_id,
            protocol_type=group.protocol_type,
            protocol_name=group.protocol_name,
            leader=effect.leader_before or "",
        )


# --- helpers ---------------------------------------------------------------------------------


def _generation_started(group: Group) -> GenerationStarted:
    return GenerationStarted(
        group_id=group.group_id,
        generation_id=group.generation_id,
        members=len(group.members),
        protocol_type=group.protocol_type,
        protocol_name=group.protocol_name,
        leader_id=group.leader_id,
    )


def _park_join(member: Member, token: int, api_version: int, request: JoinGroupRequest) -> None:
    """A known member waits in the join phase. It cannot heartbeat meanwhile (Kafka mutes
    the connection), so it is alive until answered, when its session restarts. A new
    member keeps its deadline: its first JoinGroup times out (NEW_MEMBER_JOIN_TIMEOUT_MS)."""
    member.awaiting_join = Parked(token, api_version, request)
    if not member.is_new:
        member.heartbeat_deadline_ms = None


def _park_sync(member: Member, token: int, api_version: int, request: SyncGroupRequest) -> None:
    """A member waits for the leader's assignment, alive until answered (as _park_join)."""
    member.awaiting_sync = Parked(token, api_version, request)
    member.heartbeat_deadline_ms = None


def _protocols(request: JoinGroupRequest) -> list[tuple[str, bytes]]:
    return [(p.name, bytes(p.metadata)) for p in request.protocols]


def _protocol_names(request: JoinGroupRequest) -> set[str]:
    return {p.name for p in request.protocols}


def _rebalance_timeout_ms(ctx: RequestContext, request: JoinGroupRequest) -> int:
    """JoinGroup v0 has no rebalance timeout: the session timeout stands in (Kafka)."""
    return request.session_timeout_ms if ctx.api_version == 0 else request.rebalance_timeout_ms


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


def _join_error(
    request: JoinGroupRequest, version: int, error: ErrorCode, member_id: str
) -> JoinGroupResponse:
    """JoinGroup's error_response, with the member id the error is about (the one sent, or
    the one assigned with MEMBER_ID_REQUIRED), which Kafka's error answers carry."""
    response = join_group.error_response(request, error, version)
    # Messages are dataclasses at runtime (protocol.schema.Struct); mypy cannot see it.
    return replace(response, member_id=member_id)  # type: ignore[type-var]
