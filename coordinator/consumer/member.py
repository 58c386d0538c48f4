"""A member of a consumer group and its reconciliation towards the target assignment.

Follows Kafka's ConsumerGroupMember, MemberState and CurrentAssignmentBuilder
(org.apache.kafka.coordinator.group.modern.consumer).

Theory of operation
-------------------
The group has a *target assignment* per member, computed by the assignor at the target
assignment epoch. A member's *current assignment* moves towards it one safe step at a time,
and never gives a member a partition that another member may still be consuming:

* partitions that leave the member are first put *pending revocation*: the member keeps
  its epoch and stays in UNREVOKED_PARTITIONS until a heartbeat reports that it no longer
  owns them (or its rebalance timeout fences it);
* partitions that come to the member are given only once no other member holds them (as
  assigned or pending revocation): until then the member is at the new epoch in
  UNRELEASED_PARTITIONS, and receives them on a later heartbeat.

What each state does on a heartbeat (CurrentAssignmentBuilder.build):

    state                   action
    STABLE                  member epoch != target epoch: compute the next assignment;
                            else nothing
    UNREVOKED_PARTITIONS    still owns (or did not report) a partition pending revocation:
                            nothing; else compute the next assignment
    UNRELEASED_PARTITIONS   compute the next assignment (takes partitions now released)
    UNKNOWN                 (read from a record of a newer version) owns partitions or did
                            not report: FENCED_MEMBER_EPOCH; else compute the next assignment

and "compute the next assignment" ends in one of three states:

    revoke: some partition must go and is still owned  -> UNREVOKED_PARTITIONS, same epoch
    wait:   some target partition is held by another   -> UNRELEASED_PARTITIONS, target epoch
    else                                               -> STABLE, target epoch

`TRANSITIONS` lists, for each state, the states it may be entered from: every state of
the three may follow any other, and UNKNOWN is never entered by reconciliation.
`transition_to` is the only code that sets a member's state (replay aside, which takes the
state from the record).
"""

from __future__ import annotations

import base64
import dataclasses
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from protocol.errors import ErrorCode, KafkaError

__all__ = [
    "TRANSITIONS",
    "Assignment",
    "ClassicMemberMetadata",
    "ConsumerGroupMember",
    "MemberState",
    "new_member_id",
    "reconcile",
    "transition_to",
]

# topic id -> partitions.
Assignment = Mapping[uuid.UUID, frozenset[int]]


class MemberState(Enum):
    """Kafka's MemberState, with its record values."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        """A state read from a record; a value we do not know is UNKNOWN (as Kafka)."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN


_RECONCILED = frozenset(
    {
        MemberState.STABLE,
        MemberState.UNREVOKED_PARTITIONS,
        MemberState.UNRELEASED_PARTITIONS,
        MemberState.UNKNOWN,
    }
)
# The one transition table: state -> the states it may be entered from.
TRANSITIONS: dict[MemberState, frozenset[MemberState]] = {
    MemberState.STABLE: _RECONCILED,
    MemberState.UNREVOKED_PARTITIONS: _RECONCILED,
    MemberState.UNRELEASED_PARTITIONS: _RECONCILED,
    MemberState.UNKNOWN: frozenset(),
}


@dataclass(frozen=True, slots=True)
class ClassicMemberMetadata:
    """What a member that speaks the classic protocol (JoinGroup/SyncGroup/Heartbeat) to a
    consumer group sent in its JoinGroup: its session timeout and its protocols, (name,
    ConsumerProtocol subscription) in its order of preference (the record's
    ClassicMemberMetadata; Kafka's ConsumerGroupMember.classicMemberMetadata)."""

    session_timeout_ms: int
    supported_protocols: tuple[tuple[str, bytes], ...]

    @property
    def protocol_name(self) -> str:
        """The protocol named in its JoinGroup/SyncGroup responses: its first."""
        return self.supported_protocols[0][0]


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupMember:
    """One member, immutable: a change makes a new one (Kafka's ConsumerGroupMember.Builder)."""

    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    # Set for a member that uses the classic protocol (online migration); None otherwise.
    classic_member_metadata: ClassicMemberMetadata | None = None

    @property
    def use_classic_protocol(self) -> bool:
        return self.classic_member_metadata is not None

    def replace(self, **changes: Any) -> ConsumerGroupMember:
        """A copy with `changes`, which may not include the state (see `transition_to`)."""
        assert "state" not in changes, "the state changes through transition_to"
        return dataclasses.replace(self, **changes)

    def owned_partitions(self) -> set[tuple[uuid.UUID, int]]:
        """Every partition the member may be consuming: assigned or pending revocation."""
        return {
            (topic_id, p)
            for a in (self.assigned_partitions, self.partitions_pending_revocation)
            for topic_id, partitions in a.items()
            for p in partitions
        }


def new_member_id() -> str:
    """A member id the coordinator makes (Kafka's Uuid.randomUuid().toString(): base64url
    of 16 random bytes, unpadded)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def transition_to(
    member: ConsumerGroupMember, state: MemberState, **changes: Any
) -> ConsumerGroupMember:
    """The member in `state`, with `changes`.

    Raises:
      AssertionError: `state` may not follow the member's state (a bug, not a Kafka error).
    """
    assert member.state in TRANSITIONS[state], f"{member.state} -> {state}"
    return dataclasses.replace(member, state=state, **changes)


def _update_epoch(member: ConsumerGroupMember, epoch: int) -> dict[str, int]:
    # Kafka's Builder.updateMemberEpoch: the previous epoch is the one being left.
    return {"member_epoch": epoch, "previous_member_epoch": member.member_epoch}


def _owns_any(owned: list[tuple[uuid.UUID, list[int]]] | None, partitions: Assignment) -> bool:
    """Whether the member's reported partitions include one of `partitions` (a member that
    did not report is taken to still own them, as Kafka's ownsRevokedPartitions)."""
    if owned is None:
        return True
    return any(p in partitions.get(topic_id, ()) for topic_id, ps in owned for p in ps)


def reconcile(
    member: ConsumerGroupMember,
    *,
    target_epoch: int,
    target: Assignment,
    subscribed_topic_ids: Iterable[uuid.UUID],
    owned: list[tuple[uuid.UUID, list[int]]] | None,
    partition_epoch: Callable[[uuid.UUID, int], int],
) -> ConsumerGroupMember:
    """The member one step closer to `target` (Kafka's CurrentAssignmentBuilder.build).

    Args:
      target_epoch/target: the group's target assignment epoch and the member's target.
      subscribed_topic_ids: the topics the member subscribes to now; its target in other
        topics counts as empty.
      owned: the partitions the heartbeat reported as owned, or None when not reported.
      partition_epoch: the epoch of the member that holds a partition, -1 when none does.

    Raises:
      KafkaError(FENCED_MEMBER_EPOCH): an UNKNOWN member that still owns partitions.
    """

    def next_assignment(member_epoch: int) -> ConsumerGroupMember:
        return _next_assignment(
            member, member_epoch, target_epoch, target, subscribed_topic_ids, owned,
            partition_epoch,
        )  # fmt: skip

    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch == target_epoch:
            return member
        return next_assignment(member.member_epoch)
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member
        return next_assignment(member.member_epoch)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return next_assignment(member.member_epoch)
    if owned is None or any(ps for _, ps in owned):
        raise KafkaError(
            ErrorCode.FENCED_MEMBER_EPOCH,
            f"member {member.member_id} is in an unknown state: it must abandon all its "
            "partitions and rejoin",
        )
    return next_assignment(target_epoch)


def _next_assignment(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: Assignment,
    subscribed_topic_ids: Iterable[uuid.UUID],
    owned: list[tuple[uuid.UUID, list[int]]] | None,
    partition_epoch: Callable[[uuid.UUID, int], int],
) -> ConsumerGroupMember:
    """CurrentAssignmentBuilder.computeNextAssignment, topic by topic:

    assigned    = previously assigned ∩ target
    revoking    = previously assigned - assigned
    assigning   = target - assigned - partitions another member still holds
    """
    subscribed = set(subscribed_topic_ids)
    has_unreleased = False
    new_assigned: dict[uuid.UUID, frozenset[int]] = {}
    revoking: dict[uuid.UUID, frozenset[int]] = {}
    assigning: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id in set(target) | set(member.assigned_partitions):
        wanted = target.get(topic_id, frozenset()) if topic_id in subscribed else frozenset()
        current = member.assigned_partitions.get(topic_id, frozenset())
        kept = current & wanted
        pending_own = member.partitions_pending_revocation.get(topic_id, frozenset())
        free = set()
        for p in wanted - kept:
            if partition_epoch(topic_id, p) != -1 and p not in pending_own:
                has_unreleased = True
            else:
                free.add(p)
        if kept:
            new_assigned[topic_id] = kept
        if current - kept:
            revoking[topic_id] = current - kept
        if free:
            assigning[topic_id] = frozenset(free)

    if revoking and _owns_any(owned, revoking):
        return transition_to(
            member,
            MemberState.UNREVOKED_PARTITIONS,
            assigned_partitions=new_assigned,
            partitions_pending_revocation=revoking,
            **_update_epoch(member, member_epoch),
        )
    for topic_id, partitions in assigning.items():
        new_assigned[topic_id] = new_assigned.get(topic_id, frozenset()) | partitions
    return transition_to(
        member,
        MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE,
        assigned_partitions=new_assigned,
        partitions_pending_revocation={},
        **_update_epoch(member, target_epoch),
    )
