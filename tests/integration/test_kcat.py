"""kcat (Debian's package; librdkafka inside) against kmock, as a user would run it: one
process per step, records on stdin/stdout, JSON envelopes (-J) for what it consumed.

kcat has no admin commands, so the topic and group administration scenarios are marked not
expressible; everything else runs. On failure the message carries kcat's stdout and stderr.
"""

from __future__ import annotations

import json
import re
import signal
from typing import Any

import pytest

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    HEADERS,
    HEARTBEAT_MS,
    SESSION_TIMEOUT_MS,
    Proc,
    Rec,
    check_compressed,
    check_idempotent,
    check_records,
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

_NO_MSGVER1 = (
    "librdkafka 2.0.2 (inside kcat 1.7.1) turns gzip, snappy and lz4 off against a broker "
    "without Produce v2 / Fetch v2 (its MsgVer1 feature) and sends those batches "
    "uncompressed; kmock starts at Produce v3 and Fetch v4, as Kafka 4.0 does (KIP-896). "
    "zstd needs only Produce v7 and works."
)
KNOWN_FAILURES = {f"compression-{c}": _NO_MSGVER1 for c in ("gzip", "snappy", "lz4")}

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
    topic = unique("kcat-keys")
    produce(kcat, shared_broker.bootstrap_servers, topic, "kh", 200)
    got = consume_all(kcat, shared_broker.bootstrap_servers, topic, 200)
    check_records(got, "kh", 200, headers=HEADERS, contiguous_from_zero=True)


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(kcat, shared_broker, codec):
    topic = unique(f"kcat-{codec}")
    # -d msg: librdkafka says so (only) in its debug log when it decides not to compress.
    p = produce(
        kcat, shared_broker.bootstrap_servers, topic, codec, 200, extra=["-z", codec, "-d", "msg"]
    )
    try:
        check_compressed(shared_broker.data_dir, topic, codec)
    except AssertionError as e:
        why = sorted({ln.rsplit("]: ", 1)[-1] for ln in p.err_lines() if "not compressing" in ln})
        raise AssertionError(f"{e}; librdkafka said: {'; '.join(why) or 'nothing'}") from None
    got = consume_all(kcat, shared_broker.bootstrap_servers, topic, 200)
    check_records(got, codec, 200, headers=HEADERS, contiguous_from_zero=True)


# "% Group g rebalanced (memberid m): assigned: t [0], t [2]" (or "revoked: ...").
_REBALANCED = re.compile(r"Group \S+ rebalanced \(memberid [^)]*\): (assigned|revoked): ?(.*)$")


class Member:
    """One `kcat -G` process; its assignment comes from the rebalance lines on stderr."""

    def __init__(self, kcat: str, bootstrap: str, topic: str, group: str, name: str) -> None:
        self.name = name
        self.proc = Proc(
            [*base(kcat, bootstrap), "-G", group, *GROUP_OPTS, "-J", "-u", topic],
            f"kcat -G member {name}",
        )

    def assignment(self) -> frozenset[int] | None:
        current: frozenset[int] | None = None
        for line in self.proc.err_lines():
            m = _REBALANCED.search(line)
            if m:
                parts = frozenset(int(x) for x in re.findall(r"\[(\d+)\]", m.group(2)))
                current = parts if m.group(1) == "assigned" else frozenset()
        if current is None and self.proc.popen.poll() is not None:
            raise AssertionError(
                f"member {self.name} exited: {self.proc.error_summary()}\n{self.proc.output()}"
            )
        return current

    def records(self) -> list[Rec]:
        return records(self.proc)

    def stop(self, timeout: float = 15) -> None:
        if self.proc.popen.poll() is None:
            self.proc.popen.send_signal(signal.SIGTERM)
        self.proc.check(timeout)

    def describe(self) -> str:
        return self.proc.output()


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(kcat, shared_broker):
    topic, group = unique("kcat-group"), unique("kcat-group")
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        start_member=lambda name: Member(kcat, bootstrap, topic, group, name),
        produce=lambda prefix, n: produce(kcat, bootstrap, topic, prefix, n),
    )


@scenario("commit-resume")
def test_commit_and_resume(kcat, shared_broker):
    topic, group = unique("kcat-commit"), unique("kcat-commit")
    bootstrap = shared_broker.bootstrap_servers
    produce(kcat, bootstrap, topic, "c", 200)
    first = group_consume(kcat, bootstrap, topic, group, 120)
    rest = group_consume(kcat, bootstrap, topic, group, 80)
    check_records(first + rest, "c", 200)


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(kcat, fresh_broker):
    b = fresh_broker()
    topic, group = unique("kcat-restart"), unique("kcat-restart")
    bootstrap = b.bootstrap_servers
    produce(kcat, bootstrap, topic, "r", 200)
    first = group_consume(kcat, bootstrap, topic, group, 120)
    b.restart()
    produce(kcat, bootstrap, topic, "r", 260, start=200)
    rest = group_consume(kcat, bootstrap, topic, group, 140)
    check_records(first + rest, "r", 260)
    check_records(consume_all(kcat, bootstrap, topic, 260), "r", 260, contiguous_from_zero=True)


@scenario("idempotent-producer")
def test_idempotent_producer(kcat, shared_broker):
    topic = unique("kcat-idem")
    bootstrap = shared_broker.bootstrap_servers
    produce(kcat, bootstrap, topic, "i", 200, extra=["-X", "enable.idempotence=true"])
    check_idempotent(shared_broker.data_dir, topic, 200)
    check_records(consume_all(kcat, bootstrap, topic, 200), "i", 200, contiguous_from_zero=True)
