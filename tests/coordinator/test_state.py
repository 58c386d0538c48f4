"""The state machine itself: the transition table and the one function that moves a group."""

from __future__ import annotations

import itertools

import pytest

from coordinator.classic.group import Group
from coordinator.classic.state import TRANSITIONS, GroupState

ALL_MOVES = list(itertools.product(GroupState, GroupState))


@pytest.mark.parametrize(("old", "new"), ALL_MOVES, ids=lambda s: str(s))
def test_transition_follows_table_and_illegal_moves_raise_leaving_state_unchanged(
    old: GroupState, new: GroupState
) -> None:
    group = Group("g", old, now_ms=5)
    if old in TRANSITIONS[new]:
        group.transition_to(new, 17)
        assert group.state is new
        assert group.previous_state is old
        assert group.state_timestamp_ms == 17
    else:
        with pytest.raises(AssertionError, match=f"{old} -> {new}"):
            group.transition_to(new, 17)
        assert group.state is old
        assert group.state_timestamp_ms == 5


def test_transition_table_is_kafkas_valid_previous_states() -> None:
    s = GroupState
    assert {
        s.PREPARING_REBALANCE: {s.STABLE, s.COMPLETING_REBALANCE, s.EMPTY},
        s.COMPLETING_REBALANCE: {s.PREPARING_REBALANCE},
        s.STABLE: {s.COMPLETING_REBALANCE},
        s.EMPTY: {s.PREPARING_REBALANCE},
        s.DEAD: set(GroupState),
    } == TRANSITIONS


def test_state_str_is_kafkas_spelling() -> None:
    assert [str(s) for s in GroupState] == [
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",
    ]


def test_state_time_read_from_the_log_stands_until_the_next_transition() -> None:
    group = Group("g", GroupState.EMPTY, now_ms=0)
    assert group.state_wall_ms(None) is None
    assert group.state_wall_ms(1_000) == 1_000
    group.state_from_log, group.logged_state_wall_ms = True, 123
    assert group.state_wall_ms(1_000) == 123
    group.logged_state_wall_ms = None  # a record without the time: unknown, whatever the clock
    assert group.state_wall_ms(1_000) is None
    group.transition_to(GroupState.PREPARING_REBALANCE, 40)
    assert group.state_wall_ms(1_000) == 1_040


def test_group_repr_names_id_state_and_generation() -> None:
    assert repr(Group("g", GroupState.STABLE, now_ms=0)) == "Group('g', Stable, generation=0)"
