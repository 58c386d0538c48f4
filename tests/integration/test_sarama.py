"""sarama (Go, Debian's 1.22.1) against kmock, through tests/integration/sarama/main.go
(`make sarama` builds it offline): one process per step, JSON lines out. sarama-check
assumes Kafka 2.1.0, which decides the request versions it sends. On failure the message
carries the process's stdout and stderr."""

from __future__ import annotations

import signal
from typing import Any

import pytest

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    HEADERS,
    Proc,
    Rec,
    check_compressed,
    check_idempotent,
    check_records,
    explain,
    run,
    unique,
    wait_until,
)
from tests.integration.matrix import scenario

pytestmark = pytest.mark.integration

CLIENT = "sarama"
NOT_EXPRESSIBLE: dict[str, str] = {}
KNOWN_FAILURES: dict[str, str] = {}

TIMEOUT_S = 30


def args(binary: str, mode: str, bootstrap: str, **opts: Any) -> list[str]:
    out = [binary, "-mode", mode, "-brokers", bootstrap, "-timeout", f"{TIMEOUT_S}s"]
    for name, v in opts.items():
        if v is True:
            out.append(f"-{name}")
        elif v is not False and v is not None:
            out += [f"-{name}", str(v)]
    return out


def go(binary: str, mode: str, bootstrap: str, **opts: Any) -> Proc:
    return run(args(binary, mode, bootstrap, **opts), f"sarama-check {mode}", TIMEOUT_S + 10)


def produce(binary: str, bootstrap: str, topic: str, prefix: str, n: int, **opts: Any) -> Proc:
    return go(binary, "produce", bootstrap, topic=topic, prefix=prefix, n=n, headers=True, **opts)


def records(p: Proc) -> list[Rec]:
    return [
        Rec(
            e["partition"],
            e["offset"],
            e["key"],
            e["value"],
            tuple(tuple(h) for h in e.get("headers") or ()),
        )
        for e in p.events()
        if e.get("event") == "consumed"
    ]


def consume_all(binary: str, bootstrap: str, topic: str, n: int) -> list[Rec]:
    return records(go(binary, "consume", bootstrap, topic=topic, n=n))


def group_consume(binary: str, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
    return records(go(binary, "group", bootstrap, topic=topic, group=group, n=n))


def committed(binary: str, bootstrap: str, topic: str, group: str) -> dict[int, int]:
    p = go(binary, "group-offsets", bootstrap, topic=topic, group=group)
    return {int(k): v for k, v in first(p, "offsets")["offsets"].items() if v >= 0}


def check_committed(
    binary: str, bootstrap: str, topic: str, group: str, consumed: list[Rec]
) -> None:
    """The group's committed offsets are one past the last record consumed per partition."""
    want = {
        p: 1 + max(r.offset for r in consumed if r.partition == p)
        for p in {r.partition for r in consumed}
    }
    got = committed(binary, bootstrap, topic, group)
    assert got == want, f"committed offsets {got} after consuming up to {want}"


def first(p: Proc, event: str) -> dict[str, Any]:
    found = [e for e in p.events() if e.get("event") == event]
    assert found, f"sarama-check printed no {event!r} line\n{p.output()}"
    return found[0]


@scenario("metadata")
def test_metadata(sarama_check, shared_broker):
    topic = unique("go-meta")
    bootstrap = shared_broker.bootstrap_servers
    produce(sarama_check, bootstrap, topic, "m", 3)
    p = go(sarama_check, "metadata", bootstrap, topic=topic)
    with explain(p):
        cluster, t = first(p, "cluster"), first(p, "topic")
        brokers = []
        for b in cluster["brokers"]:
            host, _, port = b["addr"].rpartition(":")
            brokers.append((b["node_id"], host, int(port)))
        scenarios.check_cluster(
            shared_broker,
            cluster_id=cluster["cluster_id"],
            controller_id=cluster["controller"],
            brokers=brokers,
        )
        assert t["name"] == topic, t
        assert t["error_code"] == 0, t
        scenarios.check_partitions(
            shared_broker,
            [
                (x["partition"], x["leader"], x["replicas"], x["isr"], x["error_code"])
                for x in t["partitions"]
            ],
        )
        assert first(p, "admin-topics")["topics"].get(topic) == 3


@scenario("create-delete-topic")
def test_create_delete_topic(sarama_check, shared_broker):
    topic = unique("go-admin")
    bootstrap = shared_broker.bootstrap_servers
    p = go(sarama_check, "create-topic", bootstrap, topic=topic, partitions=3)
    with explain(p):
        assert first(p, "topics")["topics"].get(topic) == 3
    p = go(sarama_check, "delete-topic", bootstrap, topic=topic)
    with explain(p):
        assert topic not in first(p, "topics")["topics"]


@scenario("keys-headers")
def test_keys_and_headers(sarama_check, shared_broker):
    topic = unique("go-keys")
    produce(sarama_check, shared_broker.bootstrap_servers, topic, "kh", 200)
    got = consume_all(sarama_check, shared_broker.bootstrap_servers, topic, 200)
    check_records(got, "kh", 200, headers=HEADERS, contiguous_from_zero=True)


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(sarama_check, shared_broker, codec):
    topic = unique(f"go-{codec}")
    produce(sarama_check, shared_broker.bootstrap_servers, topic, codec, 200, compression=codec)
    check_compressed(shared_broker.data_dir, topic, codec)
    got = consume_all(sarama_check, shared_broker.bootstrap_servers, topic, 200)
    check_records(got, codec, 200, headers=HEADERS, contiguous_from_zero=True)


class Member:
    """One `sarama-check -mode group -hold` process; it leaves the group on SIGTERM."""

    def __init__(self, binary: str, bootstrap: str, topic: str, group: str, name: str) -> None:
        self.name = name
        a = args(binary, "group", bootstrap, topic=topic, group=group, hold=True)
        a[a.index("-timeout") + 1] = "120s"
        self.proc = Proc(a, f"sarama member {name}", keep_stdin_open=True)

    def assignment(self) -> frozenset[int] | None:
        assigned = [e for e in self.proc.events() if e.get("event") == "assigned"]
        if self.proc.popen.poll() is not None:
            raise AssertionError(
                f"member {self.name} exited: {self.proc.error_summary()}\n{self.proc.output()}"
            )
        if not assigned:
            return None
        claims = assigned[-1].get("claims") or {}
        return frozenset(p for parts in claims.values() for p in parts)

    def records(self) -> list[Rec]:
        return records(self.proc)

    def stop(self, timeout: float = 15) -> None:
        if self.proc.popen.poll() is None:
            self.proc.popen.send_signal(signal.SIGTERM)
        self.proc.check(timeout)

    def describe(self) -> str:
        return self.proc.output()


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(sarama_check, shared_broker):
    topic, group = unique("go-group"), unique("go-group")
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        start_member=lambda name: Member(sarama_check, bootstrap, topic, group, name),
        produce=lambda prefix, n: produce(sarama_check, bootstrap, topic, prefix, n),
    )


@scenario("commit-resume")
def test_commit_and_resume(sarama_check, shared_broker):
    topic, group = unique("go-commit"), unique("go-commit")
    bootstrap = shared_broker.bootstrap_servers
    produce(sarama_check, bootstrap, topic, "c", 200)
    first_part = group_consume(sarama_check, bootstrap, topic, group, 120)
    check_committed(sarama_check, bootstrap, topic, group, first_part)
    rest = group_consume(sarama_check, bootstrap, topic, group, 80)
    check_records(first_part + rest, "c", 200)


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(sarama_check, fresh_broker):
    b = fresh_broker()
    topic, group = unique("go-restart"), unique("go-restart")
    bootstrap = b.bootstrap_servers
    produce(sarama_check, bootstrap, topic, "r", 200)
    first_part = group_consume(sarama_check, bootstrap, topic, group, 120)
    check_committed(sarama_check, bootstrap, topic, group, first_part)
    b.restart()
    produce(sarama_check, bootstrap, topic, "r", 260, start=200)
    rest = group_consume(sarama_check, bootstrap, topic, group, 140)
    check_records(first_part + rest, "r", 260)
    check_records(
        consume_all(sarama_check, bootstrap, topic, 260), "r", 260, contiguous_from_zero=True
    )


@scenario("list-describe-groups")
def test_list_and_describe_groups(sarama_check, shared_broker):
    topic, group = unique("go-desc"), unique("go-desc")
    bootstrap = shared_broker.bootstrap_servers
    produce(sarama_check, bootstrap, topic, "d", 30)
    member = Member(sarama_check, bootstrap, topic, group, "d")
    with explain(member.proc):
        wait_until(lambda: len(member.records()) >= 30, TIMEOUT_S, "the member to read 30 records")
        ends = {
            p: 1 + max(r.offset for r in member.records() if r.partition == p)
            for p in {r.partition for r in member.records()}
        }

        def offsets() -> dict[int, int] | None:
            got = committed(sarama_check, bootstrap, topic, group)
            return got if got == ends else None

        # sarama commits marked offsets once a second.
        wait_until(offsets, TIMEOUT_S, f"committed offsets {ends}")
        p = go(sarama_check, "list-groups", bootstrap)
        with explain(p):
            groups = first(p, "groups")["groups"]
            assert groups.get(group) == "consumer", f"{group} not a consumer group in {groups}"
        p = go(sarama_check, "describe-group", bootstrap, group=group)
        with explain(p):
            g = first(p, "group")
            assert g["group_id"] == group, g
            assert g["error_code"] == 0, g
            assert g["state"] == "Stable", g
            assert g["protocol_type"] == "consumer", g
            (m,) = g["members"]
            assert m["client_id"] == "sarama-check", m
            assert sorted(m["assignment"][topic]) == [0, 1, 2], m
        member.stop()


@scenario("idempotent-producer")
def test_idempotent_producer(sarama_check, shared_broker):
    topic = unique("go-idem")
    bootstrap = shared_broker.bootstrap_servers
    produce(sarama_check, bootstrap, topic, "i", 200, idempotent=True)
    check_idempotent(shared_broker.data_dir, topic, 200)
    check_records(
        consume_all(sarama_check, bootstrap, topic, 200), "i", 200, contiguous_from_zero=True
    )
