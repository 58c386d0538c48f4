"""The uniform and range assignors: balanced, sticky, and co-partitioned for range."""

import uuid

from hypothesis import given
from hypothesis import strategies as st

from coordinator.consumer import range_assign, uniform_assign

A, B = uuid.UUID(int=1), uuid.UUID(int=2)


def counts(target):
    return {m: sum(len(ps) for ps in topics.values()) for m, topics in target.items()}


def test_uniform_spreads_evenly_then_moves_only_what_balance_needs():
    first = uniform_assign({"m1": frozenset({A}), "m2": frozenset({A})}, {A: 6}, {})
    assert counts(first) == {"m1": 3, "m2": 3}
    subs = {m: frozenset({A}) for m in ("m1", "m2", "m3")}
    second = uniform_assign(subs, {A: 6}, first)
    assert counts(second) == {"m1": 2, "m2": 2, "m3": 2}
    for m in ("m1", "m2"):  # sticky: the old members kept 2 of their 3
        assert second[m][A] <= first[m][A]


def test_uniform_respects_subscriptions():
    subs = {"m1": frozenset({A}), "m2": frozenset({A, B})}
    target = uniform_assign(subs, {A: 2, B: 4}, {})
    assert set(target["m1"]) <= {A}
    assert counts(target) == {"m1": 2, "m2": 4}  # m1 can only take A's 2 partitions


def test_range_gives_contiguous_ranges_first_members_one_more():
    subs = {m: frozenset({A, B}) for m in ("m2", "m1", "m3")}
    target = range_assign(subs, {A: 7, B: 3}, {})
    assert target["m1"] == {A: frozenset({0, 1, 2}), B: frozenset({0})}
    assert target["m2"] == {A: frozenset({3, 4}), B: frozenset({1})}
    assert target["m3"] == {A: frozenset({5, 6}), B: frozenset({2})}


def test_range_is_sticky_within_quotas():
    before = {"m1": {A: frozenset({0, 1})}, "m2": {A: frozenset({2, 3})}}
    subs = {m: frozenset({A}) for m in ("m0", "m1", "m2")}
    target = range_assign(subs, {A: 4}, before)
    assert target["m1"][A] <= before["m1"][A]
    assert target["m2"][A] <= before["m2"][A]
    assert sorted(counts(target).values()) == [1, 1, 2]


@given(
    members=st.integers(1, 6),
    partitions=st.lists(st.integers(0, 9), min_size=1, max_size=3),
    name=st.sampled_from(["uniform", "range"]),
)
def test_identical_subscriptions_cover_every_partition_once_balanced(members, partitions, name):
    assign = uniform_assign if name == "uniform" else range_assign
    topics = {uuid.UUID(int=i + 1): n for i, n in enumerate(partitions)}
    subs = {f"m{i}": frozenset(topics) for i in range(members)}
    target = assign(subs, topics, {})
    seen = [(t, p) for ts in target.values() for t, ps in ts.items() for p in ps]
    assert sorted(seen) == sorted((t, p) for t, n in topics.items() for p in range(n))
    loads = counts(target).values()
    if name == "uniform":
        assert max(loads) - min(loads) <= 1
    else:  # range balances each topic
        for t in topics:
            per = [len(target[m].get(t, ())) for m in subs]
            assert max(per) - min(per) <= 1
