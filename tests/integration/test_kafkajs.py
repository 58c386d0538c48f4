"""kafkajs (npm, on node) against kmock, through tests/integration/js/kafkajs-check.js: one
process per step, JSON lines out. On failure the message carries the process's stdout and
stderr (kafkajs's own log goes to stderr)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    JS_DIR,
    Proc,
    ProcMember,
    consumed,
    explain,
    run,
    unique,
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


def committed(cmd: list[str], bootstrap: str, topic: str, group: str) -> dict[int, int]:
    p = js(cmd, "group-offsets", bootstrap, topic=topic, group=group)
    return {
        x["partition"]: x["offset"] for x in p.first("offsets")["partitions"] if x["offset"] >= 0
    }


def client(cmd: list[str], bootstrap: str) -> scenarios.Client:
    return scenarios.Client(
        prefix="js",
        produce=lambda topic, prefix, n, **opts: produce(cmd, bootstrap, topic, prefix, n, **opts),
        consume_all=lambda topic, n: consumed(js(cmd, "consume", bootstrap, topic=topic, n=n)),
        group_consume=lambda topic, group, n: consumed(
            js(cmd, "group", bootstrap, topic=topic, group=group, n=n)
        ),
        committed=lambda topic, group: committed(cmd, bootstrap, topic, group),
        compression=lambda codec: {"compression": codec},
        idempotence={"idempotent": True},
    )


@scenario("metadata")
def test_metadata(kafkajs_check, shared_broker):
    topic = unique("js-meta")
    bootstrap = shared_broker.bootstrap_servers
    produce(kafkajs_check, bootstrap, topic, "m", 3)
    p = js(kafkajs_check, "metadata", bootstrap, topic=topic)
    with explain(p):
        cluster, t = p.first("cluster"), p.first("topic")
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
        assert p.first("created")["created"] is True
        assert sorted(x["partitionId"] for x in p.first("topic")["partitions"]) == [0, 1, 2]
        assert topic in p.first("topics")["topics"]
    p = js(kafkajs_check, "delete-topic", bootstrap, topic=topic)
    with explain(p):
        assert topic not in p.first("topics")["topics"]


@scenario("keys-headers")
def test_keys_and_headers(kafkajs_check, shared_broker):
    scenarios.keys_and_headers(client(kafkajs_check, shared_broker.bootstrap_servers))


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(kafkajs_check, shared_broker, codec):
    scenarios.compression(
        client(kafkajs_check, shared_broker.bootstrap_servers), shared_broker, codec
    )


class Member(ProcMember):
    """One `kafkajs-check --mode group --hold` process; it leaves the group when its stdin
    closes."""

    def __init__(self, cmd: list[str], bootstrap: str, topic: str, group: str, name: str) -> None:
        super().__init__(
            name,
            Proc(
                args(cmd, "group", bootstrap, topic=topic, group=group, hold=True, timeout=120),
                f"kafkajs member {name}",
                cwd=JS_DIR,
                keep_stdin_open=True,
            ),
        )

    def _assigned(self) -> frozenset[int] | None:
        assigned = [e for e in self.proc.events() if e.get("event") == "assigned"]
        return frozenset(assigned[-1]["partitions"]) if assigned else None

    def _leave(self) -> None:
        self.proc.close_stdin()


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(kafkajs_check, shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        client(kafkajs_check, bootstrap),
        lambda topic, group, name: Member(kafkajs_check, bootstrap, topic, group, name),
    )


@scenario("commit-resume")
def test_commit_and_resume(kafkajs_check, shared_broker):
    scenarios.commit_and_resume(client(kafkajs_check, shared_broker.bootstrap_servers))


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(kafkajs_check, fresh_broker):
    b = fresh_broker()
    scenarios.resume_after_restart(client(kafkajs_check, b.bootstrap_servers), b)


@scenario("list-describe-groups")
def test_list_and_describe_groups(kafkajs_check, shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    scenarios.list_describe_groups_cli(
        client(kafkajs_check, bootstrap),
        lambda topic, group, name: Member(kafkajs_check, bootstrap, topic, group, name),
        lambda mode, **opts: js(kafkajs_check, mode, bootstrap, **opts),
        lambda groups: {g["group_id"]: g["protocol_type"] for g in groups["groups"]},
        client_id="kmock-kafkajs",
        timeout=TIMEOUT_S,
    )


@scenario("idempotent-producer")
def test_idempotent_producer(kafkajs_check, shared_broker):
    scenarios.idempotent_producer(
        client(kafkajs_check, shared_broker.bootstrap_servers), shared_broker
    )
