"""Group states, the transition table, and how each state answers each request.

Theory of operation
===================

A classic-protocol group lives in one of five states. The state changes only through
`Group.transition_to(new, now_ms)`, which checks `TRANSITIONS[new]` (the states a group may
come from, Kafka's `validPreviousStates`) and records when the change happened: offsets of an
Empty group expire counting from the time it became Empty.

    Empty                ── a member joins ───────────────────────▶ PreparingRebalance
    PreparingRebalance   ── all rejoined, or time is up ──────────▶ CompletingRebalance
                         ── nobody left at that point ────────────▶ Empty
    CompletingRebalance  ── the leader's SyncGroup ───────────────▶ Stable
    CompletingRebalance,
    Stable               ── a join, a leave, a session expiry ────▶ PreparingRebalance
    Empty                ── deleted, or its last offset expired ──▶ Dead

A rebalance has two phases. In PreparingRebalance the coordinator collects JoinGroups: each
member's JoinGroup is parked (no reply) until every known member has rejoined, or the
rebalance timeout (the largest of the members') runs out, or, for a group that was Empty,
the initial delay ends (or, as in Kafka 4.x, a timer removes a member or a pending member id
and everyone left has joined). Then the next generation starts: the generation id goes up by one,
the protocol is chosen by vote, every parked JoinGroup is answered (only the leader receives
the members' metadata) and the group is CompletingRebalance, or Empty when nobody is left.
In CompletingRebalance the members send SyncGroup; followers are parked until the leader's
SyncGroup brings the assignment, which is written to __consumer_offsets as a GroupMetadata
record; every parked member then receives its own assignment and the group is Stable.

Everything a member sends counts as a heartbeat; a member that is silent for its session
timeout is removed and the group rebalances. Members waiting in a JoinGroup or SyncGroup are
not expired, except new members, whose first JoinGroup times out after five minutes.

How each state answers, after the checks every request meets first (a bad group id, an
unknown group or member, a fenced static member, a wrong generation). An Empty group has no
members, so requests from "known members" meet UNKNOWN_MEMBER_ID there.

    JoinGroup, new member
        Empty, CompletingRebalance,   add it, PreparingRebalance (CompletingRebalance first
        Stable                        answers the parked SyncGroups REBALANCE_IN_PROGRESS)
        PreparingRebalance            add it; it waits
        Dead                          COORDINATOR_NOT_AVAILABLE
    JoinGroup, known member
        PreparingRebalance            update it; it waits
        CompletingRebalance           same protocols: this generation at once; else rebalance
        Stable                        the leader, or changed protocols: rebalance; else this
                                      generation at once
        Dead                          COORDINATOR_NOT_AVAILABLE
    SyncGroup
        PreparingRebalance            REBALANCE_IN_PROGRESS
        CompletingRebalance           followers wait; the leader's assignment is stored, every
                                      waiting member gets its own, Stable
        Stable                        the member's assignment
        Dead                          COORDINATOR_NOT_AVAILABLE
    Heartbeat
        PreparingRebalance            REBALANCE_IN_PROGRESS
        CompletingRebalance, Stable   NONE
        Dead                          COORDINATOR_NOT_AVAILABLE
    LeaveGroup (a member, or a pending member id: Kafka 4.x counts both)
        PreparingRebalance            remove; the join phase may be over (not in the
                                      initial delay)
        CompletingRebalance, Stable   remove; rebalance
        Dead                          COORDINATOR_NOT_AVAILABLE
        unknown group                 v3+: NONE, each member UNKNOWN_MEMBER_ID (Kafka 4.x)
    OffsetCommit
        Empty                         generation -1, no member id: store
        PreparingRebalance, Stable    members, with this generation: store
        CompletingRebalance           REBALANCE_IN_PROGRESS
        Dead                          COORDINATOR_NOT_AVAILABLE
    OffsetFetch                       from memory, in every state (require_stable: once
                                      the group's commits on their way are durable)
    DeleteGroups
        Empty                         Dead, with tombstones for its offsets and itself
        the other live states         NON_EMPTY_GROUP
        Dead                          GROUP_ID_NOT_FOUND
    OffsetDelete
        Empty                         tombstones
        the other live states         "consumer" groups: GROUP_SUBSCRIBED_TO_TOPIC for the
                                      topics they subscribe to, tombstones for the others;
                                      other protocol types: NON_EMPTY_GROUP
        Dead                          GROUP_ID_NOT_FOUND

A Dead group stays in memory only until its tombstones are durable; requests that reach it
meanwhile get the Dead column, as in Kafka, where another thread may have just removed it.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["TRANSITIONS", "GroupState"]


class GroupState(Enum):
    """Kafka's ClassicGroupState; `str()` gives Kafka's spelling for DescribeGroups/ListGroups."""

    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


_S = GroupState

# new state -> the states a group may move there from (Kafka's validPreviousStates).
TRANSITIONS: dict[GroupState, frozenset[GroupState]] = {
    _S.PREPARING_REBALANCE: frozenset({_S.STABLE, _S.COMPLETING_REBALANCE, _S.EMPTY}),
    _S.COMPLETING_REBALANCE: frozenset({_S.PREPARING_REBALANCE}),
    _S.STABLE: frozenset({_S.COMPLETING_REBALANCE}),
    _S.EMPTY: frozenset({_S.PREPARING_REBALANCE}),
    _S.DEAD: frozenset(
        {
            _S.STABLE,
            _S.PREPARING_REBALANCE,
            _S.COMPLETING_REBALANCE,
            _S.EMPTY,
            _S.DEAD,
        }
    ),
}
