"""Scenario checks that read the same for every client: what metadata must say, the data and
commit scenarios through a client's own produce and consume operations (a `Client`), and the
three-member group through a rebalance (the clients differ only in how a member is run)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from tests.integration.harness import (
    HEADERS,
    Proc,
    ProcMember,
    Rec,
    check_compressed,
    check_idempotent,
    check_records,
    explain,
    unique,
    wait_until,
)

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


@dataclass(frozen=True)
class Client:
    """What the shared scenarios do through one client, against one broker:

    - `produce(topic, prefix, n, *, start=0, **opts)`: records `start`..`n-1` of `prefix`,
      keyed and with HEADERS, all acknowledged; `opts` are the client's own producer options.
      What it returns goes to `why_uncompressed`.
    - `consume_all(topic, n)`: `n` records from the beginning of every partition, no group.
    - `group_consume(topic, group, n)`: `n` records as a new member of `group`, committed
      before it leaves.
    - `committed(topic, group)`: the group's committed offsets (partition -> offset), where
      the client can fetch them; then the resume scenarios check them too.
    - `why_uncompressed(produced)`: what the client said about not compressing, added to a
      failed compression check.

    `prefix` starts the client's topic and group names; `compression(codec)` and
    `idempotence` are the producer options that ask for those.
    """

    prefix: str
    produce: Callable[..., Any]
    consume_all: Callable[[str, int], list[Rec]]
    group_consume: Callable[[str, str, int], list[Rec]]
    compression: Callable[[str], dict[str, Any]]
    idempotence: dict[str, Any]
    committed: Callable[[str, str], dict[int, int]] | None = None
    why_uncompressed: Callable[[Any], str] | None = None


def python_client(
    prefix: str,
    bootstrap: str,
    produce: Callable[..., Any],
    consume_all: Callable[..., Any],
    group_consume: Callable[..., Any],
    *,
    run: Callable[[Any], Any] | None = None,
) -> Client:
    """The Client of a Python client's module: its functions take `bootstrap` first (else as
    `Client` says), `run` turns what they return into the result (aiokafka's coroutines), and
    producer options have kafka-python's names (confluent-kafka's turn `_` into `.`)."""

    def bound(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(*args: Any, **kw: Any) -> Any:
            out = fn(bootstrap, *args, **kw)
            return out if run is None else run(out)

        return call

    return Client(
        prefix,
        produce=bound(produce),
        consume_all=bound(consume_all),
        group_consume=bound(group_consume),
        compression=lambda codec: {"compression_type": codec},
        idempotence={"enable_idempotence": True},
    )


def ends_of(consumed: Sequence[Rec]) -> dict[int, int]:
    """One past the last offset consumed, per partition: what a group commits after them."""
    return {
        p: 1 + max(r.offset for r in consumed if r.partition == p)
        for p in {r.partition for r in consumed}
    }


def check_committed(client: Client, topic: str, group: str, consumed: list[Rec]) -> None:
    """The group's committed offsets are one past the last record consumed per partition
    (checked only where the client can fetch them)."""
    if client.committed is None:
        return
    want = ends_of(consumed)
    got = client.committed(topic, group)
    assert got == want, f"committed offsets {got} after consuming up to {want}"


def keys_and_headers(client: Client) -> None:
    """200 keyed records with headers come back whole, in order, at offsets 0, 1, ..."""
    topic = unique(f"{client.prefix}-keys")
    client.produce(topic, "kh", 200)
    got = client.consume_all(topic, 200)
    check_records(got, "kh", 200, headers=HEADERS, contiguous_from_zero=True)


def compression(client: Client, broker: Any, codec: str) -> None:
    """The client's batches reach the log compressed with `codec`, and read back whole."""
    topic = unique(f"{client.prefix}-{codec}")
    produced = client.produce(topic, codec, 200, **client.compression(codec))
    try:
        check_compressed(broker.data_dir, topic, codec)
    except AssertionError as e:
        if client.why_uncompressed is None:
            raise
        raise AssertionError(f"{e}; {client.why_uncompressed(produced)}") from None
    got = client.consume_all(topic, 200)
    check_records(got, codec, 200, headers=HEADERS, contiguous_from_zero=True)


def commit_and_resume(client: Client) -> None:
    """A group member commits what it consumed; the next member of the group resumes there:
    all records once, none lost."""
    topic, group = unique(f"{client.prefix}-commit"), unique(f"{client.prefix}-commit")
    client.produce(topic, "c", 200)
    first = client.group_consume(topic, group, 120)
    check_committed(client, topic, group, first)
    rest = client.group_consume(topic, group, 80)
    check_records(first + rest, "c", 200)


def resume_after_restart(client: Client, broker: Any) -> None:
    """Committed offsets and records survive a restart of the broker (a KmockBroker): the
    group resumes where it committed, and the log reads back whole from offset 0."""
    topic, group = unique(f"{client.prefix}-restart"), unique(f"{client.prefix}-restart")
    client.produce(topic, "r", 200)
    first = client.group_consume(topic, group, 120)
    check_committed(client, topic, group, first)
    broker.restart()
    client.produce(topic, "r", 260, start=200)
    rest = client.group_consume(topic, group, 140)
    check_records(first + rest, "r", 260)
    check_records(client.consume_all(topic, 260), "r", 260, contiguous_from_zero=True)


def idempotent_producer(client: Client, broker: Any) -> None:
    """An idempotent producer's batches carry one producer id and gapless sequences."""
    topic = unique(f"{client.prefix}-idem")
    client.produce(topic, "i", 200, **client.idempotence)
    check_idempotent(broker.data_dir, topic, 200)
    check_records(client.consume_all(topic, 200), "i", 200, contiguous_from_zero=True)


def list_describe_groups_cli(
    client: Client,
    start_member: Callable[[str, str, str], ProcMember],
    run: Callable[..., Proc],
    listed: Callable[[dict[str, Any]], dict[str, str]],
    *,
    client_id: str,
    timeout: float,
) -> None:
    """For a check program (kafkajs-check, sarama-check): a held member reads a topic and
    commits all of it; its group is listed as a consumer group and described Stable, with
    that one member holding every partition.

    `start_member(topic, group, name)` starts the held member; `run(mode, **opts)` runs the
    program to completion; `listed(groups_event)` maps its "groups" event to group id ->
    protocol type."""
    topic, group = unique(f"{client.prefix}-desc"), unique(f"{client.prefix}-desc")
    assert client.committed is not None, "the scenario reads the group's committed offsets"
    committed = client.committed
    client.produce(topic, "d", 30)
    member = start_member(topic, group, "d")
    with explain(member.proc):
        wait_until(lambda: len(member.records()) >= 30, timeout, "the member to read 30 records")
        ends = ends_of(member.records())

        def offsets() -> dict[int, int] | None:
            got = committed(topic, group)
            return got if got == ends else None

        # Members commit in the background (sarama commits marked offsets once a second).
        wait_until(offsets, timeout, f"committed offsets {ends}")
        p = run("list-groups")
        with explain(p):
            groups = listed(p.first("groups"))
            assert groups.get(group) == "consumer", f"{group} not a consumer group in {groups}"
        p = run("describe-group", group=group)
        with explain(p):
            g = p.first("group")
            assert g["group_id"] == group, g
            assert g["error_code"] == 0, g
            assert g["state"] == "Stable", g
            assert g["protocol_type"] == "consumer", g
            (m,) = g["members"]
            assert m["client_id"] == client_id, m
            assert sorted(m["assignment"][topic]) == list(range(PARTITIONS)), m
        member.stop()


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
    client: Client,
    start_member: Callable[[str, str, str], Member],
    *,
    n: int = 150,
    later: int = 30,
    partitions: int = PARTITIONS,
    timeout: float = 30,
) -> None:
    """One member takes every partition; two more join and the three split them; one leaves
    and the other two take its share, and consume what is produced after that. Records may
    repeat across a rebalance (at-least-once), but none may be lost.

    `start_member(topic, group, name)` starts a member of `group` consuming `topic`; the
    client's `produce` writes the records."""
    topic, group = unique(f"{client.prefix}-group"), unique(f"{client.prefix}-group")

    def produce(prefix: str, count: int) -> None:
        client.produce(topic, prefix, count)

    def start(name: str) -> Member:
        return start_member(topic, group, name)

    produce("g1", n)
    members: list[Member] = []

    def state() -> str:
        return "\n".join(m.describe() for m in members)

    def union(ms: Sequence[Member]) -> list[Rec]:
        return [r for m in ms for r in m.records()]

    try:
        a = start("a")
        members.append(a)
        wait_until(
            lambda: a.assignment() == frozenset(range(partitions)),
            timeout,
            "the first member to be assigned every partition",
            state,
        )
        b = start("b")
        members.append(b)
        c = start("c")
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
