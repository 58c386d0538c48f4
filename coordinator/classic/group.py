"""Group and Member: the plain data the coordinator owns, with the bookkeeping rules on it.

Kafka keeps this in GroupMetadata/MemberMetadata (ClassicGroup/ClassicGroupMember). What
happens on a request lives in `membership.py`; this module holds the membership rules that
do not depend on the request: who leads, which protocols are candidates, how the vote goes,
which topics the group subscribes to, and the one place that changes the state.

Deadlines are data: `Member.heartbeat_deadline_ms`, `Group.pending_members`,
`Group.join_deadline_ms` and `Group.sync_deadline_ms` hold monotonic times in ms (None: no
deadline); the coordinator reads them in `next_deadline_ms` and acts on them in `expire`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, NamedTuple, TypeVar

from coordinator.classic.state import TRANSITIONS, GroupState
from protocol.consumer_protocol import decode_subscription
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.join_group import JoinGroupRequest, JoinGroupResponseMember
from protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    MemberResponse,
)
from protocol.messages.sync_group import SyncGroupRequest
from protocol.primitives import DecodeError

__all__ = [
    "CONSUMER_PROTOCOL_TYPE",
    "Group",
    "Member",
    "OffsetAndMetadata",
    "Parked",
    "check_generation",
    "leave_each",
    "member_error",
    "touch",
]

# The protocol type of Kafka consumers; only their subscriptions are parsed (offset expiry
# and OffsetDelete need the subscribed topics).
CONSUMER_PROTOCOL_TYPE = "consumer"

TopicPartition = tuple[str, int]


_Request = TypeVar("_Request", JoinGroupRequest, SyncGroupRequest)


@dataclass(frozen=True, slots=True)
class Parked(Generic[_Request]):
    """A JoinGroup or SyncGroup waiting for its reply: the broker's token, the version and
    the request (from which the API's `error_response` builds a failed reply)."""

    token: int
    api_version: int
    request: _Request


class OffsetAndMetadata(NamedTuple):
    """A committed offset as Kafka keeps it; times are wall-clock ms.

    Immutable; a NamedTuple rather than a frozen dataclass, whose __init__ sets each field
    through object.__setattr__: one is made per partition of every commit."""

    offset: int
    leader_epoch: int  # -1: none
    metadata: str
    commit_timestamp_ms: int
    expire_timestamp_ms: int | None = None  # only from OffsetCommit v2-4 with a retention time


@dataclass(eq=False, slots=True)
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata) in the member's order of preference
    assignment: bytes = b""
    # True from a member's first JoinGroup until that rebalance completes.
    is_new: bool = False
    awaiting_join: Parked[JoinGroupRequest] | None = None
    awaiting_sync: Parked[SyncGroupRequest] | None = None
    heartbeat_deadline_ms: int | None = None

    def metadata(self, protocol: str) -> bytes:
        """The member's metadata for a protocol it supports (the group's selected one)."""
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"{self.member_id} lacks {protocol}")  # pragma: no cover - selected

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among the candidates."""
        return next(name for name, _ in self.protocols if name in candidates)

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        return protocols == self.protocols


class Group:
    def __init__(self, group_id: str, state: GroupState, now_ms: int) -> None:
        self.group_id = group_id
        # After construction only `transition_to` changes the state and its time.
        self.state = state
        self.previous_state: GroupState | None = None
        self.state_timestamp_ms = now_ms  # monotonic
        # A group read back from the log knows when its state began only from its record
        # (wall clock; None when the record has no time). The next transition ends that.
        self.state_from_log = False
        self.logged_state_wall_ms: int | None = None

        self.generation_id = 0
        self.protocol_type: str | None = None  # None: never had a member (offsets only)
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, Member] = {}  # in order of joining: the leader's successor
        self.static_members: dict[str, str] = {}  # group_instance_id -> member_id
        # Members that were sent MEMBER_ID_REQUIRED -> when that id expires unused.
        self.pending_members: dict[str, int] = {}
        # Members of this generation that have not sent SyncGroup yet.
        self.pending_sync_members: set[str] = set()
        self.subscribed_topics: frozenset[str] | None = None

        # The join phase ends at join_deadline_ms. The initial rebalance of an Empty group
        # waits initial_delay_ms and is extended while new members arrive, for at most
        # initial_remaining_ms more (Kafka's InitialDelayedJoin).
        self.join_deadline_ms: int | None = None
        self.new_member_added = False
        self.initial_delay_ms = 0
        self.initial_remaining_ms = 0
        self.sync_deadline_ms: int | None = None

        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        # Commits whose records are not durable yet, per partition (no zero counts).
        self.pending_offset_commits: Counter[TopicPartition] = Counter()

    def __repr__(self) -> str:
        return f"Group({self.group_id!r}, {self.state}, generation={self.generation_id})"

    # --- state -----------------------------------------------------------------------------

    def transition_to(self, new: GroupState, now_ms: int) -> None:
        """Move to `new`, recording the time. Any move not in TRANSITIONS is a bug."""
        if self.state not in TRANSITIONS[new]:
            raise AssertionError(
                f"group {self.group_id!r}: invalid transition {self.state} -> {new}"
            )
        self.previous_state = self.state
        self.state = new
        self.state_timestamp_ms = now_ms
        self.state_from_log = False
        self.logged_state_wall_ms = None

    def can_rebalance(self) -> bool:
        return self.state in TRANSITIONS[GroupState.PREPARING_REBALANCE]

    def state_wall_ms(self, wall_offset_ms: int | None) -> int | None:
        """The wall-clock time the group entered its state, if it can be known.

        `wall_offset_ms` is wall-clock minus monotonic time, when the caller knows it.
        """
        if self.state_from_log:
            return self.logged_state_wall_ms
        if wall_offset_ms is None:
            return None
        return self.state_timestamp_ms + wall_offset_ms

    # --- members ---------------------------------------------------------------------------

    def add(self, member: Member) -> None:
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader_id is None:
            self.leader_id = member.member_id
        self.members[member.member_id] = member
        self.pending_members.pop(member.member_id, None)

    def remove(self, member_id: str) -> None:
        """Forget a member (or a pending member id); the first remaining member leads."""
        member = self.members.pop(member_id, None)
        if member is not None and member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader_id == member_id:
            self.leader_id = next(iter(self.members), None)
        self.pending_members.pop(member_id, None)
        self.pending_sync_members.discard(member_id)

    def rename_member(self, old_member_id: str, new_member_id: str) -> Member:
        """Give a static member a new member id (a restarted instance replaces the old one)."""
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        if old_member_id in self.pending_sync_members:
            self.pending_sync_members.discard(old_member_id)
            self.pending_sync_members.add(new_member_id)
        assert member.group_instance_id is not None
        self.static_members[member.group_instance_id] = new_member_id
        return member

    def update_member(
        self,
        member: Member,
        protocols: list[tuple[str, bytes]],
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
    ) -> None:
        member.protocols = protocols
        member.rebalance_timeout_ms = rebalance_timeout_ms
        member.session_timeout_ms = session_timeout_ms

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def num_awaiting_join(self) -> int:
        return sum(1 for m in self.members.values() if m.awaiting_join is not None)

    def has_all_members_joined(self) -> bool:
        return self.num_awaiting_join() == len(self.members) and not self.pending_members

    def maybe_elect_new_joined_leader(self) -> bool:
        """Make sure the leader is a member that rejoined; False if nobody rejoined."""
        assert self.leader_id is not None, "a group with members has a leader"
        if self.members[self.leader_id].awaiting_join is not None:
            return True
        for member_id, member in self.members.items():
            if member.awaiting_join is not None:
                self.leader_id = member_id
                return True
        return False

    # --- protocols -------------------------------------------------------------------------

    def supports_protocols(self, protocol_type: str, names: set[str]) -> bool:
        """Can a member with this protocol type and these protocols join?"""
        if self.state is GroupState.EMPTY:
            return bool(protocol_type) and bool(names)
        if self.protocol_type != protocol_type:
            return False
        return bool(names & self.candidate_protocols()) if self.members else bool(names)

    def candidate_protocols(self) -> set[str]:
        """The protocols every member supports."""
        counts: Counter[str] = Counter()
        for member in self.members.values():
            counts.update({name for name, _ in member.protocols})
        return {name for name, n in counts.items() if n == len(self.members)}

    def select_protocol(self) -> str:
        """Each member votes for its first candidate; most votes wins (first to get there
        on a tie; Kafka's tie order is its hash map's)."""
        candidates = self.candidate_protocols()
        votes = Counter(m.vote(candidates) for m in self.members.values())
        return votes.most_common(1)[0][0]

    def compute_subscribed_topics(self) -> frozenset[str] | None:
        """The topics a "consumer" group subscribes to; None when not known.

        Kafka parses every member's subscription for the selected protocol and gives up
        (None) when one does not parse. An Empty consumer group subscribes to nothing.
        """
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return None
        if not self.members:
            return frozenset()
        if self.protocol_name is None:
            return None
        topics: set[str] = set()
        try:
            for member in self.members.values():
                topics.update(decode_subscription(member.metadata(self.protocol_name)).topics)
        except DecodeError:
            return None
        return frozenset(topics)

    def is_subscribed_to_topic(self, topic: str) -> bool:
        return self.subscribed_topics is not None and topic in self.subscribed_topics

    def current_member_metadata(self) -> list[JoinGroupResponseMember]:
        """What the leader receives in its JoinGroup response: every member's metadata."""
        assert self.protocol_name is not None
        return [
            JoinGroupResponseMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                metadata=m.metadata(self.protocol_name),
            )
            for m in self.members.values()
        ]

    # --- offsets ---------------------------------------------------------------------------

    def has_offsets(self) -> bool:
        """Committed offsets, or commits on their way to the log."""
        return bool(self.offsets) or bool(self.pending_offset_commits)


# --- checks and sessions, for every request from a member ----------------------------------


def touch(member: Member, now_ms: int) -> None:
    """A request from the member: its session runs from now.

    A member waiting in a JoinGroup or SyncGroup keeps what it has (no deadline, or a
    new member's join timeout), as Kafka counts it alive until it is answered.
    """
    if member.awaiting_join is None and member.awaiting_sync is None:
        member.heartbeat_deadline_ms = now_ms + member.session_timeout_ms


def member_error(group: Group, member_id: str, group_instance_id: str | None) -> ErrorCode | None:
    """Kafka's validateCurrentMember: a static member's instance id must map to the member id
    sent (FENCED_INSTANCE_ID if another holds it); any other member must be known."""
    if group_instance_id is not None:
        current = group.static_members.get(group_instance_id)
        if current is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        return None if current == member_id else ErrorCode.FENCED_INSTANCE_ID
    return None if member_id in group.members else ErrorCode.UNKNOWN_MEMBER_ID


def check_generation(group: Group, generation_id: int) -> None:
    if generation_id != group.generation_id:
        raise KafkaError(
            ErrorCode.ILLEGAL_GENERATION,
            f"group {group.group_id!r}: generation {generation_id} != {group.generation_id}",
        )


def leave_each(
    version: int, request: LeaveGroupRequest, leave_one: Callable[[MemberIdentity], ErrorCode]
) -> tuple[LeaveGroupResponse, list[ErrorCode]]:
    """LeaveGroup's members (v3+: a batch; v0-2: the one member id), each handed to
    `leave_one` for its code, in order; the answer (v3+: per member; v0-2: the member's
    code at the top level) and the codes."""
    if version >= 3:
        identities = list(request.members)
    else:
        identities = [MemberIdentity(member_id=request.member_id)]
    codes = [leave_one(identity) for identity in identities]
    if version < 3:
        return LeaveGroupResponse(error_code=codes[0]), codes
    results = [
        MemberResponse(
            member_id=identity.member_id,
            group_instance_id=identity.group_instance_id,
            error_code=code,
        )
        for identity, code in zip(identities, codes, strict=True)
    ]
    return LeaveGroupResponse(error_code=ErrorCode.NONE, members=results), codes
