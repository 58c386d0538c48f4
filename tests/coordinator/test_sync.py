"""SyncGroup: the leader's assignment, parked followers, and the write that makes it stick."""

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
    raised,
    reply,
    stable_group,
    subscription,
    sync,
)

E = ErrorCode


def test_leader_sync_stores_the_assignment_and_releases_every_parked_follower() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 3)
    followers = [sync(c, 1, m, 1)[0] for m in ids[1:]]
    token, outcome = sync(c, 2, ids[0], 1, {m: m.encode() for m in ids})
    assert [r.token for r in outcome.replies] == [token, *followers]
    for member_id, t in zip(ids, [token, *followers], strict=True):
        response = reply(outcome, t)
        assert response.error_code == E.NONE
        assert response.assignment == member_id.encode()
        assert (response.protocol_type, response.protocol_name) == ("consumer", "range")
    (record,) = outcome.records
    assert record.key.group == GROUP
    value = record.value
    assert (value.protocol_type, value.generation, value.protocol, value.leader) == (
        "consumer",
        1,
        "range",
        ids[0],
    )
    assert [(m.member_id, m.client_id, m.client_host) for m in value.members] == [
        (m, f"client-{i}", "/127.0.0.1") for i, m in enumerate(ids)
    ]
    assert [(m.subscription, m.assignment) for m in value.members] == [
        (subscription("t"), m.encode()) for m in ids
    ]
    assert [(m.session_timeout, m.rebalance_timeout) for m in value.members] == [
        (10_000, 30_000)
    ] * 3
    assert c.group(GROUP).state is GroupState.STABLE


def test_followers_wait_for_the_leaders_sync() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    _token, outcome = sync(c, 1, ids[1], 1)
    assert outcome.replies == ()
    assert outcome.records == ()
    assert c.group(GROUP).state is GroupState.COMPLETING_REBALANCE


def test_members_the_leader_left_out_get_an_empty_assignment_and_strangers_are_ignored() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    _, outcome = sync(c, 1, ids[0], 1, {ids[0]: b"x", "stranger": b"y"})
    (record,) = outcome.records
    assert [(m.member_id, m.assignment) for m in record.value.members] == [
        (ids[0], b"x"),
        (ids[1], b""),
    ]


def test_sync_of_stable_group_returns_the_members_assignment() -> None:
    c, ids = stable_group(2)
    token, outcome = sync(c, 5, ids[1], 1, protocol_type="consumer", protocol_name="range")
    assert reply(outcome, token).assignment == f"a-{ids[1]}".encode()
    assert c.group(GROUP).members[ids[1]].heartbeat_deadline_ms == 10_005


def test_sync_during_preparing_rebalance_returns_rebalance_in_progress() -> None:
    c, ids = stable_group(2)
    join(c, 1, ids[0])
    token, outcome = sync(c, 2, ids[1], 1)
    assert reply(outcome, token).error_code == E.REBALANCE_IN_PROGRESS


@pytest.mark.parametrize(
    ("kw", "error"),
    [
        ({"group_id": ""}, E.INVALID_GROUP_ID),
        ({"group_id": "unknown"}, E.UNKNOWN_MEMBER_ID),
        ({"member_id": "unknown"}, E.UNKNOWN_MEMBER_ID),
        ({"generation_id": 2}, E.ILLEGAL_GENERATION),
        ({"protocol_type": "connect"}, E.INCONSISTENT_GROUP_PROTOCOL),
        ({"protocol_name": "roundrobin"}, E.INCONSISTENT_GROUP_PROTOCOL),
    ],
)
def test_sync_refused_as_a_whole(kw: dict[str, object], error: ErrorCode) -> None:
    c, ids = stable_group(2)
    args = {"member_id": ids[1], "generation_id": 1, **kw}
    member_id, generation_id = args.pop("member_id"), args.pop("generation_id")
    assert raised(sync, c, 1, member_id, generation_id, **args) == error


def test_sync_of_a_dead_group_returns_coordinator_not_available() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    delete_groups(c, 1, GROUP)
    assert raised(sync, c, 2, "m", 0) == E.COORDINATOR_NOT_AVAILABLE


def test_rebalance_answers_parked_syncs_with_rebalance_in_progress() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    parked, _ = sync(c, 1, ids[1], 1)
    _token, outcome = join(c, 2, version=3)  # a new member arrives
    assert reply(outcome, parked).error_code == E.REBALANCE_IN_PROGRESS
    assert all(m.assignment == b"" for m in c.group(GROUP).members.values())
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE


def test_second_sync_from_same_member_supersedes_the_parked_one() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    first, _ = sync(c, 1, ids[1], 1)
    second, outcome = sync(c, 2, ids[1], 1)
    assert reply(outcome, first).error_code == E.REBALANCE_IN_PROGRESS
    _, outcome = sync(c, 3, ids[0], 1, {ids[1]: b"x"})
    assert reply(outcome, second).assignment == b"x"


def test_member_that_never_syncs_is_removed_at_the_sync_deadline_and_the_group_rebalances() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 3, session_timeout_ms=60_000)
    sync(c, 1, ids[0], 1, dict.fromkeys(ids, b"x"))
    sync(c, 2, ids[1], 1)
    assert c.next_deadline_ms() == 30_000  # the rebalance timeout, from the end of the join
    c.expire(30_000, WALL)
    group = c.group(GROUP)
    assert list(group.members) == ids[:2]
    assert group.state is GroupState.PREPARING_REBALANCE
    assert heartbeat(c, 30_001, ids[1], 1).error_code == E.REBALANCE_IN_PROGRESS


def test_followers_waiting_for_a_leader_that_never_syncs_are_told_to_rejoin() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2, session_timeout_ms=60_000)
    parked, _ = sync(c, 1, ids[1], 1)
    outcome = c.expire(30_000, WALL)
    assert reply(outcome, parked).error_code == E.REBALANCE_IN_PROGRESS
    assert list(c.group(GROUP).members) == [ids[1]]


def test_sync_deadline_is_dropped_once_everyone_has_synced() -> None:
    c, _ids = stable_group(2)
    assert c.group(GROUP).sync_deadline_ms is None


@pytest.mark.parametrize(
    ("storage_error", "answer"),
    [
        (E.KAFKA_STORAGE_ERROR, E.NOT_COORDINATOR),
        (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
        (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_NOT_AVAILABLE),
        (E.REQUEST_TIMED_OUT, E.COORDINATOR_NOT_AVAILABLE),
        (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
        (E.CORRUPT_MESSAGE, E.CORRUPT_MESSAGE),
    ],
)
def test_failed_assignment_write_fails_the_syncs_and_the_group_rebalances(
    storage_error: ErrorCode, answer: ErrorCode
) -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    parked, _ = sync(c, 1, ids[1], 1)
    token, outcome = sync(c, 2, ids[0], 1, dict.fromkeys(ids, b"x"))
    failed = c.on_append_failed(outcome, storage_error, 3)
    assert failed.records == ()
    assert {r.token: r.response.error_code for r in failed.replies} == {
        token: answer,
        parked: answer,
    }
    assert failed.replies[0].response.assignment == b""
    group = c.group(GROUP)
    assert group.state is GroupState.PREPARING_REBALANCE
    assert all(m.assignment == b"" for m in group.members.values())


def test_failed_assignment_write_after_the_group_moved_on_only_fails_the_replies() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    _token, outcome = sync(c, 1, ids[0], 1, dict.fromkeys(ids, b"x"))
    leave(c, 2, (ids[1], None))
    join(c, 2, ids[0])  # generation 2 begins before the write fails
    group = c.group(GROUP)
    assert group.generation_id == 2
    failed = c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 3)
    assert [r.response.error_code for r in failed.replies] == [E.NOT_COORDINATOR]
    assert group.state is GroupState.COMPLETING_REBALANCE
