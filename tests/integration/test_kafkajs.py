"""kafkajs (npm, on node) against kmock, through tests/integration/js/kafkajs-check.js: one
process per step, JSON lines out. On failure the message carries the process's stdout and
stderr (kafkajs's own log goes to stderr)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    HEADERS,
    JS_DIR,
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

CLIENT = "kafkajs"
NOT_EXPRESSIBLE: dict[str, str] = {}

TIMEOUT_S = 30


def args(cmd: list[str], mode: str, bootstrap: str, **opts: Any) -> list[str]:
    out = [*cmd, "--mode", mode, "--brokers", bootstrap, "--timeout", str(TIMEOUT_S)]
    for name, v in opts.items():
        flag = "--" + name.replace("_", "-")
        if v is True:
            out.append(flag)
        elif v is not False and v is not None:
            out += [flag, str(v)]
    return out


def js(cmd: list[str], mode: str, bootstrap: str, **opts: Any) -> Proc:
    return run(
        args(cmd, mode, bootstrap, **opts), f"kafkajs-check {mode}", TIMEOUT_S + 10, cwd=JS_DIR
    )


def produce(cmd: list[str], bootstrap: str, topic: str, prefix: str, n: int, **opts: Any) -> Proc:
    p = js(cmd, "produce", bootstrap, topic=topic, prefix=prefix, n=n, headers=True, **opts)
    with explain(p):
        bad = [e for e in p.events() if e.get("event") == "produced" and e["error_code"] != 0]
        assert not bad, f"produce results with errors: {bad[:3]}"
    return p


def records(p: Proc) -> list[Rec]:
    return [
        Rec(
            e["partition"], e["offset"], e["key"], e["value"], tuple(tuple(h) for h in e["headers"])
        )
        for e in p.events()
        if e.get("event") == "consumed"
    ]


def consume_all(cmd: list[str], bootstrap: str, topic: str, n: int) -> list[Rec]:
    return records(js(cmd, "consume", bootstrap, topic=topic, n=n))


def group_consume(cmd: list[str], bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
    return records(js(cmd, "group", bootstrap, topic=topic, group=group, n=n))


def committed(cmd: list[str], bootstrap: str, topic: str, group: str) -> dict[int, int]:
    p = js(cmd, "group-offsets", bootstrap, topic=topic, group=group)
    return {
        x["partition"]: x["offset"] for x in first(p, "offsets")["partitions"] if x["offset"] >= 0
    }


def check_committed(
    cmd: list[str], bootstrap: str, topic: str, group: str, consumed: list[Rec]
) -> None:
    """The group's committed offsets are one past the last record consumed per partition."""
    want = {
        p: 1 + max(r.offset for r in consumed if r.partition == p)
        for p in {r.partition for r in consumed}
    }
    got = committed(cmd, bootstrap, topic, group)
    assert got == want, f"committed offsets {got} after consuming up to {want}"


def first(p: Proc, event: str) -> dict[str, Any]:
    found = [e for e in p.events() if e.get("event") == event]
    assert found, f"kafkajs-check printed no {event!r} line\n{p.output()}"
    return found[0]


@scenario("metadata")
def test_metadata(kafkajs_check, shared_broker):
    topic = unique("js-meta")
    bootstrap = shared_broker.bootstrap_servers
    produce(kafkajs_check, bootstrap, topic, "m", 3)
    p = js(kafkajs_check, "metadata", bootstrap, topic=topic)
    with explain(p):
        cluster, t = first(p, "cluster"), first(p, "topic")
        scenarios.check_cluster(
            shared_broker,
            cluster_id=cluster["cluster_id"],
            controller_id=cluster["controller"],
            brokers=[(b["node_id"], b["host"], b["port"]) for b in cluster["brokers"]],
        )
        assert t["name"] == topic
        scenarios.check_partitions(
            shared_broker,
            [
                (x["partitionId"], x["leader"], x["replicas"], x["isr"], x["partitionErrorCode"])
                for x in t["partitions"]
            ],
        )


@scenario("create-delete-topic")
def test_create_delete_topic(kafkajs_check, shared_broker):
    topic = unique("js-admin")
    bootstrap = shared_broker.bootstrap_servers
    p = js(kafkajs_check, "create-topic", bootstrap, topic=topic, partitions=3)
    with explain(p):
        assert first(p, "created")["created"] is True
        assert sorted(x["partitionId"] for x in first(p, "topic")["partitions"]) == [0, 1, 2]
        assert topic in first(p, "topics")["topics"]
    p = js(kafkajs_check, "delete-topic", bootstrap, topic=topic)
    with explain(p):
        assert topic not in first(p, "topics")["topics"]


@scenario("keys-headers")
def test_keys_and_headers(kafkajs_check, shared_broker):
    topic = unique("js-keys")
    produce(kafkajs_check, shared_broker.bootstrap_servers, topic, "kh", 200)
    got = consume_all(kafkajs_check, shared_broker.bootstrap_servers, topic, 200)
    check_records(got, "kh", 200, headers=HEADERS, contiguous_from_zero=True)


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(kafkajs_check, shared_broker, codec):
    topic = unique(f"js-{codec}")
    produce(kafkajs_check, shared_broker.bootstrap_servers, topic, codec, 200, compression=codec)
    check_compressed(shared_broker.data_dir, topic, codec)
    got = consume_all(kafkajs_check, shared_broker.bootstrap_servers, topic, 200)
    check_records(got, codec, 200, headers=HEADERS, contiguous_from_zero=True)


class Member:
    """One `kafkajs-check --mode group --hold` process; it leaves the group when its stdin
    closes."""

    def __init__(self, cmd: list[str], bootstrap: str, topic: str, group: str, name: str) -> None:
        self.name = name
        self.proc = Proc(
            args(cmd, "group", bootstrap, topic=topic, group=group, hold=True, timeout=120),
            f"kafkajs member {name}",
            cwd=JS_DIR,
            keep_stdin_open=True,
        )

    def assignment(self) -> frozenset[int] | None:
        assigned = [e for e in self.proc.events() if e.get("event") == "assigned"]
        if self.proc.popen.poll() is not None:
            raise AssertionError(
                f"member {self.name} exited: {self.proc.error_summary()}\n{self.proc.output()}"
            )
        return frozenset(assigned[-1]["partitions"]) if assigned else None

    def records(self) -> list[Rec]:
        return records(self.proc)

    def stop(self, timeout: float = 15) -> None:
        self.proc.close_stdin()
        self.proc.check(timeout)

    def describe(self) -> str:
        return self.proc.output()


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(kafkajs_check, shared_broker):
    topic, group = unique("js-group"), unique("js-group")
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        start_member=lambda name: Member(kafkajs_check, bootstrap, topic, group, name),
        produce=lambda prefix, n: produce(kafkajs_check, bootstrap, topic, prefix, n),
    )


@scenario("commit-resume")
def test_commit_and_resume(kafkajs_check, shared_broker):
    topic, group = unique("js-commit"), unique("js-commit")
    bootstrap = shared_broker.bootstrap_servers
    produce(kafkajs_check, bootstrap, topic, "c", 200)
    first_part = group_consume(kafkajs_check, bootstrap, topic, group, 120)
    check_committed(kafkajs_check, bootstrap, topic, group, first_part)
    rest = group_consume(kafkajs_check, bootstrap, topic, group, 80)
    check_records(first_part + rest, "c", 200)


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(kafkajs_check, fresh_broker):
    b = fresh_broker()
    topic, group = unique("js-restart"), unique("js-restart")
    bootstrap = b.bootstrap_servers
    produce(kafkajs_check, bootstrap, topic, "r", 200)
    first_part = group_consume(kafkajs_check, bootstrap, topic, group, 120)
    check_committed(kafkajs_check, bootstrap, topic, group, first_part)
    b.restart()
    produce(kafkajs_check, bootstrap, topic, "r", 260, start=200)
    rest = group_consume(kafkajs_check, bootstrap, topic, group, 140)
    check_records(first_part + rest, "r", 260)
    check_records(
        consume_all(kafkajs_check, bootstrap, topic, 260), "r", 260, contiguous_from_zero=True
    )


@scenario("list-describe-groups")
def test_list_and_describe_groups(kafkajs_check, shared_broker):
    topic, group = unique("js-desc"), unique("js-desc")
    bootstrap = shared_broker.bootstrap_servers
    produce(kafkajs_check, bootstrap, topic, "d", 30)
    member = Member(kafkajs_check, bootstrap, topic, group, "d")
    with explain(member.proc):
        wait_until(lambda: len(member.records()) >= 30, TIMEOUT_S, "the member to read 30 records")
        ends = {
            p: 1 + max(r.offset for r in member.records() if r.partition == p)
            for p in {r.partition for r in member.records()}
        }

        def offsets() -> dict[int, int] | None:
            got = committed(kafkajs_check, bootstrap, topic, group)
            return got if got == ends else None

        wait_until(offsets, TIMEOUT_S, f"committed offsets {ends}")
        p = js(kafkajs_check, "list-groups", bootstrap)
        with explain(p):
            listed = {g["group_id"]: g for g in first(p, "groups")["groups"]}
            assert group in listed, f"{group} not in {sorted(listed)}"
            assert listed[group]["protocol_type"] == "consumer"
        p = js(kafkajs_check, "describe-group", bootstrap, group=group)
        with explain(p):
            g = first(p, "group")
            assert g["group_id"] == group, g
            assert g["error_code"] == 0, g
            assert g["state"] == "Stable", g
            assert g["protocol_type"] == "consumer", g
            (m,) = g["members"]
            assert m["client_id"] == "kmock-kafkajs", m
            assert sorted(m["assignment"][topic]) == [0, 1, 2], m
        member.stop()


@scenario("idempotent-producer")
def test_idempotent_producer(kafkajs_check, shared_broker):
    topic = unique("js-idem")
    bootstrap = shared_broker.bootstrap_servers
    produce(kafkajs_check, bootstrap, topic, "i", 200, idempotent=True)
    check_idempotent(shared_broker.data_dir, topic, 200)
    check_records(
        consume_all(kafkajs_check, bootstrap, topic, 200), "i", 200, contiguous_from_zero=True
    )
