"""Walks the per-state answer table of coordinator/state.py: each request, in each state."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from coordinator.classic.state import GroupState
from coordinator.coordinator import GroupCoordinator
from protocol.errors import ErrorCode, KafkaError
from tests.coordinator.builders import (
    GROUP,
    commit,
    coordinator,
    delete_groups,
    heartbeat,
    join,
    joined_group,
    leave,
    reply,
    stable_group,
    sync,
)

E = ErrorCode
S = GroupState
PARKED = "parked"


def group_in(state: GroupState) -> tuple[GroupCoordinator, str]:
    """A group in `state`, and a member id that belongs (or belonged) to it."""
    if state is S.COMPLETING_REBALANCE:
        c = coordinator()
        ids, _ = joined_group(c, 2)
        return c, ids[1]
    c, ids = stable_group(2)
    if state is S.PREPARING_REBALANCE:
        join(c, 1, ids[0])
    elif state in (S.EMPTY, S.DEAD):
        c.on_appended(commit(c, 1, {("t", 0): 1}, member_id=ids[0], generation_id=1)[1], 1)
        leave(c, 2, (ids[0], None), (ids[1], None))
        if state is S.DEAD:
            delete_groups(c, 3, GROUP)  # Dead until its tombstones are durable
    assert c.group(GROUP).state is state
    return c, ids[1]


def answer(fn: Callable[[], object]) -> ErrorCode | str:
    """The error code a request meets, whether raised (refused as a whole) or answered."""
    try:
        response = fn()
    except KafkaError as e:
        return e.code
    return PARKED if response is None else ErrorCode(response.error_code)  # type: ignore[attr-defined]


def _heartbeat(c: GroupCoordinator, member_id: str, generation: int) -> object:
    return heartbeat(c, 10, member_id, generation)


def _sync(c: GroupCoordinator, member_id: str, generation: int) -> object:
    token, outcome = sync(c, 10, member_id, generation)
    return reply(outcome, token)


def _member_commit(c: GroupCoordinator, member_id: str, generation: int) -> object:
    token, outcome = commit(c, 10, {("t", 0): 5}, member_id=member_id, generation_id=generation)
    return reply(outcome, token).topics[0].partitions[0]


def _standalone_commit(c: GroupCoordinator, member_id: str, generation: int) -> object:
    token, outcome = commit(c, 10, {("t", 0): 5})
    return reply(outcome, token).topics[0].partitions[0]


def _leave(c: GroupCoordinator, member_id: str, generation: int) -> object:
    token, outcome = leave(c, 10, (member_id, None))
    return reply(outcome, token).members[0]


def _delete(c: GroupCoordinator, member_id: str, generation: int) -> object:
    token, outcome = delete_groups(c, 10, GROUP)
    return reply(outcome, token).results[0]


ANSWERS: dict[str, tuple[Callable[[GroupCoordinator, str, int], object], dict[S, object]]] = {
    "Heartbeat": (
        _heartbeat,
        {
            S.EMPTY: E.UNKNOWN_MEMBER_ID,
            S.PREPARING_REBALANCE: E.REBALANCE_IN_PROGRESS,
            S.COMPLETING_REBALANCE: E.NONE,
            S.STABLE: E.NONE,
            S.DEAD: E.COORDINATOR_NOT_AVAILABLE,
        },
    ),
    "SyncGroup": (
        _sync,
        {
            S.EMPTY: E.UNKNOWN_MEMBER_ID,
            S.PREPARING_REBALANCE: E.REBALANCE_IN_PROGRESS,
            S.COMPLETING_REBALANCE: PARKED,
            S.STABLE: E.NONE,
            S.DEAD: E.COORDINATOR_NOT_AVAILABLE,
        },
    ),
    "OffsetCommit by a member": (
        _member_commit,
        {
            S.EMPTY: E.UNKNOWN_MEMBER_ID,
            S.PREPARING_REBALANCE: E.NONE,
            S.COMPLETING_REBALANCE: E.REBALANCE_IN_PROGRESS,
            S.STABLE: E.NONE,
            S.DEAD: E.COORDINATOR_NOT_AVAILABLE,
        },
    ),
    "OffsetCommit standalone": (
        _standalone_commit,
        {
            S.EMPTY: E.NONE,
            S.PREPARING_REBALANCE: E.UNKNOWN_MEMBER_ID,
            S.COMPLETING_REBALANCE: E.UNKNOWN_MEMBER_ID,
            S.STABLE: E.UNKNOWN_MEMBER_ID,
            S.DEAD: E.COORDINATOR_NOT_AVAILABLE,
        },
    ),
    "LeaveGroup": (
        _leave,
        {
            S.EMPTY: E.UNKNOWN_MEMBER_ID,
            S.PREPARING_REBALANCE: E.NONE,
            S.COMPLETING_REBALANCE: E.NONE,
            S.STABLE: E.NONE,
            S.DEAD: E.COORDINATOR_NOT_AVAILABLE,
        },
    ),
    "DeleteGroups": (
        _delete,
        {
            S.EMPTY: E.NONE,
            S.PREPARING_REBALANCE: E.NON_EMPTY_GROUP,
            S.COMPLETING_REBALANCE: E.NON_EMPTY_GROUP,
            S.STABLE: E.NON_EMPTY_GROUP,
            S.DEAD: E.GROUP_ID_NOT_FOUND,
        },
    ),
}

CELLS = [(api, state) for api, (_, by_state) in ANSWERS.items() for state in by_state]


@pytest.mark.parametrize(("api", "state"), CELLS, ids=lambda v: str(v))
def test_each_request_in_each_state_gets_the_tables_answer(api: str, state: GroupState) -> None:
    request, by_state = ANSWERS[api]
    c, member_id = group_in(state)
    generation = c.group(GROUP).generation_id
    assert answer(lambda: request(c, member_id, generation)) == by_state[state]
