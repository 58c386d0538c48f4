"""sarama (Go, Debian's 1.22.1) against kmock, through tests/integration/sarama/main.go
(`make sarama` builds it offline): one process per step, JSON lines out. sarama-check
assumes Kafka 2.1.0, which decides the request versions it sends. On failure the message
carries the process's stdout and stderr."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    Proc,
    ProcMember,
    consumed,
    explain,
    run,
    unique,
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


def committed(binary: str, bootstrap: str, topic: str, group: str) -> dict[int, int]:
    p = go(binary, "group-offsets", bootstrap, topic=topic, group=group)
    return {int(k): v for k, v in p.first("offsets")["offsets"].items() if v >= 0}


def client(binary: str, bootstrap: str) -> scenarios.Client:
    return scenarios.Client(
        prefix="go",
        produce=lambda topic, prefix, n, **opts: produce(
            binary, bootstrap, topic, prefix, n, **opts
        ),
        consume_all=lambda topic, n: consumed(go(binary, "consume", bootstrap, topic=topic, n=n)),
        group_consume=lambda topic, group, n: consumed(
            go(binary, "group", bootstrap, topic=topic, group=group, n=n)
        ),
        committed=lambda topic, group: committed(binary, bootstrap, topic, group),
        compression=lambda codec: {"compression": codec},
        idempotence={"idempotent": True},
    )


@scenario("metadata")
def test_metadata(sarama_check, shared_broker):
    topic = unique("go-meta")
    bootstrap = shared_broker.bootstrap_servers
    produce(sarama_check, bootstrap, topic, "m", 3)
    p = go(sarama_check, "metadata", bootstrap, topic=topic)
    with explain(p):
        cluster, t = p.first("cluster"), p.first("topic")
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
        assert p.first("admin-topics")["topics"].get(topic) == 3


@scenario("create-delete-topic")
def test_create_delete_topic(sarama_check, shared_broker):
    topic = unique("go-admin")
    bootstrap = shared_broker.bootstrap_servers
    p = go(sarama_check, "create-topic", bootstrap, topic=topic, partitions=3)
    with explain(p):
        assert p.first("topics")["topics"].get(topic) == 3
    p = go(sarama_check, "delete-topic", bootstrap, topic=topic)
    with explain(p):
        assert topic not in p.first("topics")["topics"]


@scenario("keys-headers")
def test_keys_and_headers(sarama_check, shared_broker):
    scenarios.keys_and_headers(client(sarama_check, shared_broker.bootstrap_servers))


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(sarama_check, shared_broker, codec):
    scenarios.compression(
        client(sarama_check, shared_broker.bootstrap_servers), shared_broker, codec
    )


class Member(ProcMember):
    """One `sarama-check -mode group -hold` process; it leaves the group on SIGTERM."""

    def __init__(self, binary: str, bootstrap: str, topic: str, group: str, name: str) -> None:
        a = args(binary, "group", bootstrap, topic=topic, group=group, hold=True)
        a[a.index("-timeout") + 1] = "120s"
        super().__init__(name, Proc(a, f"sarama member {name}", keep_stdin_open=True))

    def _assigned(self) -> frozenset[int] | None:
        assigned = [e for e in self.proc.events() if e.get("event") == "assigned"]
        if not assigned:
            return None
        claims = assigned[-1].get("claims") or {}
        return frozenset(p for parts in claims.values() for p in parts)


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(sarama_check, shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        client(sarama_check, bootstrap),
        lambda topic, group, name: Member(sarama_check, bootstrap, topic, group, name),
    )


@scenario("commit-resume")
def test_commit_and_resume(sarama_check, shared_broker):
    scenarios.commit_and_resume(client(sarama_check, shared_broker.bootstrap_servers))


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(sarama_check, fresh_broker):
    b = fresh_broker()
    scenarios.resume_after_restart(client(sarama_check, b.bootstrap_servers), b)


@scenario("list-describe-groups")
def test_list_and_describe_groups(sarama_check, shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    scenarios.list_describe_groups_cli(
        client(sarama_check, bootstrap),
        lambda topic, group, name: Member(sarama_check, bootstrap, topic, group, name),
        lambda mode, **opts: go(sarama_check, mode, bootstrap, **opts),
        lambda groups: dict(groups["groups"]),
        client_id="sarama-check",
        timeout=TIMEOUT_S,
    )


@scenario("idempotent-producer")
def test_idempotent_producer(sarama_check, shared_broker):
    scenarios.idempotent_producer(
        client(sarama_check, shared_broker.bootstrap_servers), shared_broker
    )
