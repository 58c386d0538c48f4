"""Online migration between the classic and the consumer group protocol, and the requests
of one protocol to a group of the other (group.consumer.migration.policy).

Kafka's GroupMetadataManager decides it (getOrMaybeCreateConsumerGroup, validateOnlineUpgrade,
convertToConsumerGroup, classicGroupJoin/Sync/Heartbeat/LeaveToConsumerGroup,
validateOnlineDowngradeWithFencedMembers, convertToClassicGroup), with ConsumerGroup
.fromClassicGroup and ClassicGroup.fromConsumerGroup. One group id names one group:

  ConsumerGroupHeartbeat to a classic group
      Empty (no member)           the classic group's metadata is tombstoned, its offsets
                                  stay, a consumer group starts (every policy)
      with members, epoch 0       upgrade (policy upgrade/bidirectional; protocol type
                                  "consumer"; no more members than group.consumer.max.size):
                                  GroupMetadata tombstone, then the consumer group's records
                                  (each member's subscription, the group epoch = the
                                  generation, each member's target = its current assignment
                                  decoded from its ConsumerProtocol bytes (kmock: plus what
                                  its JoinGroup reports owning, see
                                  _with_reported_partitions), the assignment epoch, each
                                  member's current assignment at the generation).
                                  Parked JoinGroups/SyncGroups get REBALANCE_IN_PROGRESS; the
                                  joining member bumps the group epoch, so the classic
                                  members are asked to rejoin at their next heartbeat.
                                  Refused: GROUP_ID_NOT_FOUND with Kafka's message.
      otherwise                   GROUP_ID_NOT_FOUND "Group g is not a consumer group."
  JoinGroup/SyncGroup/Heartbeat/LeaveGroup to a consumer group
      no member                   JoinGroup: the consumer group goes, a classic group
                                  starts; the others: UNKNOWN_MEMBER_ID
      with members                served inside it (coordinator/consumer/classic.py)
  Downgrade: members leave or are fenced (ConsumerGroupHeartbeat -1, LeaveGroup, session,
      rebalance, join or sync timeout) and every remaining member is classic (at least one),
      with policy downgrade/bidirectional and no more than group.max.size members: the
      consumer group's tombstones, then a GroupMetadata record of a Stable classic group at
      generation = the group epoch whose members have the partitions they own (Kafka: their
      target assignment; see _downgrade), and a rebalance (PreparingRebalance).

The consumer group's committed offsets are kept on a classic `Group` that only holds them
(coordinator.py); a conversion moves them to the new group object with their commits on
the way.

Memory changes before the records are written (the consumer group applies its records as
it builds them; a conversion swaps group objects at once). Each call that may change a
consumer group, or convert one, saves the groups it touches first (`save`) and `seal`s its
records with an `UndoWrite`: should they not be written, the groups are put back and the
request gets the error Kafka's GroupCoordinatorService makes of the failed append, as
Kafka's runtime reverts to the last written offset. A classic JoinGroup to an empty
consumer group (which goes, for a classic group) is not undone.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence

from coordinator.classic.group import CONSUMER_PROTOCOL_TYPE, Group, Member, leave_each, touch
from coordinator.classic.membership import ClassicMembership
from coordinator.classic.state import GroupState
from coordinator.clock import WallClock
from coordinator.config import CoordinatorConfig
from coordinator.consumer import ConsumerGroup, ConsumerGroupCoordinator, TopicImage
from coordinator.consumer import classic as classic_members
from coordinator.consumer import records as r
from coordinator.consumer import saved as consumer_saved
from coordinator.consumer.member import (
    ClassicMemberMetadata,
    ConsumerGroupMember,
    new_member_id,
)
from coordinator.outcome import AnyRecord, Outcome, OutcomeBuilder, Reply, RequestContext
from coordinator.records import group_metadata_record, group_tombstone
from coordinator.writes import TombstoneWrite, UndoWrite, Writes
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.errors import ErrorCode, KafkaError
from protocol.messages import join_group
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse
from protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
)
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse
from protocol.primitives import DecodeError

__all__ = ["Migration"]

# A group saved before a change: the consumer group (and its timers), the classic Group
# object that held the id, and that one's protocol type, name and leader.
_Saved = tuple[consumer_saved.SavedGroup, Group | None, tuple[str | None, ...]]

_S = GroupState
_E = ErrorCode


class Migration:
    """The requests that cross group types, and the conversions (see the module doc)."""

    def __init__(
        self,
        config: CoordinatorConfig,
        groups: dict[str, Group],
        consumer: ConsumerGroupCoordinator,
        membership: ClassicMembership,
        writes: Writes,
        clock: WallClock,
    ) -> None:
        self.config = config
        self.groups = groups  # shared with the facade, which owns it
        self.consumer = consumer
        self.membership = membership
        self.writes = writes
        self.clock = clock
        # The topics as the broker sees them, for a classic member's subscription; set by
        # the broker, else the last seen by a ConsumerGroupHeartbeat.
        self.topic_images: Callable[[], Mapping[str, TopicImage]] | None = None
        self._last_topics: Mapping[str, TopicImage] = {}
        # The time of the call being handled: the consumer coordinator's fencing (which may
        # downgrade) carries none.
        self.now_ms = 0
        # What the call being handled changed, as it was before (see `save`).
        self._saved: dict[str, _Saved] = {}
        consumer.downgrade = self._downgrade
        consumer.saving = self.save

    def topics(self) -> Mapping[str, TopicImage]:
        return self._last_topics if self.topic_images is None else self.topic_images()

    # --- undo: memory changes only with what is written ----------------------------------

    def begin(self) -> None:
        """A call starts: nothing of it is saved yet."""
        self._saved = {}

    def save(self, group_id: str) -> None:
        """Keep the group (of either type) as it is, once per call, so that `seal` can
        undo the call's changes should its records not be written."""
        if group_id not in self._saved:
            classic = self.groups.get(group_id)
            fields = (
                ()
                if classic is None
                else (classic.protocol_type, classic.protocol_name, classic.leader_id)
            )
            self._saved[group_id] = (consumer_saved.save(self.consumer, group_id), classic, fields)

    def seal(
        self,
        records: Sequence[AnyRecord],
        reply: tuple[int, Callable[[ErrorCode], object]] | None = None,
    ) -> None:
        """The call is done: should `records` not be written, the groups it saved are put
        back and `reply` (token, the answer given the error) replaces its answer."""
        saved, self._saved = self._saved, {}
        if saved and records:
            left = {group_id: self._as_left(group_id) for group_id in saved}
            undo = UndoWrite(lambda now_ms: self._undo(saved, now_ms, left), reply)
            self.writes.attach(records[-1], undo)

    def _as_left(self, group_id: str) -> tuple[object, ...]:
        """The group as a call left it, to tell whether a later call changed it."""
        consumer = self.consumer.groups.get(group_id)
        classic = self.groups.get(group_id)
        return (
            None if consumer is None else vars(consumer.copy()),
            classic,
            None
            if classic is None
            else (classic.state, classic.generation_id, tuple(classic.members)),
        )

    def undo_now(self, now_ms: int) -> None:
        """The call failed: put back what it changed."""
        saved, self._saved = self._saved, {}
        self._undo(saved, now_ms)

    def _undo(
        self,
        saved: Mapping[str, _Saved],
        now_ms: int,
        left: Mapping[str, tuple[object, ...]] | None = None,
    ) -> None:
        for group_id, (consumer, classic, fields) in saved.items():
            if left is not None and self._as_left(group_id) != left[group_id]:
                # A later call changed the group on top of this one (an append whose
                # failure is known only after an fsync, in the strict durability mode):
                # it stays as it is, as before undoing existed.
                continue
            current = self.groups.get(group_id)
            if current is not classic:
                if current is not None and classic is not None:
                    _move_offsets(current, classic, self.writes)
                if classic is None:
                    self.groups.pop(group_id, None)
                else:
                    self.groups[group_id] = classic
            if classic is not None and fields:
                classic.protocol_type, classic.protocol_name, classic.leader_id = fields
            consumer_saved.restore(self.consumer, consumer, now_ms)

    # --- ConsumerGroupHeartbeat: upgrade -----------------------------------------------

    def consumer_group_heartbeat(
        self,
        ctx: RequestContext,
        request: ConsumerGroupHeartbeatRequest,
        token: int,
        now_ms: int,
        wall_ms: int,
        topics_metadata: Mapping[str, TopicImage],
    ) -> Outcome:
        """ConsumerGroupHeartbeat, to a consumer group, none, or a classic group."""
        self.now_ms = now_ms
        self._last_topics = topics_metadata
        group_id = request.group_id
        self.begin()
        self.save(group_id)
        classic = None if group_id in self.consumer.groups else self.groups.get(group_id)
        if classic is not None and classic.state is _S.DEAD:
            raise KafkaError(_E.COORDINATOR_NOT_AVAILABLE, f"group {group_id!r} is Dead")
        upgrade: list[AnyRecord] = []
        out = OutcomeBuilder()
        empty = classic is not None and not classic.members and not classic.pending_members
        if classic is not None and not empty:
            if request.member_epoch != 0:
                raise KafkaError(
                    _E.GROUP_ID_NOT_FOUND, f"Group {group_id} is not a consumer group."
                )
            self.consumer._validate(request, ctx.api_version)  # before anything changes
            upgrade = self._upgrade(classic, topics_metadata, now_ms)
        try:
            result = self.consumer.consumer_group_heartbeat(
                request,
                now_ms,
                topics_metadata,
                version=ctx.api_version,
                client_id=ctx.client_id,
                client_host=ctx.client_host,
                wall_ms=wall_ms,
                describable=ctx.describable,
            )
        except KafkaError:
            self.undo_now(now_ms)  # the heartbeat failed: the groups stay as they were
            raise
        records: list[AnyRecord] = [*upgrade, *result.records]
        if classic is not None and not empty:
            # convertToConsumerGroup: waiting requests learn of the new rebalance.
            for member in classic.members.values():
                self.membership._answer_parked(member, _E.REBALANCE_IN_PROGRESS, out)
            self._keep_offsets_only(classic, now_ms)
        elif classic is not None and classic.protocol_type is not None:
            # An empty classic group's metadata goes; the Group stays, holding the offsets.
            records.insert(0, group_tombstone(group_id))
            classic.protocol_type = classic.protocol_name = classic.leader_id = None
        out.reply(token, result.response)
        self.seal(records, (token, _failed_heartbeat))
        return out.outcome()._replace(records=tuple(records))

    def _upgrade(
        self, classic: Group, topics_metadata: Mapping[str, TopicImage], now_ms: int
    ) -> list[AnyRecord]:
        """validateOnlineUpgrade + convertToConsumerGroup: the records (the consumer
        group's are applied at once; the caller replaces the classic group on success)."""
        group_id = classic.group_id
        cannot = f"Cannot upgrade classic group {group_id} to consumer group because"
        if not self.consumer.config.migration_policy.is_upgrade_enabled:
            raise KafkaError(_E.GROUP_ID_NOT_FOUND, f"{cannot} online upgrade is disabled.")
        if classic.protocol_type != CONSUMER_PROTOCOL_TYPE:
            raise KafkaError(
                _E.GROUP_ID_NOT_FOUND,
                f"{cannot} the group does not use the consumer embedded protocol.",
            )
        if len(classic.members) > self.consumer.config.max_size:
            raise KafkaError(
                _E.GROUP_ID_NOT_FOUND,
                f"{cannot} the group size exceeds the consumer group maximum size.",
            )
        members = _with_reported_partitions(
            [
                self._from_classic_member(classic, m, topics_metadata)
                for m in classic.members.values()
            ]
        )
        group = ConsumerGroup(group_id)
        self.consumer.groups[group_id] = group
        out: list[r.ConsumerGroupRecord] = []
        generation = classic.generation_id
        for m in members:
            self.consumer._write(out, r.member_subscription_record(group_id, m))
        self.consumer._write(out, r.group_epoch_record(group_id, generation))
        for m in members:
            self.consumer._write(
                out, r.target_assignment_record(group_id, m.member_id, m.assigned_partitions)
            )
        self.consumer._write(out, r.target_assignment_epoch_record(group_id, generation))
        for m in members:
            self.consumer._write(out, r.current_assignment_record(group_id, m))
        for m in group.members.values():
            self.consumer.touch(group_id, m, now_ms)
        return [group_tombstone(group_id), *out]

    def _from_classic_member(
        self, classic: Group, member: Member, topics_metadata: Mapping[str, TopicImage]
    ) -> tuple[ConsumerGroupMember, dict[uuid.UUID, frozenset[int]]]:
        """A classic member as a consumer group member (ConsumerGroup.fromClassicGroup):
        Stable at the generation, with the assignment it has; and the partitions its last
        JoinGroup reported owning (see _with_reported_partitions)."""
        group_id = classic.group_id
        protocol = classic.protocol_name or member.protocols[0][0]
        assigned: dict[uuid.UUID, frozenset[int]] = {}
        reported: dict[uuid.UUID, frozenset[int]] = {}
        try:
            subscription = decode_subscription(member.metadata(protocol))
            for tp in subscription.owned_partitions:
                if tp.topic in topics_metadata and tp.partitions:
                    topic_id = topics_metadata[tp.topic].topic_id
                    reported[topic_id] = reported.get(topic_id, frozenset()) | frozenset(
                        tp.partitions
                    )
            if member.assignment:
                assignment = decode_assignment(member.assignment)
                if assignment.user_data:
                    raise KafkaError(
                        _E.GROUP_ID_NOT_FOUND,
                        f"Cannot upgrade classic group {group_id} to consumer group because an "
                        "unsupported custom assignor is in use. Please refer to the "
                        "documentation or switch to a default assignor before re-attempting "
                        "the upgrade.",
                    )
                for tp in assignment.assigned_partitions:
                    if tp.topic in topics_metadata and tp.partitions:
                        topic_id = topics_metadata[tp.topic].topic_id
                        assigned[topic_id] = assigned.get(topic_id, frozenset()) | frozenset(
                            tp.partitions
                        )
        except DecodeError:
            raise KafkaError(
                _E.GROUP_ID_NOT_FOUND,
                f"Cannot upgrade classic group {group_id} to consumer group because the "
                "embedded consumer protocol is malformed.",
            ) from None
        generation = classic.generation_id
        converted = ConsumerGroupMember(
            member_id=member.member_id,
            instance_id=member.group_instance_id,
            rack_id=subscription.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=tuple(sorted(set(subscription.topics))),
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            member_epoch=generation,
            previous_member_epoch=generation,
            assigned_partitions=assigned,
            classic_member_metadata=ClassicMemberMetadata(
                member.session_timeout_ms, tuple(member.protocols)
            ),
        )
        return converted, reported

    def _keep_offsets_only(self, classic: Group, now_ms: int) -> None:
        """The classic group is now a consumer group: an Empty Group keeps its offsets."""
        offsets = Group(classic.group_id, _S.EMPTY, now_ms)
        _move_offsets(classic, offsets, self.writes)
        self.groups[classic.group_id] = offsets

    # --- downgrade -------------------------------------------------------------------------

    def _downgrade(
        self, group: ConsumerGroup, leaving: set[str]
    ) -> list[r.ConsumerGroupRecord] | None:
        """validateOnlineDowngradeWithFencedMembers + convertToClassicGroup, or None."""
        remaining = [m for m in group.members.values() if m.member_id not in leaving]
        if (
            not group.all_members_use_classic_protocol_except(leaving)
            or not remaining
            or not self._may_downgrade(len(remaining))
        ):
            return None
        return self._convert_to_classic(group, remaining, rebalance=True)

    def _may_downgrade(self, size: int) -> bool:
        return (
            self.consumer.config.migration_policy.is_downgrade_enabled
            and size <= self.config.group_max_size
        )

    def _convert_to_classic(
        self, group: ConsumerGroup, remaining: list[ConsumerGroupMember], *, rebalance: bool
    ) -> list[r.ConsumerGroupRecord]:
        """convertToClassicGroup: the consumer group's tombstones and the classic group's
        record; the classic group (Stable at the group epoch) replaces it, rebalancing
        unless a static member replaced another with the same subscription in a settled
        group."""
        now_ms = self.now_ms
        group_id = group.group_id
        classic = Group(group_id, _S.STABLE, now_ms)
        classic.generation_id = group.group_epoch
        for m in remaining:
            metadata = m.classic_member_metadata
            assert metadata is not None
            classic.add(
                Member(
                    member_id=m.member_id,
                    group_instance_id=m.instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout_ms=m.rebalance_timeout_ms,
                    session_timeout_ms=metadata.session_timeout_ms,
                    protocol_type=CONSUMER_PROTOCOL_TYPE,
                    protocols=list(metadata.supported_protocols),
                )
            )
        classic.protocol_name = classic.select_protocol()
        classic.subscribed_topics = classic.compute_subscribed_topics()
        for cm in classic.members.values():
            # Kafka writes each member's target assignment here (ClassicGroup
            # .fromConsumerGroup). kmock writes what the member may still be consuming
            # (assigned and pending revocation): should a consumer-protocol member join again
            # before the classic members rejoin, the upgrade must not hand out partitions
            # they have not given up (the migration property test finds that case).
            owned = group.members[cm.member_id]
            partitions = dict(owned.assigned_partitions)
            for topic_id, ps in owned.partitions_pending_revocation.items():
                partitions[topic_id] = partitions.get(topic_id, frozenset()) | ps
            cm.assignment = classic_members.encode_partitions(
                group, partitions, cm.metadata(classic.protocol_name)
            )
            # What members own differs from the target while partitions move: the
            # classic group must rebalance to hand out those still on their way, which
            # no member holds (Kafka's classic members get their targets instead).
            target = group.target_assignment.get(cm.member_id, {})
            if _partition_set(partitions) != _partition_set(target):
                rebalance = True
        for member_id in group.members:
            self.consumer.cancel_timers(group_id, member_id)
        out: list[r.ConsumerGroupRecord] = []
        for record in r.group_tombstones(group):
            self.consumer._write(out, record)
        assignment = {cm.member_id: cm.assignment for cm in classic.members.values()}
        records: list[AnyRecord] = [
            *out,
            group_metadata_record(classic, assignment, self.clock.state_wall_ms(classic)),
        ]
        old = self.groups.get(group_id)
        if old is not None:
            _move_offsets(old, classic, self.writes)
        self.groups[group_id] = classic
        for cm in classic.members.values():
            touch(cm, now_ms)
        if rebalance:
            started = OutcomeBuilder()
            self.membership.prepare_rebalance(classic, now_ms, started)
            assert not started.records, "nothing to write yet"
            assert not started.replies, "nothing parked yet"
        return records  # type: ignore[return-value]

    # --- classic requests ------------------------------------------------------------------

    def join(
        self, ctx: RequestContext, request: JoinGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        """JoinGroup (GroupMetadataManager.classicGroupJoin)."""
        self.now_ms = now_ms
        group = self.consumer.groups.get(request.group_id)
        if group is None:
            return self.membership.join(ctx, request, token, now_ms)
        version = ctx.api_version

        def failed(code: ErrorCode) -> JoinGroupResponse:
            # GroupCoordinatorService.joinGroup: the error and the member id sent.
            response = join_group.error_response(request, code, version)
            return dataclasses.replace(response, member_id=request.member_id)  # type: ignore[type-var]

        if not group.members:
            # The consumer group goes and a classic group starts; should its tombstones not
            # be written, the join gets the error (memory stays: see the module doc).
            tombstones = self.consumer.delete_group(request.group_id).records
            if tombstones:
                self.writes.attach(tombstones[-1], TombstoneWrite(None, (token, failed)))
            outcome = self.membership.join(ctx, request, token, now_ms)
            return outcome._replace(records=(*tombstones, *outcome.records))
        self.begin()
        self.save(request.group_id)
        try:
            response, records = self._join_consumer_group(ctx, request, group, now_ms)
        except KafkaError as e:
            self.undo_now(now_ms)
            response, records = failed(e.code), []
        self.seal(records, (token, failed))
        return Outcome(replies=(Reply(token, response),), records=tuple(records))

    def _join_consumer_group(
        self, ctx: RequestContext, request: JoinGroupRequest, group: ConsumerGroup, now_ms: int
    ) -> tuple[JoinGroupResponse, list[r.ConsumerGroupRecord]]:
        """classicGroupJoinToConsumerGroup."""
        cfg = self.config
        timeout = request.session_timeout_ms
        if not cfg.group_min_session_timeout_ms <= timeout <= cfg.group_max_session_timeout_ms:
            raise KafkaError(_E.INVALID_SESSION_TIMEOUT, f"session timeout {timeout}")
        member_id = request.member_id
        known = bool(member_id)
        if not known:
            member_id = new_member_id()
        max_size = self.consumer.config.max_size
        if len(group.members) >= max_size and (not known or member_id not in group.members):
            raise KafkaError(
                _E.GROUP_MAX_SIZE_REACHED,
                f"The consumer group has reached its maximum capacity of {max_size} members.",
            )
        names = {p.name for p in request.protocols}
        if not group.supports_classic_protocols(request.protocol_type, names):
            raise KafkaError(
                _E.INCONSISTENT_GROUP_PROTOCOL, f"Member {member_id}'s protocols are not supported."
            )
        version = ctx.api_version
        if not known and version >= 4 and request.group_instance_id is None:
            response = join_group.error_response(request, _E.MEMBER_ID_REQUIRED, version)
            return dataclasses.replace(response, member_id=member_id), []  # type: ignore[type-var]
        rebalance_timeout_ms = (
            request.session_timeout_ms if version == 0 else request.rebalance_timeout_ms
        )
        # validateOnlineDowngradeWithReplacedMember: a static member that replaces the last
        # member of the consumer protocol downgrades the group (decided before the
        # replacement, whose records apply at once).
        instance_id = request.group_instance_id
        replaced_id = None if instance_id is None else group.static_members.get(instance_id)
        replaced = None if replaced_id in (None, member_id) else group.members[replaced_id]
        downgrade = (
            replaced is not None
            and group.all_members_use_classic_protocol_except({replaced.member_id})
            and self._may_downgrade(len(group.members))
        )
        member, records = classic_members.classic_join(
            self.consumer,
            group,
            member_id=member_id,
            known_member_id=known,
            instance_id=request.group_instance_id,
            protocols=tuple((p.name, bytes(p.metadata)) for p in request.protocols),
            session_timeout_ms=request.session_timeout_ms,
            rebalance_timeout_ms=rebalance_timeout_ms,
            client_id=ctx.client_id,
            client_host=ctx.client_host,
            topics_metadata=self.topics(),
            now_ms=now_ms,
            describable=ctx.describable,
        )
        if downgrade:
            assert replaced is not None
            # convertToClassicGroup with the joining member: no rebalance unless its
            # subscription differs from the replaced member's (Kafka after 4.1; 4.1 never
            # rebalanced here, leaving the other members on stale assignments).
            converted = self.consumer.groups[request.group_id]
            records += self._convert_to_classic(
                converted,
                list(converted.members.values()),
                rebalance=member.subscribed_topic_names != replaced.subscribed_topic_names
                or replaced.subscribed_topic_regex is not None,
            )
        classic = member.classic_member_metadata
        assert classic is not None
        response = JoinGroupResponse(
            error_code=_E.NONE,
            generation_id=member.member_epoch,
            protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocol_name=classic.protocol_name,
            leader="",
            skip_assignment=False,
            member_id=member_id,
            members=[],
        )
        return response, records

    def sync(
        self, ctx: RequestContext, request: SyncGroupRequest, token: int, now_ms: int
    ) -> Outcome:
        group = self.consumer.groups.get(request.group_id)
        if group is None:
            return self.membership.sync(ctx, request, token, now_ms)
        if not group.members:
            raise KafkaError(_E.UNKNOWN_MEMBER_ID, f"group {request.group_id} is empty")
        assignment = classic_members.classic_sync(
            self.consumer,
            group,
            member_id=request.member_id,
            instance_id=request.group_instance_id,
            generation_id=request.generation_id,
            protocol_type=request.protocol_type,
            protocol_name=request.protocol_name,
            now_ms=now_ms,
        )
        response = SyncGroupResponse(
            error_code=_E.NONE,
            protocol_type=request.protocol_type,
            protocol_name=request.protocol_name,
            assignment=assignment,
        )
        return Outcome(replies=(Reply(token, response),))

    def heartbeat(
        self, ctx: RequestContext, request: HeartbeatRequest, token: int, now_ms: int
    ) -> Outcome:
        group = self.consumer.groups.get(request.group_id)
        if group is None:
            return self.membership.heartbeat(ctx, request, token, now_ms)
        code = classic_members.classic_heartbeat(
            self.consumer,
            group,
            member_id=request.member_id,
            instance_id=request.group_instance_id,
            generation_id=request.generation_id,
            now_ms=now_ms,
        )
        return Outcome(replies=(Reply(token, HeartbeatResponse(error_code=code)),))

    def leave_consumer_group(
        self, ctx: RequestContext, request: LeaveGroupRequest, token: int, now_ms: int
    ) -> Outcome | None:
        """LeaveGroup to a consumer group (classicGroupLeaveToConsumerGroup), or None when
        the group is not one."""
        group = self.consumer.groups.get(request.group_id)
        if group is None:
            return None
        self.now_ms = now_ms
        self.begin()
        self.save(request.group_id)
        leaving: set[str] = set()

        def leave_one(identity: MemberIdentity) -> ErrorCode:
            member_id = identity.member_id
            if identity.group_instance_id is not None:
                static = group.static_members.get(identity.group_instance_id)
                if static is None:
                    return _E.UNKNOWN_MEMBER_ID
                if member_id and member_id != static:
                    return _E.FENCED_INSTANCE_ID
                member_id = static
            elif member_id not in group.members:
                return _E.UNKNOWN_MEMBER_ID
            leaving.add(member_id)
            return _E.NONE

        response, _ = leave_each(ctx.api_version, request, leave_one)
        records = self.consumer.fence(group, leaving)
        # GroupCoordinatorService.leaveGroup: a failed write is the top-level error.
        self.seal(records, (token, lambda code: LeaveGroupResponse(error_code=code)))
        return Outcome(replies=(Reply(token, response),), records=tuple(records))


def _with_reported_partitions(
    converted: Sequence[tuple[ConsumerGroupMember, dict[uuid.UUID, frozenset[int]]]],
) -> list[ConsumerGroupMember]:
    """Each converted member with its assignment plus the partitions its last JoinGroup
    reported owning that no member's assignment holds.

    Kafka (ConsumerGroup.fromClassicGroup) takes only the assignment a member last synced.
    A cooperative member keeps consuming through a rebalance, and a group that rebalances
    again from CompletingRebalance clears every assignment (GroupMetadataManager
    .resetAndPropagateAssignmentWithError): upgraded then, Kafka hands the joining member
    partitions a cooperative member still consumes, until that one rejoins. kmock counts
    what the member reports owning (ConsumerProtocolSubscription v1+), so the consumer
    group revokes it first (the migration property test finds the case). An eager member
    reports nothing: it gave everything up before rejoining.
    """
    held = {(t, p) for m, _ in converted for t, ps in m.assigned_partitions.items() for p in ps}
    members = []
    for member, reported in converted:
        assigned = dict(member.assigned_partitions)
        for topic_id, partitions in reported.items():
            free = frozenset(p for p in partitions if (topic_id, p) not in held)
            if free:
                held.update((topic_id, p) for p in free)
                assigned[topic_id] = assigned.get(topic_id, frozenset()) | free
        members.append(member.replace(assigned_partitions=assigned))
    return members


def _partition_set(partitions: Mapping[uuid.UUID, frozenset[int]]) -> set[tuple[uuid.UUID, int]]:
    return {(topic_id, p) for topic_id, ps in partitions.items() for p in ps}


def _move_offsets(old: Group, new: Group, writes: Writes) -> None:
    """Committed offsets, and those on their way, go from one Group object to another."""
    new.offsets = old.offsets
    new.pending_offset_commits = old.pending_offset_commits
    writes.regroup(old, new)


def _failed_heartbeat(code: ErrorCode) -> ConsumerGroupHeartbeatResponse:
    """GroupCoordinatorService.consumerGroupHeartbeat's answer to a failed write."""
    return ConsumerGroupHeartbeatResponse(error_code=code)
