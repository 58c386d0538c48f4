"""The consumer group coordinator of KIP-848: ConsumerGroupHeartbeat, ConsumerGroupDescribe,
session and rebalance timeouts, replay, and the member-epoch checks of OffsetCommit and
OffsetFetch. Pure and synchronous: time comes in as `now_ms`, topic metadata as an argument.

It follows Kafka's GroupMetadataManager (consumerGroupHeartbeat, consumerGroupLeave,
consumerGroupFenceMember) and ConsumerGroup.validateOffsetCommit/validateOffsetFetch. A
heartbeat, in order:

  1. validate the request (INVALID_REQUEST, UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION);
  2. epoch -1 or -2: the member leaves (-2: a static member that will come back keeps its
     assignment until its session times out);
  3. find the member, or create it on epoch 0 (a known dynamic member id that rejoins with
     epoch 0 starts over: its old self is removed and its partitions released first):
     GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID,
     GROUP_MAX_SIZE_REACHED, FENCED_MEMBER_EPOCH, and for static members (instance_id)
     UNRELEASED_INSTANCE_ID (another member holds the instance id) or FENCED_INSTANCE_ID
     (the instance id now belongs to another member id);
  4. update the member's subscription; resolve regexes; the group epoch is bumped when a
     member joins or changes its subscription, when a regex resolves to other topics, and
     when the subscribed topics' metadata changes (a new topic, more partitions);
  5. group epoch > assignment epoch: the member's preferred assignor (the one most members
     name, else the first of group.consumer.assignors) computes a new target assignment;
  6. reconcile the member towards its target (member.py), and answer with its epoch and,
     when it sent a full request or its partitions changed, its assignment.

No error is raised after the first record is built: validation comes first, so a failed
heartbeat changes nothing. Every change is made by replaying the records it writes
(records.py), as Kafka's runtime does; should they not be written, `restore` puts back the
group and its timers as `save` kept them (Kafka reverts to the last written offset).

Kafka resolves regexes asynchronously and may batch target assignments
(group.consumer.min.assignment.interval.ms); we resolve and assign within the heartbeat,
which a single-broker dev server can afford, so a member sees its assignment sooner.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from coordinator.consumer import records as r
from coordinator.consumer.assignors import ASSIGNORS
from coordinator.consumer.config import ConsumerGroupConfig
from coordinator.consumer.describe import describe_groups
from coordinator.consumer.group import ConsumerGroup, ResolvedRegularExpression, TopicImage
from coordinator.consumer.member import (
    ConsumerGroupMember,
    MemberState,
    new_member_id,
    reconcile,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.messages import consumer_group_describe as describe_msg
from protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
)

__all__ = ["ConsumerGroupConfig", "ConsumerGroupCoordinator", "CoordinatorResult"]

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
# Topics a regex never matches (Kafka's Topic.isInternal).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


@dataclass(frozen=True, slots=True)
class CoordinatorResult:
    """A response to send once `records` are in __consumer_offsets (Kafka's
    CoordinatorResult); the records are already applied to the coordinator's state."""

    response: object | None = None
    records: tuple[r.ConsumerGroupRecord, ...] = ()


def _invalid(detail: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REQUEST, detail)


def _metadata_version(topics: Mapping[str, TopicImage]) -> int:
    """A stable int64 for the topic metadata a regex was resolved against (Kafka stores the
    metadata image's offset; we have no such offset, so a digest stands in for it)."""
    digest = hashlib.sha256()
    for name in sorted(topics):
        t = topics[name]
        digest.update(f"{name}\0{t.topic_id}\0{t.num_partitions}\n".encode())
    return int.from_bytes(digest.digest()[:8], "big", signed=True)


# Compiled regexes kept (about 2 KiB each): clients may send any number of distinct ones.
MAX_CACHED_PATTERNS = 1024


class ConsumerGroupCoordinator:
    """Every consumer group of the broker, their timers, and their records."""

    def __init__(self, config: ConsumerGroupConfig | None = None) -> None:
        self.config = config or ConsumerGroupConfig()
        self.groups: dict[str, ConsumerGroup] = {}
        self._session_deadlines: dict[tuple[str, str], int] = {}
        # (group, member) -> (deadline, member epoch when it entered UNREVOKED_PARTITIONS)
        self._rebalance_deadlines: dict[tuple[str, str], tuple[int, int]] = {}
        # Classic members (online migration): asked to rejoin, they must JoinGroup within
        # their rebalance timeout; joined, they must SyncGroup within it (Kafka's join and
        # sync timeouts). (group, member) -> deadline.
        self.join_deadlines: dict[tuple[str, str], int] = {}
        self.sync_deadlines: dict[tuple[str, str], int] = {}
        self._patterns: dict[str, object] = {}
        # Set by the facade: given a group and the members about to be fenced, convert it to
        # a classic group and return the records, or None when it must stay a consumer
        # group (GroupMetadataManager.consumerGroupFenceMembers' downgrade).
        self.downgrade: (
            Callable[[ConsumerGroup, set[str]], list[r.ConsumerGroupRecord] | None] | None
        ) = None
        # Set by the facade: called with a group id before fencing changes that group, so
        # that the change can be undone should its records not be written.
        self.saving: Callable[[str], None] | None = None

    # --- records -----------------------------------------------------------------------

    def replay(self, record: r.ConsumerGroupRecord) -> None:
        """Fold one record (read from __consumer_offsets at startup, or just written)."""
        r.replay(self.groups, record)

    def finish_load(self, now_ms: int) -> None:
        """Start the loaded members' session (and revocation) timers from `now_ms`."""
        for group in self.groups.values():
            for m in group.members.values():
                self._session_deadlines[(group.group_id, m.member_id)] = (
                    now_ms + self.session_timeout_ms(m)
                )
                if m.state is MemberState.UNREVOKED_PARTITIONS:
                    self._rebalance_deadlines[(group.group_id, m.member_id)] = (
                        now_ms + max(m.rebalance_timeout_ms, 0),
                        m.member_epoch,
                    )

    def _write(self, out: list[r.ConsumerGroupRecord], record: r.ConsumerGroupRecord) -> None:
        out.append(record)
        self.replay(record)

    def touch(self, group_id: str, member: ConsumerGroupMember, now_ms: int) -> None:
        """A request from the member: its session runs from now."""
        self._session_deadlines[(group_id, member.member_id)] = now_ms + self.session_timeout_ms(
            member
        )

    def session_timeout_ms(self, member: ConsumerGroupMember) -> int:
        """A classic member's own session timeout, else group.consumer.session.timeout.ms."""
        classic = member.classic_member_metadata
        return self.config.session_timeout_ms if classic is None else classic.session_timeout_ms

    # --- heartbeat ---------------------------------------------------------------------

    def consumer_group_heartbeat(
        self,
        request: ConsumerGroupHeartbeatRequest,
        now_ms: int,
        topics_metadata: Mapping[str, TopicImage],
        *,
        version: int = 1,
        client_id: str | None = None,
        client_host: str | None = None,
        wall_ms: int = -1,
        describable: Callable[[str], bool] | None = None,
    ) -> CoordinatorResult:
        """Answer one ConsumerGroupHeartbeat.

        Args:
          topics_metadata: every topic of the cluster by name, as of now.
          version: the request's version (v0: the coordinator makes the member id).
          client_id/client_host: from the request header (Kafka updates them on every
            heartbeat); None keeps what the member had.
          wall_ms: wall-clock time for the regex records' timestamp (-1 when unknown).
          describable: with an authorizer, the topics this member's principal may DESCRIBE;
            the group's regexes resolve to those only.

        Raises:
          KafkaError: the request is refused; nothing changed.
        """
        self._validate(request, version)
        epoch = request.member_epoch
        if epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
            return self._leave(request)
        group_id = request.group_id
        group = self.groups.get(group_id)
        if group is None:
            if epoch != 0:
                raise KafkaError(
                    ErrorCode.GROUP_ID_NOT_FOUND, f"consumer group {group_id} not found"
                )
            group = ConsumerGroup(group_id)
        member_id = request.member_id
        if not member_id:  # v0 join: the coordinator names the member
            member_id = new_member_id()

        member, replaced, is_new = self._find_member(group, request, member_id)
        out: list[r.ConsumerGroupRecord] = []
        if replaced is not None:  # it takes the place of the instance that left with -2
            member = self.replace_static_member(group, replaced, member_id, out)
        elif is_new and member_id in group.members:  # a dynamic member starts over
            for record in self._member_tombstones(group_id, member_id):
                self._write(out, record)
            self.cancel_timers(group_id, member_id)
        group = self.groups.get(group_id, group)

        updated = member.replace(
            client_id=member.client_id if client_id is None else client_id,
            client_host=member.client_host if client_host is None else client_host,
            instance_id=request.instance_id or member.instance_id,
            rack_id=member.rack_id if request.rack_id is None else request.rack_id,
            rebalance_timeout_ms=(
                member.rebalance_timeout_ms
                if request.rebalance_timeout_ms == -1
                else request.rebalance_timeout_ms
            ),
            server_assignor=(
                member.server_assignor
                if request.server_assignor is None
                else request.server_assignor
            ),
            subscribed_topic_names=(
                member.subscribed_topic_names
                if request.subscribed_topic_names is None
                else tuple(sorted(set(request.subscribed_topic_names)))
            ),
            subscribed_topic_regex=(
                member.subscribed_topic_regex
                if request.subscribed_topic_regex is None
                else request.subscribed_topic_regex or None
            ),
            classic_member_metadata=None,
        )
        bump = is_new and replaced is None
        if (
            updated.subscribed_topic_names != member.subscribed_topic_names
            or updated.subscribed_topic_regex != member.subscribed_topic_regex
            or updated.server_assignor != member.server_assignor
        ):
            bump = True
        if updated != member or is_new:
            self._write(out, r.member_subscription_record(group_id, updated))
        group = self.groups[group_id]
        self.update_target(group, bump, topics_metadata, wall_ms, out, describable)
        owned = (
            None
            if request.topic_partitions is None
            else [(t.topic_id, t.partitions) for t in request.topic_partitions]
        )
        reconciled = self.reconcile_member(group, member_id, topics_metadata, owned, now_ms, out)

        # The assignment goes out on a full request (a join, or a client that lost track and
        # resends everything) or when the member's partitions changed.
        is_full_request = epoch == 0 or (
            request.rebalance_timeout_ms != -1
            and request.subscribed_topic_names is not None
            and request.topic_partitions is not None
        )
        assignment = None
        if is_full_request or reconciled.assigned_partitions != member.assigned_partitions:
            assignment = Assignment(
                topic_partitions=[
                    TopicPartitions(topic_id=t.topic_id, partitions=t.partitions)
                    for t in r.to_topic_partitions(reconciled.assigned_partitions)
                ]
            )
        response = ConsumerGroupHeartbeatResponse(
            member_id=member_id,
            member_epoch=reconciled.member_epoch,
            heartbeat_interval_ms=self.config.heartbeat_interval_ms,
            assignment=assignment,
        )
        return CoordinatorResult(response, tuple(out))

    def replace_static_member(
        self,
        group: ConsumerGroup,
        old: ConsumerGroupMember,
        member_id: str,
        out: list[r.ConsumerGroupRecord],
    ) -> ConsumerGroupMember:
        """Kafka's replaceStaticMember: the old instance's records go, the new member id
        takes its subscription and its target and current assignments; returns it."""
        group_id = group.group_id
        target = group.target_assignment.get(old.member_id, {})
        for record in self._member_tombstones(group_id, old.member_id):
            self._write(out, record)
        self.cancel_timers(group_id, old.member_id)
        new = old.replace(member_id=member_id)
        self._write(out, r.member_subscription_record(group_id, new))
        self._write(out, r.target_assignment_record(group_id, member_id, target))
        self._write(out, r.current_assignment_record(group_id, new))
        return new

    def update_target(
        self,
        group: ConsumerGroup,
        bump: bool,
        topics_metadata: Mapping[str, TopicImage],
        wall_ms: int,
        out: list[r.ConsumerGroupRecord],
        describable: Callable[[str], bool] | None = None,
    ) -> None:
        """After a member's update: resolve regexes (to the topics `describable` allows)
        and refresh the subscribed topics' metadata, bump the group epoch when they (or
        `bump`) say so, and compute a new target assignment when the group epoch is past it."""
        bump |= self._refresh_regexes(group, topics_metadata, wall_ms, out, describable)
        bump |= self._refresh_subscription_metadata(group, topics_metadata, out)
        if bump:
            self._write(out, r.group_epoch_record(group.group_id, group.group_epoch + 1))
        if group.group_epoch > group.assignment_epoch:
            self._assign(group, out)

    def reconcile_member(
        self,
        group: ConsumerGroup,
        member_id: str,
        topics_metadata: Mapping[str, TopicImage],
        owned: list[tuple[uuid.UUID, list[int]]] | None,
        now_ms: int,
        out: list[r.ConsumerGroupRecord],
    ) -> ConsumerGroupMember:
        """Move the member towards its target (member.py), `owned` being what it reports
        (None: unknown); its session restarts and its revocation deadline is set."""
        current = group.members[member_id]
        reconciled = reconcile(
            current,
            target_epoch=group.assignment_epoch,
            target=group.target_assignment.get(member_id, {}),
            subscribed_topic_ids=self._topic_ids(group, current, topics_metadata),
            owned=owned,
            partition_epoch=group.partition_epoch,
        )
        if reconciled != current:
            self._write(out, r.current_assignment_record(group.group_id, reconciled))
        self._schedule(group.group_id, reconciled, current, now_ms)
        return reconciled

    def _validate(self, request: ConsumerGroupHeartbeatRequest, version: int) -> None:
        """Kafka's throwIfConsumerGroupHeartbeatRequestIsInvalid."""
        epoch = request.member_epoch
        if not request.group_id:
            raise _invalid("GroupId can't be empty.")
        if request.instance_id == "":
            raise _invalid("InstanceId can't be empty.")
        if request.rack_id == "":
            raise _invalid("RackId can't be empty.")
        if not request.member_id and (version >= 1 or epoch != 0):
            raise _invalid("MemberId can't be empty.")
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise _invalid("RebalanceTimeoutMs must be provided in first request.")
            if request.topic_partitions is None or request.topic_partitions:
                raise _invalid("TopicPartitions must be empty when (re-)joining.")
            if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
                raise _invalid(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null "
                    "when (re-)joining."
                )
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            if request.instance_id is None:
                raise _invalid("InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise _invalid(f"MemberEpoch {epoch} is invalid.")
        if request.subscribed_topic_regex:
            self._pattern(request.subscribed_topic_regex)
        if request.server_assignor is not None and request.server_assignor not in (
            self.config.assignors
        ):
            raise KafkaError(
                ErrorCode.UNSUPPORTED_ASSIGNOR,
                f"ServerAssignor {request.server_assignor} is not supported. Supported "
                f"assignors: {', '.join(self.config.assignors)}.",
            )

    def _pattern(self, regex: str) -> object:
        """The compiled regex. Kafka compiles subscriptions with RE2/J; google-re2 has the
        same syntax and linear-time matching (no backreferences or lookarounds)."""
        pattern = self._patterns.get(regex)
        if pattern is None:
            import re2  # type: ignore[import-untyped]  # 2.6 MB: only for regex subscriptions

            try:
                # An invalid regex is the client's error, answered
                # INVALID_REGULAR_EXPRESSION: RE2 must not also print it on the process's
                # stderr, as it does by default.
                options = re2.Options()
                options.log_errors = False
                pattern = re2.compile(regex, options)
            except re2.error as e:
                raise KafkaError(
                    ErrorCode.INVALID_REGULAR_EXPRESSION, f"SubscribedTopicRegex {regex!r}: {e}"
                ) from None
            if len(self._patterns) >= MAX_CACHED_PATTERNS:
                del self._patterns[next(iter(self._patterns))]  # the oldest
            self._patterns[regex] = pattern
        return pattern

    def _find_member(
        self, group: ConsumerGroup, request: ConsumerGroupHeartbeatRequest, member_id: str
    ) -> tuple[ConsumerGroupMember, ConsumerGroupMember | None, bool]:
        """(member, the static member it replaces or None, whether it joins now)."""
        epoch = request.member_epoch
        instance_id = request.instance_id
        if instance_id is None:
            member = group.members.get(member_id)
            if epoch == 0:
                if member is None:
                    self._check_size(group)
                return ConsumerGroupMember(member_id=member_id), None, True
            if member is None:
                raise KafkaError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"member {member_id} is not in consumer group {group.group_id}",
                )
            self._check_epoch(member, request)
            return member, None, False
        existing_id = group.static_members.get(instance_id)
        existing = None if existing_id is None else group.members[existing_id]
        if epoch == 0:
            if existing is None:
                self._check_size(group)
                new = ConsumerGroupMember(member_id=member_id, instance_id=instance_id)
                return new, None, True
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                raise KafkaError(
                    ErrorCode.UNRELEASED_INSTANCE_ID,
                    f"instance id {instance_id} is held by member {existing.member_id} of "
                    f"consumer group {group.group_id}",
                )
            return existing.replace(member_id=member_id), existing, True
        if existing is None:
            raise KafkaError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"instance id {instance_id} is not in consumer group {group.group_id}",
            )
        if existing.member_id != member_id:
            raise KafkaError(
                ErrorCode.FENCED_INSTANCE_ID,
                f"instance id {instance_id} belongs to member {existing.member_id}, not "
                f"{member_id}",
            )
        self._check_epoch(existing, request)
        return existing, None, False

    def _check_size(self, group: ConsumerGroup) -> None:
        if len(group.members) >= self.config.max_size:
            raise KafkaError(
                ErrorCode.GROUP_MAX_SIZE_REACHED,
                f"consumer group {group.group_id} has reached its maximum capacity of "
                f"{self.config.max_size} members (group.consumer.max.size)",
            )

    @staticmethod
    def _check_epoch(member: ConsumerGroupMember, request: ConsumerGroupHeartbeatRequest) -> None:
        """Kafka's throwIfMemberEpochIsInvalid: a member one epoch behind whose owned
        partitions are all still assigned lost a response, and is let through."""
        received = request.member_epoch
        if received == member.member_epoch:
            return
        if received < member.member_epoch and received == member.previous_member_epoch:
            owned = request.topic_partitions
            if owned is not None and all(
                set(t.partitions) <= member.assigned_partitions.get(t.topic_id, frozenset())
                for t in owned
            ):
                return
        raise KafkaError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"member {member.member_id} sent epoch {received}, the coordinator has "
            f"{member.member_epoch}: it must abandon its partitions and rejoin",
        )

    def _topic_ids(
        self,
        group: ConsumerGroup,
        member: ConsumerGroupMember,
        topics_metadata: Mapping[str, TopicImage],
    ) -> set[uuid.UUID]:
        return {
            topics_metadata[name].topic_id
            for name in group.subscribed_topic_names(member)
            if name in topics_metadata
        }

    def _refresh_regexes(
        self,
        group: ConsumerGroup,
        topics_metadata: Mapping[str, TopicImage],
        wall_ms: int,
        out: list[r.ConsumerGroupRecord],
        describable: Callable[[str], bool] | None = None,
    ) -> bool:
        """Resolve the group's regexes against the topics (with an authorizer, only those
        `describable` allows: Kafka's GroupMetadataManager.refreshRegularExpressions);
        True when one now matches other topics. A regex no member uses any more is
        deleted."""
        in_use = {m.subscribed_topic_regex for m in group.members.values()}
        for stale in sorted(set(group.resolved_regular_expressions) - in_use):
            self._write(out, r.regular_expression_tombstone(group.group_id, stale))
        regexes = sorted(x for x in in_use if x)
        if not regexes:
            return False
        version = _metadata_version(topics_metadata)
        changed = False
        for regex in regexes:
            old = group.resolved_regular_expressions.get(regex)
            if old is not None and old.version == version:
                continue
            pattern = self._pattern(regex)
            topics = frozenset(
                name
                for name in topics_metadata
                if name not in INTERNAL_TOPICS
                and pattern.fullmatch(name)  # type: ignore[attr-defined]
                and (describable is None or describable(name))
            )
            resolved = ResolvedRegularExpression(topics, version, wall_ms)
            self._write(out, r.regular_expression_record(group.group_id, regex, resolved))
            changed |= old is None or old.topics != topics
        return changed

    def _refresh_subscription_metadata(
        self,
        group: ConsumerGroup,
        topics_metadata: Mapping[str, TopicImage],
        out: list[r.ConsumerGroupRecord],
    ) -> bool:
        names = group.all_subscribed_topic_names(group.members.values())
        metadata = {n: topics_metadata[n] for n in sorted(names) if n in topics_metadata}
        if metadata == group.subscription_metadata:
            return False
        self._write(out, r.subscription_metadata_record(group.group_id, metadata))
        return True

    def _assign(self, group: ConsumerGroup, out: list[r.ConsumerGroupRecord]) -> None:
        """A new target assignment at the group epoch (Kafka's TargetAssignmentBuilder:
        records only for members whose target changed, then the epoch)."""
        assignor = ASSIGNORS[group.preferred_server_assignor(self.config.assignors[0])]
        topics = {t.topic_id: t.num_partitions for t in group.subscription_metadata.values()}
        subscriptions = {
            m.member_id: frozenset(
                group.subscription_metadata[n].topic_id
                for n in group.subscribed_topic_names(m)
                if n in group.subscription_metadata
            )
            for m in group.members.values()
        }
        target = assignor(subscriptions, topics, group.target_assignment)
        for member_id in sorted(target):
            if target[member_id] != group.target_assignment.get(member_id, {}):
                self._write(
                    out, r.target_assignment_record(group.group_id, member_id, target[member_id])
                )
        self._write(out, r.target_assignment_epoch_record(group.group_id, group.group_epoch))

    def _schedule(
        self, group_id: str, member: ConsumerGroupMember, before: ConsumerGroupMember, now_ms: int
    ) -> None:
        key = (group_id, member.member_id)
        self._session_deadlines[key] = now_ms + self.session_timeout_ms(member)
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if before.state is not MemberState.UNREVOKED_PARTITIONS or key not in (
                self._rebalance_deadlines
            ):
                self._rebalance_deadlines[key] = (
                    now_ms + max(member.rebalance_timeout_ms, 0),
                    member.member_epoch,
                )
        else:
            self._rebalance_deadlines.pop(key, None)

    # --- leaving -----------------------------------------------------------------------

    def _leave(self, request: ConsumerGroupHeartbeatRequest) -> CoordinatorResult:
        """Kafka's consumerGroupLeave."""
        group = self.groups.get(request.group_id)
        if group is None:
            raise KafkaError(
                ErrorCode.GROUP_ID_NOT_FOUND, f"consumer group {request.group_id} not found"
            )
        response = ConsumerGroupHeartbeatResponse(
            member_id=request.member_id, member_epoch=request.member_epoch
        )
        if request.instance_id is None:
            member = group.members.get(request.member_id)
            if member is None:
                raise KafkaError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"member {request.member_id} is not in consumer group {group.group_id}",
                )
        else:
            member_id = group.static_members.get(request.instance_id)
            if member_id is None:
                raise KafkaError(
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    f"instance id {request.instance_id} is not in group {group.group_id}",
                )
            if member_id != request.member_id:
                raise KafkaError(
                    ErrorCode.FENCED_INSTANCE_ID,
                    f"instance id {request.instance_id} belongs to member {member_id}",
                )
            member = group.members[member_id]
            if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
                # The member will come back: it keeps its assigned partitions (nobody else
                # gets them) until its session times out; what it was revoking is released.
                left = member.replace(
                    member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={}
                )
                out: list[r.ConsumerGroupRecord] = []
                self._write(out, r.current_assignment_record(group.group_id, left))
                self._rebalance_deadlines.pop((group.group_id, member.member_id), None)
                return CoordinatorResult(response, tuple(out))
        return CoordinatorResult(response, tuple(self.fence(group, {member.member_id})))

    def _member_tombstones(self, group_id: str, member_id: str) -> list[r.ConsumerGroupRecord]:
        return [
            r.current_assignment_tombstone(group_id, member_id),
            r.target_assignment_tombstone(group_id, member_id),
            r.member_subscription_tombstone(group_id, member_id),
        ]

    def fence(self, group: ConsumerGroup, member_ids: set[str]) -> list[r.ConsumerGroupRecord]:
        """Remove members and bump the group epoch, or convert the group to a classic one
        when only classic members remain (Kafka's consumerGroupFenceMembers)."""
        if not member_ids:
            return []
        if self.saving is not None:
            self.saving(group.group_id)
        for member_id in member_ids:
            self.cancel_timers(group.group_id, member_id)
        everyone = list(group.members)
        converted = None if self.downgrade is None else self.downgrade(group, member_ids)
        if converted is not None:
            for member_id in everyone:
                self.cancel_timers(group.group_id, member_id)
            return converted
        out: list[r.ConsumerGroupRecord] = []
        for member_id in sorted(member_ids):
            for record in self._member_tombstones(group.group_id, member_id):
                self._write(out, record)
        in_use = {m.subscribed_topic_regex for m in group.members.values()}
        for regex in sorted(set(group.resolved_regular_expressions) - in_use):
            self._write(out, r.regular_expression_tombstone(group.group_id, regex))
        names = group.all_subscribed_topic_names(group.members.values())
        metadata = {n: t for n, t in group.subscription_metadata.items() if n in names}
        if metadata != group.subscription_metadata:
            self._write(out, r.subscription_metadata_record(group.group_id, metadata))
        self._write(out, r.group_epoch_record(group.group_id, group.group_epoch + 1))
        return out

    def cancel_timers(self, group_id: str, member_id: str) -> None:
        key = (group_id, member_id)
        for timers in (self.join_deadlines, self.sync_deadlines):
            timers.pop(key, None)
        self._session_deadlines.pop(key, None)
        self._rebalance_deadlines.pop(key, None)

    # --- timers --------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        deadlines = list(self._session_deadlines.values())
        deadlines += [d for d, _ in self._rebalance_deadlines.values()]
        deadlines += [*self.join_deadlines.values(), *self.sync_deadlines.values()]
        return min(deadlines, default=None)

    def expire(self, now_ms: int) -> CoordinatorResult:
        """Fence the members whose session timed out, or whose rebalance timeout ran out
        while they still had partitions to revoke."""
        out: list[r.ConsumerGroupRecord] = []
        due = {k for k, d in self._session_deadlines.items() if d <= now_ms}
        due |= {k for k, d in self.join_deadlines.items() if d <= now_ms}
        due |= {k for k, d in self.sync_deadlines.items() if d <= now_ms}
        for key, (deadline, epoch) in list(self._rebalance_deadlines.items()):
            if deadline <= now_ms:
                del self._rebalance_deadlines[key]
                group = self.groups.get(key[0])
                member = None if group is None else group.members.get(key[1])
                if (
                    member is not None
                    and member.state is MemberState.UNREVOKED_PARTITIONS
                    and member.member_epoch == epoch
                ):
                    due.add(key)
        for group_id, member_id in sorted(due):
            group = self.groups.get(group_id)
            if group is not None and member_id in group.members:
                out += self.fence(group, {member_id})
            else:
                self.cancel_timers(group_id, member_id)
        return CoordinatorResult(None, tuple(out))

    # --- describe, offsets -----------------------------------------------------------------

    def describe(
        self, group_ids: Iterable[str], topics_metadata: Mapping[str, TopicImage]
    ) -> list[describe_msg.DescribedGroup]:
        """ConsumerGroupDescribe's groups; an unknown id gets GROUP_ID_NOT_FOUND."""
        return describe_groups(self.groups, self.config.assignors[0], group_ids, topics_metadata)

    def validate_offset_commit(
        self, group_id: str, member_id: str, member_epoch: int, *, api_version: int,
        is_transactional: bool = False,
    ) -> None:  # fmt: skip
        """Check an OffsetCommit to a consumer group (Kafka's ConsumerGroup
        .validateOffsetCommit). A commit with a negative epoch is allowed while the group
        has no member (the admin client, or a consumer without group management).

        Raises:
          KafkaError: GROUP_ID_NOT_FOUND (no such consumer group), UNKNOWN_MEMBER_ID,
            UNSUPPORTED_VERSION (a KIP-848 member must commit with v9+), or
            STALE_MEMBER_EPOCH.
        """
        group = self._group(group_id)
        if member_epoch < 0 and not group.members:
            return
        member = self._member(group, member_id)
        if member.use_classic_protocol:  # its generation is its epoch: ILLEGAL_GENERATION
            if member_epoch != member.member_epoch:
                raise KafkaError(ErrorCode.ILLEGAL_GENERATION, f"{member_epoch} is stale")
            return
        if not is_transactional and api_version < 9:
            raise KafkaError(
                ErrorCode.UNSUPPORTED_VERSION,
                "OffsetCommit version 9 or above must be used by members using the "
                "consumer group protocol",
            )
        self._check_offset_epoch(member, member_epoch)

    def validate_offset_fetch(self, group_id: str, member_id: str, member_epoch: int) -> None:
        """Check an OffsetFetch (v9+, with member id and epoch) from a consumer group
        member (ConsumerGroup.validateOffsetFetch); epoch -1 is the admin client's.

        Raises:
          KafkaError: GROUP_ID_NOT_FOUND, UNKNOWN_MEMBER_ID or STALE_MEMBER_EPOCH.
        """
        group = self._group(group_id)
        if member_epoch == -1:
            return
        self._check_offset_epoch(self._member(group, member_id), member_epoch)

    def _group(self, group_id: str) -> ConsumerGroup:
        group = self.groups.get(group_id)
        if group is None:
            raise KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"consumer group {group_id} not found")
        return group

    @staticmethod
    def _member(group: ConsumerGroup, member_id: str) -> ConsumerGroupMember:
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(
                ErrorCode.UNKNOWN_MEMBER_ID,
                f"member {member_id!r} is not in consumer group {group.group_id}",
            )
        return member

    @staticmethod
    def _check_offset_epoch(member: ConsumerGroupMember, member_epoch: int) -> None:
        if member_epoch != member.member_epoch:
            raise KafkaError(
                ErrorCode.STALE_MEMBER_EPOCH,
                f"member {member.member_id} sent epoch {member_epoch}, its epoch is "
                f"{member.member_epoch}",
            )

    def delete_group(self, group_id: str) -> CoordinatorResult:
        """DeleteGroups for an empty consumer group: its tombstones.

        Raises:
          KafkaError: GROUP_ID_NOT_FOUND, or NON_EMPTY_GROUP while it has members.
        """
        group = self._group(group_id)
        if group.members:
            raise KafkaError(ErrorCode.NON_EMPTY_GROUP, f"consumer group {group_id} has members")
        out: list[r.ConsumerGroupRecord] = []
        for record in r.group_tombstones(group):
            self._write(out, record)
        return CoordinatorResult(None, tuple(out))
