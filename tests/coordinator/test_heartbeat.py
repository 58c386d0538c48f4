"""Heartbeat and LeaveGroup: sessions, their expiry, and members leaving."""

from __future__ import annotations

import pytest

from coordinator.classic.state import GroupState
from protocol.errors import ErrorCode
from tests.coordinator.builders import (
    GROUP,
    WALL,
    commit,
    coordinator,
    delete_groups,
    heartbeat,
    join,
    joined_group,
    leave,
    new_member_id,
    raised,
    reply,
    stable_group,
    sync,
)

E = ErrorCode


def test_heartbeat_of_stable_group_returns_none_and_moves_the_session_deadline() -> None:
    c, ids = stable_group(2)
    assert heartbeat(c, 5_000, ids[1], 1).error_code == E.NONE
    assert c.group(GROUP).members[ids[1]].heartbeat_deadline_ms == 15_000


def test_heartbeat_during_completing_rebalance_returns_none() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    assert heartbeat(c, 1, ids[1], 1).error_code == E.NONE


def test_heartbeat_during_preparing_rebalance_returns_rebalance_in_progress() -> None:
    c, ids = stable_group(2)
    join(c, 1, ids[0])
    assert heartbeat(c, 2, ids[1], 1).error_code == E.REBALANCE_IN_PROGRESS
    assert c.group(GROUP).members[ids[1]].heartbeat_deadline_ms == 10_002


@pytest.mark.parametrize(
    ("group_id", "member", "generation_id", "error"),
    [
        ("", 0, 1, E.INVALID_GROUP_ID),
        ("unknown", 0, 1, E.UNKNOWN_MEMBER_ID),
        (GROUP, "stranger", 1, E.UNKNOWN_MEMBER_ID),
        (GROUP, 0, 0, E.ILLEGAL_GENERATION),
        (GROUP, 0, 2, E.ILLEGAL_GENERATION),
    ],
)
def test_heartbeat_refused_as_a_whole(
    group_id: str, member: int | str, generation_id: int, error: ErrorCode
) -> None:
    c, ids = stable_group(1)
    member_id = ids[member] if isinstance(member, int) else member
    assert raised(heartbeat, c, 1, member_id, generation_id, group_id=group_id) == error


def test_heartbeat_of_an_empty_group_returns_unknown_member_id() -> None:
    c = coordinator()
    new_member_id(c, 0)  # the group exists, Empty, with a pending member only
    assert c.group(GROUP).state is GroupState.EMPTY
    assert raised(heartbeat, c, 1, "m", 0) == E.UNKNOWN_MEMBER_ID


def test_heartbeat_of_a_dead_group_returns_coordinator_not_available() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    delete_groups(c, 1, GROUP)
    assert raised(heartbeat, c, 2, "m", 0) == E.COORDINATOR_NOT_AVAILABLE


def test_session_expiry_removes_the_member_and_the_group_rebalances() -> None:
    c, ids = stable_group(2)
    heartbeat(c, 5_000, ids[1], 1)
    assert c.next_deadline_ms() == 10_000
    outcome = c.expire(10_000, WALL + 10_000)
    assert outcome.replies == ()
    assert outcome.records == ()
    group = c.group(GROUP)
    assert list(group.members) == [ids[1]]
    assert group.leader_id == ids[1]
    assert group.state is GroupState.PREPARING_REBALANCE
    assert heartbeat(c, 10_001, ids[1], 1).error_code == E.REBALANCE_IN_PROGRESS
    token, outcome = join(c, 10_002, ids[1])
    response = reply(outcome, token)
    assert (response.generation_id, response.leader) == (2, ids[1])


def test_every_member_request_counts_as_a_heartbeat() -> None:
    c, ids = stable_group(2)
    join(c, 3_000, ids[1])  # follower rejoin, same protocols: answered at once
    sync(c, 4_000, ids[1], 1)
    c.on_appended(commit(c, 5_000, {("t", 0): 1}, member_id=ids[1], generation_id=1)[1], 5_000)
    assert c.group(GROUP).members[ids[1]].heartbeat_deadline_ms == 15_000


def test_nothing_is_due_in_a_fresh_coordinator() -> None:
    c = coordinator()
    assert c.next_deadline_ms() is None
    assert c.expire(0, WALL).replies == ()


def test_leave_v0_to_v2_answers_at_the_top_level() -> None:
    c, ids = stable_group(2)
    token, outcome = leave(c, 1, (ids[1], None), version=0)
    response = reply(outcome, token)
    assert (response.error_code, response.members) == (E.NONE, [])
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE
    token, outcome = leave(c, 2, ("stranger", None), version=2)
    assert reply(outcome, token).error_code == E.UNKNOWN_MEMBER_ID


def test_leave_v3_answers_each_member_of_the_batch() -> None:
    c, ids = stable_group(3, static=True)
    token, outcome = leave(
        c,
        1,
        (ids[0], "instance-0"),
        (ids[1], "instance-2"),  # another member's instance id
        ("stranger", None),
        ("", "nobody"),
        ("", None),
    )
    results = reply(outcome, token).members
    assert [(r.member_id, r.group_instance_id, r.error_code) for r in results] == [
        (ids[0], "instance-0", E.NONE),
        (ids[1], "instance-2", E.FENCED_INSTANCE_ID),
        ("stranger", None, E.UNKNOWN_MEMBER_ID),
        ("", "nobody", E.UNKNOWN_MEMBER_ID),
        ("", None, E.UNKNOWN_MEMBER_ID),
    ]
    group = c.group(GROUP)
    assert list(group.members) == ids[1:]
    assert group.leader_id == ids[1]


def test_leave_with_nobody_removed_does_not_rebalance() -> None:
    c, _ids = stable_group(2)
    leave(c, 1, ("stranger", None))
    assert c.group(GROUP).state is GroupState.STABLE


def test_leave_of_a_pending_member_forgets_its_id() -> None:
    c = coordinator()
    member_id = new_member_id(c, 0)
    token, outcome = leave(c, 1, (member_id, None))
    assert reply(outcome, token).members[0].error_code == E.NONE
    group = c.group(GROUP)
    assert group.pending_members == {}
    assert group.state is GroupState.EMPTY


def test_leave_during_join_phase_may_end_it() -> None:
    c, ids = stable_group(2)
    token, _ = join(c, 1, ids[0])
    _, outcome = leave(c, 2, (ids[1], None))
    assert reply(outcome, token).generation_id == 2
    assert c.group(GROUP).state is GroupState.COMPLETING_REBALANCE


def test_leave_during_completing_rebalance_answers_parked_syncs_and_rebalances() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 3)
    parked, _ = sync(c, 1, ids[1], 1)
    _, outcome = leave(c, 2, (ids[2], None))
    assert reply(outcome, parked).error_code == E.REBALANCE_IN_PROGRESS
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE


@pytest.mark.parametrize(
    ("group_id", "version", "error"),
    [("", 5, E.INVALID_GROUP_ID), ("", 0, E.INVALID_GROUP_ID), ("unknown", 2, E.UNKNOWN_MEMBER_ID)],
)
def test_leave_refused_as_a_whole(group_id: str, version: int, error: ErrorCode) -> None:
    c, ids = stable_group(1)
    assert raised(leave, c, 1, (ids[0], None), group_id=group_id, version=version) == error


def test_leave_v3_of_an_unknown_group_answers_unknown_member_id_per_member() -> None:
    # Kafka 4.x GroupCoordinatorService.leaveGroup: top-level NONE, each member refused.
    c, ids = stable_group(1)
    token, outcome = leave(c, 1, (ids[0], None), ("", "instance"), group_id="unknown")
    response = reply(outcome, token)
    assert response.error_code == E.NONE
    assert [(m.member_id, m.group_instance_id, m.error_code) for m in response.members] == [
        (ids[0], None, E.UNKNOWN_MEMBER_ID),
        ("", "instance", E.UNKNOWN_MEMBER_ID),
    ]
    assert c.group("unknown") is None


def test_leave_of_a_dead_group_returns_coordinator_not_available() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    delete_groups(c, 1, GROUP)
    assert raised(leave, c, 2, ("m", None)) == E.COORDINATOR_NOT_AVAILABLE


def test_heartbeat_from_a_member_waiting_in_a_rebalance_does_not_start_its_session() -> None:
    # Its JoinGroup is parked on one connection; a heartbeat comes on another.
    c, ids = stable_group(2)
    join(c, 1, ids[0])
    assert heartbeat(c, 2, ids[0], 1).error_code == E.REBALANCE_IN_PROGRESS
    group = c.group(GROUP)
    assert group.members[ids[0]].heartbeat_deadline_ms is None
    c.expire(30_000, WALL)  # ids[1] is gone (session), ids[0] stays though silent
    assert list(group.members) == [ids[0]]


def test_new_member_keeps_its_join_timeout_when_it_sends_its_join_again() -> None:
    c, ids = stable_group(2)
    join(c, 1, ids[0])
    member_id = new_member_id(c, 2)
    join(c, 3, member_id)
    join(c, 4, member_id)  # a retry of the parked JoinGroup
    assert c.group(GROUP).members[member_id].heartbeat_deadline_ms == 3 + 300_000


def test_leave_of_a_pending_member_id_rebalances_a_stable_group() -> None:
    # Kafka 4.x (classicGroupLeaveToClassicGroup): a pending member id that leaves counts
    # as a member that left; 3.x left the Stable group alone.
    c, _ = stable_group(1)
    member_id = new_member_id(c, 1)
    token, outcome = leave(c, 2, (member_id, None))
    assert reply(outcome, token).members[0].error_code == E.NONE
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE


def test_leave_of_the_pending_member_id_that_held_the_join_phase_open_ends_it() -> None:
    c, ids = stable_group(1)
    member_id = new_member_id(c, 1)
    token, _ = join(c, 2, ids[0])
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE  # waiting for the pending id
    _, outcome = leave(c, 3, (member_id, None))
    assert reply(outcome, token).generation_id == 2
    assert c.group(GROUP).state is GroupState.COMPLETING_REBALANCE
