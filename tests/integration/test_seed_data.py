"""Seed data, read back by real clients: records seeded by the `kmock_seed` mark (a jsonl file),
by `kmock.seed(...)` (Python values, bytes included) and by `kmock produce --file` come back
identical through kafka-python and confluent-kafka: partitions, offsets, keys, values,
headers (order, repeated names, null values, bytes) and CreateTime timestamps.

The `kmock` fixture is the pytest plugin's own (broker.pytest_plugin); the clients run in the
test's thread while the broker serves from its own.
"""

from __future__ import annotations

import base64
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from cli.main import main
from client import LATEST, KafkaClient
from protocol.errors import KafkaError
from protocol.partitioner import default_partition
from tests.integration.harness import REQUEST_TIMEOUT_MS, confluent_conf, deadline

pytestmark = pytest.mark.integration

SEED_DIR = Path(__file__).parent / "seed"
# The records of seed/orders.jsonl as the clients must read them:
# (partition, offset, key, value, headers, timestamp).
ORDERS = [
    (0, 0, b"\x00\xff", b"\xde\xad\xbe\xef", (("bin", b"\x01\x02"),), 1767323045001),
    (0, 1, b"order-1", None, (), 1767323045002),
    (1, 0, b"order-1", b'{"id":1,"item":"tea"}', (("source", b"seed"),), 1767323045678),
    (1, 1, None, b"no key", (("h", b"1"), ("h", b"2"), ("empty", None)), 1767323045000),
    (2, 0, b"order-2", b"plain text", (), 1767323045000),
]
# The seeded timestamps are months old: no retention may delete them while the test runs.
SETTINGS = {"num.partitions": 3, "log.retention.ms": -1}
SCENARIO_S = 60


def python_records(now_ms: int) -> list[dict[str, Any]]:
    """Records for `kmock.seed`, and (base64 for the bytes) for a jsonl file."""
    return [
        {"key": b"k\x80", "value": b"\x00\x01", "headers": [("a", b"\xff"), ("a", None)]},
        {"key": "ключ", "value": "значение", "partition": 2, "timestamp": now_ms - 1000},
        {"value": "no key, no partition", "timestamp": now_ms - 2000},
    ]


def expected_python(now_ms: int) -> list[tuple[Any, ...]]:
    k0 = default_partition(b"k\x80", 3)
    rows = [
        (k0, b"k\x80", b"\x00\x01", (("a", b"\xff"), ("a", None)), None),
        (2, "ключ".encode(), "значение".encode(), (), now_ms - 1000),
        (0, None, b"no key, no partition", (), now_ms - 2000),  # the fixture's keyless rule
    ]
    out, nth = [], {}
    for partition, key, value, headers, ts in rows:
        offset = nth.get(partition, 0)
        nth[partition] = offset + 1
        out.append((partition, offset, key, value, headers, ts))
    return sorted(out, key=lambda r: (r[0], r[1]))


def read_kafka_python(bootstrap: str, topic: str, n: int) -> list[tuple[Any, ...]]:
    from kafka import KafkaConsumer, TopicPartition

    consumer = KafkaConsumer(
        bootstrap_servers=bootstrap,
        enable_auto_commit=False,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        fetch_max_wait_ms=100,
    )
    try:
        tps = [TopicPartition(topic, p) for p in range(3)]
        consumer.assign(tps)
        consumer.seek_to_beginning(*tps)
        got: list[Any] = []
        until = time.monotonic() + SCENARIO_S / 2
        while len(got) < n:
            assert time.monotonic() < until, f"kafka-python read {len(got)} of {n}"
            for records in consumer.poll(timeout_ms=200).values():
                got.extend(records)
        for r in got:
            assert r.timestamp_type == 0  # CreateTime
        return sorted(
            (
                (r.partition, r.offset, r.key, r.value, tuple(r.headers or ()), r.timestamp)
                for r in got
            ),
            key=lambda r: (r[0], r[1]),
        )
    finally:
        consumer.close()


def read_confluent(bootstrap: str, topic: str, n: int) -> list[tuple[Any, ...]]:
    from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_CREATE_TIME, Consumer, TopicPartition

    consumer = Consumer(
        confluent_conf(bootstrap, "seed-check", **{"group.id": "seed-check"})
        | {"enable.auto.commit": False}
    )
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(3)])
        got: list[Any] = []
        until = time.monotonic() + SCENARIO_S / 2
        while len(got) < n:
            assert time.monotonic() < until, f"confluent-kafka read {len(got)} of {n}"
            for m in consumer.consume(num_messages=n - len(got), timeout=0.2):
                assert m.error() is None, m.error()
                got.append(m)
        out = []
        for m in got:
            kind, ts = m.timestamp()
            assert kind == TIMESTAMP_CREATE_TIME
            headers = tuple(m.headers() or ())
            out.append((m.partition(), m.offset(), m.key(), m.value(), headers, ts))
        return sorted(out, key=lambda r: (r[0], r[1]))
    finally:
        consumer.close()


def assert_read_back(bootstrap: str, topic: str, expected: list[tuple[Any, ...]]) -> None:
    for reader in (read_kafka_python, read_confluent):
        got = reader(bootstrap, topic, len(expected))
        # A record seeded without a timestamp gets the time it was produced.
        want = [r if r[5] is not None else (*r[:5], got[i][5]) for i, r in enumerate(expected)]
        assert got == want, reader.__name__
        for r, g in zip(expected, got, strict=True):
            if r[5] is None:
                assert abs(g[5] - time.time() * 1000) < 60_000


@deadline(SCENARIO_S)
@pytest.mark.kmock_config(SETTINGS)
@pytest.mark.kmock_seed("seed/orders.jsonl", topic="orders")
def test_a_seed_file_reads_back_identical_in_kafka_python_and_confluent_kafka(kmock):
    # Seeded by the mark, before the test began.
    assert_read_back(kmock.bootstrap_servers, "orders", ORDERS)


@deadline(SCENARIO_S)
@pytest.mark.kmock_config(SETTINGS)
def test_kmock_seed_with_python_values_reads_back_identical(kmock):
    now_ms = int(time.time() * 1000)
    placed = kmock.seed("values", python_records(now_ms))
    expected = expected_python(now_ms)
    assert sorted(placed) == sorted(("values", r[0], r[1]) for r in expected)
    assert_read_back(kmock.bootstrap_servers, "values", expected)


@deadline(SCENARIO_S)
@pytest.mark.kmock_config(SETTINGS)
def test_kmock_produce_file_reads_back_identical(kmock, tmp_path):
    """The CLI reads the same file the mark did, and a file of the Python records (bytes in
    base64); both read back identical. (The keyless record is given the partition the
    fixture picks: the CLI's sticky partitioner picks one at random.)"""
    now_ms = int(time.time() * 1000)
    lines = []
    for r in python_records(now_ms):
        line = dict(r)
        for field in ("key", "value"):
            if isinstance(line.get(field), bytes):
                line[f"{field}_b64"] = base64.b64encode(line.pop(field)).decode()
        if "headers" in line:
            line["headers_b64"] = [
                [k, None if v is None else base64.b64encode(v).decode()]
                for k, v in line.pop("headers")
            ]
        if line.get("key") is None and "key_b64" not in line:
            line.setdefault("partition", 0)
        lines.append(json.dumps(line, ensure_ascii=False))
    path = tmp_path / "values.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    def produce(*argv: str) -> dict[str, Any]:
        out, err = io.StringIO(), io.StringIO()
        argv = (*argv, "--bootstrap-server", kmock.bootstrap_servers, "--output", "json")
        assert main(list(argv), stdout=out, stderr=err) == 0, err.getvalue()
        return json.loads(out.getvalue())

    assert produce("produce", "orders", "--file", str(SEED_DIR / "orders.jsonl"))["records"] == 5
    assert_read_back(kmock.bootstrap_servers, "orders", ORDERS)

    assert produce("produce", "values", "--file", str(path))["records"] == 3
    assert_read_back(kmock.bootstrap_servers, "values", expected_python(now_ms))


@deadline(SCENARIO_S)
def test_a_bad_seed_line_names_file_and_line_and_writes_nothing(kmock, tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"value": "fine"}\n{"value": "also fine"}\n{"value": oops}\n')
    with pytest.raises(ValueError, match=r"bad\.jsonl line 3: not JSON"):
        kmock.seed_file(path, topic="untouched")
    with pytest.raises(ValueError, match=r"records\[1\]: unknown field 'vaule'"):
        kmock.seed("untouched", [{"value": "ok"}, {"vaule": "typo"}])
    with pytest.raises(ValueError, match=r"records\[0\]: no topic"):
        kmock.seed(None, [b"where to?"])
    with KafkaClient(kmock.bootstrap_servers) as client:
        assert [t.name for t in client.metadata(None).topics] == []
    # A partition the topic lacks: the lookup auto-created the topic, nothing was written.
    with pytest.raises(
        KafkaError, match=r"records\[1\]: topic 'one' has no partition 5 \(it has 1\)"
    ):
        kmock.seed("one", [{"value": "a"}, {"partition": 5, "value": "b"}])
    with KafkaClient(kmock.bootstrap_servers) as client:
        assert client.list_offsets([("one", 0)], LATEST) == {("one", 0): 0}


@deadline(SCENARIO_S)
def test_seeding_a_topic_twice_appends_after_the_first_records(kmock):
    """The second seeding finds the topic there (its Metadata answer is one the broker keeps
    encoded, broker.handlers.metadata) and appends after the first."""
    assert kmock.seed("twice", [b"a", b"b"]) == [("twice", 0, 0), ("twice", 0, 1)]
    assert kmock.seed("twice", [b"c"]) == [("twice", 0, 2)]
