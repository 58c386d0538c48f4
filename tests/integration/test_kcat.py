"""kcat (Debian's package; librdkafka inside) against kmock, as a user would run it: one
process per step, records on stdin/stdout, JSON envelopes (-J) for what it consumed.

kcat has no admin commands, so the topic and group administration scenarios are marked not
expressible; everything else runs. On failure the message carries kcat's stdout and stderr.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from broker.pytest_plugin import KmockBroker
from tests.integration import scenarios
from tests.integration.conftest import SHARED_OVERRIDES
from tests.integration.harness import (
    CODECS,
    HEADERS,
    HEARTBEAT_MS,
    SESSION_TIMEOUT_MS,
    Proc,
    ProcMember,
    Rec,
    explain,
    key,
    run,
    unique,
    value,
)
from tests.integration.matrix import scenario

pytestmark = pytest.mark.integration

CLIENT = "kcat"
NOT_EXPRESSIBLE = {
    "create-delete-topic": "kcat has no admin commands (no CreateTopics/DeleteTopics); "
    "topics only come from the broker's auto-creation",
    "list-describe-groups": "kcat cannot list or describe groups, nor fetch a group's "
    "committed offsets (its modes are -P, -C, -G, -L and -Q)",
}

# librdkafka 2.0.2 (inside kcat 1.7.1) compresses with gzip, snappy and lz4 only against a
# broker that lists Produce v0 (else it sends those batches uncompressed, "Broker does not
# support compression type"). Kafka 4.x accepts Produce from v3 but lists it from v0 for
# this reason (KAFKA-18659), and so does kmock under every kafka.version: the compression
# cells pass under the default (4.1) and under 3.9, where Produce v0-2 are served too.

TIMEOUT_S = 30
GROUP_OPTS = [
    "-X",
    f"session.timeout.ms={SESSION_TIMEOUT_MS}",
    "-X",
    f"heartbeat.interval.ms={HEARTBEAT_MS}",
    "-X",
    "fetch.wait.max.ms=100",
    "-X",
    "auto.offset.reset=earliest",
]


def base(kcat: str, bootstrap: str) -> list[str]:
    return [kcat, "-b", bootstrap, "-m", "10", "-X", "client.id=kmock-kcat"]


def produce(
    kcat: str,
    bootstrap: str,
    topic: str,
    prefix: str,
    n: int,
    *,
    start: int = 0,
    extra: list[str] | None = None,
) -> Proc:
    lines = "".join(f"{key(i)}:{value(prefix, i)}\n" for i in range(start, n))
    headers = [arg for k, v in HEADERS for arg in ("-H", f"{k}={v}")]
    return run(
        [*base(kcat, bootstrap), "-P", "-t", topic, "-K", ":", *headers, *(extra or [])],
        "kcat -P",
        TIMEOUT_S,
        stdin=lines.encode(),
    )


def rec(envelope: dict[str, Any]) -> Rec:
    raw = envelope.get("headers") or []
    # kcat prints headers as a flat [name, value, name, value, ...] list.
    headers = (
        tuple(zip(raw[0::2], raw[1::2], strict=True))
        if isinstance(raw, list)
        else (tuple(raw.items()))
    )
    return Rec(
        envelope["partition"],
        envelope["offset"],
        envelope.get("key"),
        envelope.get("payload"),
        headers,
    )


def records(p: Proc) -> list[Rec]:
    return [rec(e) for e in p.events() if "payload" in e]


def consume_all(kcat: str, bootstrap: str, topic: str, n: int) -> list[Rec]:
    p = run(
        [*base(kcat, bootstrap), "-C", "-t", topic, "-o", "beginning", "-e", "-J", "-c", str(n)],
        "kcat -C",
        TIMEOUT_S,
    )
    got = records(p)
    assert len(got) == n, f"kcat -C printed {len(got)} records, expected {n}\n{p.output()}"
    return got


def group_consume(kcat: str, bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
    """`kcat -G` until n records: it stores each record's offset and commits on close."""
    p = run(
        [*base(kcat, bootstrap), "-G", group, *GROUP_OPTS, "-J", "-c", str(n), topic],
        "kcat -G",
        TIMEOUT_S,
    )
    got = records(p)
    assert len(got) == n, f"kcat -G printed {len(got)} records, expected {n}\n{p.output()}"
    return got


def client(kcat: str, bootstrap: str) -> scenarios.Client:
    """kcat cannot fetch a group's committed offsets: the resume scenarios check them only
    through where the next consumer starts."""

    def why_uncompressed(p: Proc) -> str:
        why = sorted({ln.rsplit("]: ", 1)[-1] for ln in p.err_lines() if "not compressing" in ln})
        return f"librdkafka said: {'; '.join(why) or 'nothing'}"

    return scenarios.Client(
        prefix="kcat",
        produce=lambda topic, prefix, n, **opts: produce(kcat, bootstrap, topic, prefix, n, **opts),
        consume_all=lambda topic, n: consume_all(kcat, bootstrap, topic, n),
        group_consume=lambda topic, group, n: group_consume(kcat, bootstrap, topic, group, n),
        # -d msg: librdkafka says so (only) in its debug log when it decides not to compress.
        compression=lambda codec: {"extra": ["-z", codec, "-d", "msg"]},
        idempotence={"extra": ["-X", "enable.idempotence=true"]},
        why_uncompressed=why_uncompressed,
    )


@scenario("metadata")
def test_metadata(kcat, shared_broker):
    topic = unique("kcat-meta")
    bootstrap = shared_broker.bootstrap_servers
    produce(kcat, bootstrap, topic, "m", 3)
    p = run([*base(kcat, bootstrap), "-L", "-J", "-t", topic], "kcat -L", TIMEOUT_S)
    md = json.loads(p.lines()[0])
    with explain(p):
        brokers = []
        for b in md["brokers"]:
            host, _, port = b["name"].rpartition(":")
            brokers.append((b["id"], host, int(port)))
        scenarios.check_cluster(
            shared_broker, cluster_id=None, controller_id=md.get("controllerid"), brokers=brokers
        )
        (t,) = md["topics"]
        assert t["topic"] == topic, t
        assert "error" not in t, t
        scenarios.check_partitions(
            shared_broker,
            [
                (
                    p_["partition"],
                    p_["leader"],
                    [r["id"] for r in p_["replicas"]],
                    [r["id"] for r in p_["isrs"]],
                    p_.get("error", 0),
                )
                for p_ in t["partitions"]
            ],
        )


@scenario("keys-headers")
def test_keys_and_headers(kcat, shared_broker):
    scenarios.keys_and_headers(client(kcat, shared_broker.bootstrap_servers))


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(kcat, shared_broker, codec):
    scenarios.compression(client(kcat, shared_broker.bootstrap_servers), shared_broker, codec)


@pytest.fixture(scope="module")
def kafka_3_9_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KmockBroker]:
    """A broker with `kafka.version` 3.9: Produce from v0 and Fetch from v0 listed."""
    b = KmockBroker(
        tmp_path_factory.mktemp("kmock-3.9") / "data", {**SHARED_OVERRIDES, "kafka.version": "3.9"}
    )
    b.start()
    yield b
    b.stop()


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}", release="3.9")
def test_compression_against_kafka_3_9(kcat, kafka_3_9_broker, codec):
    # Kafka 3.9 serves Produce v0-11 and Fetch v0-17: librdkafka 2.0.2 compresses.
    scenarios.compression(client(kcat, kafka_3_9_broker.bootstrap_servers), kafka_3_9_broker, codec)


# "% Group g rebalanced (memberid m): assigned: t [0], t [2]" (or "revoked: ...").
_REBALANCED = re.compile(r"Group \S+ rebalanced \(memberid [^)]*\): (assigned|revoked): ?(.*)$")


class Member(ProcMember):
    """One `kcat -G` process; its assignment comes from the rebalance lines on stderr."""

    def __init__(self, kcat: str, bootstrap: str, topic: str, group: str, name: str) -> None:
        super().__init__(
            name,
            Proc(
                [*base(kcat, bootstrap), "-G", group, *GROUP_OPTS, "-J", "-u", topic],
                f"kcat -G member {name}",
            ),
        )

    def _assigned(self) -> frozenset[int] | None:
        current: frozenset[int] | None = None
        for line in self.proc.err_lines():
            m = _REBALANCED.search(line)
            if m:
                parts = frozenset(int(x) for x in re.findall(r"\[(\d+)\]", m.group(2)))
                current = parts if m.group(1) == "assigned" else frozenset()
        return current

    def records(self) -> list[Rec]:
        return records(self.proc)


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(kcat, shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        client(kcat, bootstrap),
        lambda topic, group, name: Member(kcat, bootstrap, topic, group, name),
    )


@scenario("commit-resume")
def test_commit_and_resume(kcat, shared_broker):
    scenarios.commit_and_resume(client(kcat, shared_broker.bootstrap_servers))


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(kcat, fresh_broker):
    b = fresh_broker()
    scenarios.resume_after_restart(client(kcat, b.bootstrap_servers), b)


@scenario("idempotent-producer")
def test_idempotent_producer(kcat, shared_broker):
    scenarios.idempotent_producer(client(kcat, shared_broker.bootstrap_servers), shared_broker)
