"""A consumer group's state (Kafka's ConsumerGroup, org.apache.kafka.coordinator.group.modern
.consumer): what the __consumer_offsets records of the group say, and indexes derived from it.

Persisted (one record type each): the group epoch, the subscribed topics' metadata, each
member's subscription, the target assignment (per member, and its epoch), each member's
current assignment, and each regular expression's resolved topics. Derived: which member
holds each partition (`partition_epochs`, for reconciliation) and which member has each
instance id.

The group's state is computed, not stored (Kafka's ConsumerGroup.maybeUpdateGroupState):

    Empty        no member
    Assigning    group epoch > target assignment epoch: a new target is due
    Reconciling  some member is not STABLE at the target assignment epoch
    Stable       every member is STABLE at the target assignment epoch
    Dead         (not used here: a deleted group is gone from the coordinator)
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

from coordinator.consumer.member import Assignment, ConsumerGroupMember, MemberState

__all__ = ["ConsumerGroup", "ConsumerGroupState", "ResolvedRegularExpression", "TopicImage"]


class ConsumerGroupState(Enum):
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class TopicImage:
    """A topic as the coordinator sees it (Kafka's TopicImage): id, name, partition count."""

    topic_id: uuid.UUID
    name: str
    num_partitions: int


@dataclass(frozen=True, slots=True)
class ResolvedRegularExpression:
    """The topics a regex subscription matched, and the metadata version it was resolved
    against (Kafka's ResolvedRegularExpression)."""

    topics: frozenset[str]
    version: int
    timestamp: int


@dataclass(eq=False)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    # Subscribed topics' metadata as of the last group epoch bump: name -> image.
    subscription_metadata: dict[str, TopicImage] = field(default_factory=dict)
    assignment_epoch: int = 0
    members: dict[str, ConsumerGroupMember] = field(default_factory=dict)
    target_assignment: dict[str, Assignment] = field(default_factory=dict)
    resolved_regular_expressions: dict[str, ResolvedRegularExpression] = field(default_factory=dict)
    # Derived: (topic id, partition) -> epoch of the member that holds it.
    partition_epochs: dict[tuple[uuid.UUID, int], int] = field(default_factory=dict)
    static_members: dict[str, str] = field(default_factory=dict)  # instance id -> member id

    @property
    def state(self) -> ConsumerGroupState:
        if not self.members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        for m in self.members.values():
            if m.state is not MemberState.STABLE or m.member_epoch != self.assignment_epoch:
                return ConsumerGroupState.RECONCILING
        return ConsumerGroupState.STABLE

    def copy(self) -> ConsumerGroup:
        """A copy to put back should the records of a change not be written (Kafka reverts
        its timeline). Members and assignments are immutable: copying the maps is enough."""
        return ConsumerGroup(
            self.group_id,
            self.group_epoch,
            dict(self.subscription_metadata),
            self.assignment_epoch,
            dict(self.members),
            dict(self.target_assignment),
            dict(self.resolved_regular_expressions),
            dict(self.partition_epochs),
            dict(self.static_members),
        )

    def partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        """The epoch of the member holding the partition, or -1 (currentPartitionEpoch)."""
        return self.partition_epochs.get((topic_id, partition), -1)

    def put_member(self, member: ConsumerGroupMember) -> None:
        """Add or replace a member, keeping the derived indexes in step.

        Raises:
          AssertionError: the member would hold a partition that another member holds: the
            invariant reconciliation exists for (Kafka throws IllegalStateException).
        """
        old = self.members.get(member.member_id)
        if old is not None:
            self._release(old)
            if old.instance_id is not None:
                self.static_members.pop(old.instance_id, None)
        for tp in member.owned_partitions():
            assert tp not in self.partition_epochs, f"{tp} is held by two members"
            self.partition_epochs[tp] = member.member_epoch
        self.members[member.member_id] = member
        if member.instance_id is not None:
            self.static_members[member.instance_id] = member.member_id

    def remove_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is not None:
            self._release(old)
            if old.instance_id is not None and self.static_members.get(old.instance_id) == (
                member_id
            ):
                del self.static_members[old.instance_id]

    def _release(self, member: ConsumerGroupMember) -> None:
        for tp in member.owned_partitions():
            self.partition_epochs.pop(tp, None)

    def subscribed_topic_names(self, member: ConsumerGroupMember) -> set[str]:
        """The member's topics: its names plus what its regex resolved to (an unresolved
        regex matches nothing yet, as Kafka's)."""
        names = set(member.subscribed_topic_names)
        if member.subscribed_topic_regex:
            resolved = self.resolved_regular_expressions.get(member.subscribed_topic_regex)
            if resolved is not None:
                names |= resolved.topics
        return names

    def all_subscribed_topic_names(self, members: Iterable[ConsumerGroupMember]) -> set[str]:
        out: set[str] = set()
        for m in members:
            out |= self.subscribed_topic_names(m)
        return out

    def preferred_server_assignor(self, default: str) -> str:
        """The assignor most members ask for (ties: by name), else `default`
        (ConsumerGroup.computePreferredServerAssignor)."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return default
        return min(counts, key=lambda name: (-counts[name], name))

    # --- classic members (online migration) ---------------------------------------------

    def num_classic_protocol_members(self) -> int:
        return sum(1 for m in self.members.values() if m.use_classic_protocol)

    def supports_classic_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Whether a classic member with this protocol type and these protocols may join:
        the "consumer" type, and a protocol every classic member supports
        (ConsumerGroup.supportsClassicProtocols)."""
        if protocol_type != "consumer":
            return False
        if not self.members:
            return bool(names)
        classic = [m for m in self.members.values() if m.classic_member_metadata is not None]
        return any(
            all(name in dict(m.classic_member_metadata.supported_protocols) for m in classic)  # type: ignore[union-attr]
            for name in names
        )

    def all_members_use_classic_protocol_except(self, member_ids: set[str]) -> bool:
        """Whether every member but `member_ids` uses the classic protocol, and none of
        those does (ConsumerGroup.allMembersUseClassicProtocolExcept)."""
        leaving = [self.members[m] for m in member_ids if m in self.members]
        return all(not m.use_classic_protocol for m in leaving) and all(
            m.use_classic_protocol for m in self.members.values() if m.member_id not in member_ids
        )

    def waiting_on_unreleased_partition(self, member: ConsumerGroupMember) -> bool:
        """Whether a member in UNRELEASED_PARTITIONS still waits for a partition another
        member holds (ConsumerGroup.waitingOnUnreleasedPartition)."""
        if member.state is not MemberState.UNRELEASED_PARTITIONS:
            return False
        for topic_id, partitions in self.target_assignment.get(member.member_id, {}).items():
            assigned = member.assigned_partitions.get(topic_id, frozenset())
            for p in partitions:
                if p not in assigned and self.partition_epoch(topic_id, p) != -1:
                    return True
        return False
