"""Scenario checks that read the same for every client: what metadata must say, and the
three-member group through a rebalance (the clients differ only in how a member is run)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from tests.integration.harness import Rec, check_records, wait_until

PARTITIONS = 3  # of auto-created topics on the test brokers (num.partitions)


def check_cluster(
    broker: Any,
    *,
    cluster_id: str | None,
    controller_id: int | None,
    brokers: Sequence[tuple[int, str, int]],
) -> None:
    """What a client saw of the cluster is this one broker (a KmockBroker), as it was started."""
    node, want_cluster_id = broker.broker.node_id, broker.broker.cluster_id
    assert list(brokers) == [(node, "127.0.0.1", broker.port)], (
        f"brokers {list(brokers)}, expected node {node} at 127.0.0.1:{broker.port}"
    )
    if cluster_id is not None:
        assert cluster_id == want_cluster_id, f"cluster id {cluster_id!r} != {want_cluster_id!r}"
    if controller_id is not None:
        assert controller_id == node, f"controller {controller_id} != {node}"


def check_partitions(
    broker: Any, partitions: Sequence[tuple[int, int, Any, Any, int]], count: int = PARTITIONS
) -> None:
    """(index, leader, replicas, isr, error) per partition: all led by our one broker."""
    node = broker.broker.node_id
    got = sorted(
        (p, leader, list(r) if r is not None else None, list(i) if i is not None else None, err)
        for p, leader, r, i, err in partitions
    )
    want = [(p, node, [node], [node], 0) for p in range(count)]
    assert got == want, f"partitions {got}, expected {want}"


class Member(Protocol):
    name: str

    def assignment(self) -> frozenset[int] | None: ...

    def records(self) -> list[Rec]: ...

    def stop(self, timeout: float = ...) -> None: ...

    def describe(self) -> str: ...


def _balanced(members: Sequence[Member], partitions: int) -> bool:
    """Every member holds a share, no partition twice, all partitions held."""
    sets = [m.assignment() for m in members]
    if any(not s for s in sets):
        return False
    held = [p for s in sets for p in s or ()]
    if len(held) != len(set(held)) or set(held) != set(range(partitions)):
        return False
    sizes = sorted(len(s or ()) for s in sets)
    return sizes[-1] - sizes[0] <= 1


def group_rebalance(
    start_member: Callable[[str], Member],
    produce: Callable[[str, int], None],
    *,
    n: int = 150,
    later: int = 30,
    partitions: int = PARTITIONS,
    timeout: float = 30,
) -> None:
    """One member takes every partition; two more join and the three split them; one leaves
    and the other two take its share, and consume what is produced after that. Records may
    repeat across a rebalance (at-least-once), but none may be lost."""
    produce("g1", n)
    members: list[Member] = []

    def state() -> str:
        return "\n".join(m.describe() for m in members)

    def union(ms: Sequence[Member]) -> list[Rec]:
        return [r for m in ms for r in m.records()]

    try:
        a = start_member("a")
        members.append(a)
        wait_until(
            lambda: a.assignment() == frozenset(range(partitions)),
            timeout,
            "the first member to be assigned every partition",
            state,
        )
        b = start_member("b")
        members.append(b)
        c = start_member("c")
        members.append(c)
        wait_until(
            lambda: _balanced([a, b, c], partitions),
            timeout,
            "three members to share the partitions",
            state,
        )
        wait_until(
            lambda: {r.value for r in union(members)} >= {f"g1-{i}" for i in range(n)},
            timeout,
            f"the group to consume all {n} records",
            state,
        )
        check_records(
            [r for r in union(members) if r.value and r.value.startswith("g1-")],
            "g1",
            n,
            exactly_once=False,
        )
        c.stop()
        wait_until(
            lambda: _balanced([a, b], partitions),
            timeout,
            "two members to share the partitions after the third left",
            state,
        )
        produce("g2", later)
        wait_until(
            lambda: {r.value for r in union([a, b])} >= {f"g2-{i}" for i in range(later)},
            timeout,
            f"the two members to consume {later} new records",
            state,
        )
        check_records(
            [r for r in union([a, b]) if r.value and r.value.startswith("g2-")],
            "g2",
            later,
            exactly_once=False,
        )
        b.stop()
        a.stop()
    except AssertionError as e:
        raise AssertionError(f"{e}\n{state()}") from None
    finally:
        for m in members:
            with contextlib.suppress(AssertionError):
                m.stop()
