"""The offsets-reset plan shared by `kmock offsets reset` and the web console: which groups
may be reset (Kafka's ConsumerGroupCommand refuses any with members) and where each target
sends each partition, clamped into [log start, log end]."""

from __future__ import annotations

import pytest

from coordinator.offset_reset import inactive_refusal, plan_offsets

A, B = ("t", 0), ("t", 1)
STARTS = {A: 10, B: 0}
ENDS = {A: 50, B: 7}
COMMITTED = {A: 30}


def plan(to: str, **options: object) -> dict[tuple[str, int], int]:
    return plan_offsets(to, [A, B], starts=STARTS, ends=ENDS, committed=COMMITTED, **options)


def test_only_groups_without_members_may_be_reset() -> None:
    assert inactive_refusal("g", "Empty", 0) is None
    assert inactive_refusal("g", "Dead", 0) is None
    refusal = inactive_refusal("g", "Stable", 2)
    assert refusal is not None
    assert refusal.startswith(
        "Assignments can only be reset if the group 'g' is inactive, but the current state "
        "is Stable."
    )
    assert "2 member(s)" in refusal
    assert inactive_refusal("g", "PreparingRebalance", 1) is not None


@pytest.mark.parametrize(
    ("to", "options", "expected"),
    [
        ("earliest", {}, {A: 10, B: 0}),
        ("latest", {}, {A: 50, B: 7}),
        ("current", {}, {A: 30, B: 7}),  # no commit of B: its log end
        ("offset", {"offset": 5}, {A: 10, B: 5}),  # clamped up to A's log start
        ("offset", {"offset": 99}, {A: 50, B: 7}),  # clamped down to the log ends
        ("offset", {"offset": {A: 20, B: 3}}, {A: 20, B: 3}),
        ("timestamp", {"found": {A: 12, B: -1}}, {A: 12, B: 7}),  # none at or after: log end
    ],
)
def test_each_target(to: str, options: dict[str, object], expected: dict[object, int]) -> None:
    assert plan(to, **options) == expected


def test_shift_moves_the_committed_offset_within_the_log() -> None:
    assert plan_offsets(
        "shift", [A], starts=STARTS, ends=ENDS, committed=COMMITTED, shift_by=-25
    ) == {A: 10}
    assert plan_offsets(
        "shift", [A], starts=STARTS, ends=ENDS, committed=COMMITTED, shift_by=5
    ) == {A: 35}


def test_an_unknown_target_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown reset target 'yesterday'"):
        plan("yesterday")
