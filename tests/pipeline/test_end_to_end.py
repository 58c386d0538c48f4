"""Acceptance: a real kmock, real clients, then every job over the data dir the broker left.

kafka-python produces to a two-partition topic (gzip, then zstd), and a group of two
consumers commits offsets across a rebalance: A alone, B joins, B leaves, A leaves. The
broker is then stopped, and the pipeline must tell the same story from the files alone:
the records the producer sent, the offsets the clients committed and read back, the lag,
the generations with their joins, leaves and assignments.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import trio
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.structs import OffsetAndMetadata

from broker.config import load_config
from broker.server import serve
from pipeline import jobs
from tests.integration.harness import KAFKA_PYTHON_POLL_MS

pytestmark = pytest.mark.integration

TOPIC = "orders"
GROUP = "billing"
FIRST, LATER = 40, 10  # records per partition before and after the group's commits


def _wait(predicate: Callable[[], Any], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        threading.Event().wait(0.05)  # a poll interval between checks, not a fixed wait


class Member:
    """A group member polling in its own thread; `call(fn)` runs fn(consumer) there."""

    def __init__(self, bootstrap: str, name: str) -> None:
        self.name = name
        self.assignment: frozenset[int] = frozenset()
        self._calls: queue.Queue[tuple[Callable[[KafkaConsumer], Any], queue.Queue[Any]]] = (
            queue.Queue()
        )
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(
            target=self._run, args=(bootstrap,), name=f"e2e-{name}", daemon=True
        )
        self._thread.start()

    def _run(self, bootstrap: str) -> None:
        try:
            c = KafkaConsumer(
                bootstrap_servers=bootstrap,
                group_id=GROUP,
                client_id=f"e2e-{self.name}",
                auto_offset_reset="earliest",
                enable_auto_commit=False,
                fetch_max_wait_ms=100,
                session_timeout_ms=6000,
                heartbeat_interval_ms=1000,
                request_timeout_ms=10000,
            )
            c.subscribe([TOPIC])
            try:
                while not self._stop.is_set():
                    c.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)
                    self.assignment = frozenset(tp.partition for tp in c.assignment())
                    while not self._calls.empty():
                        fn, reply = self._calls.get()
                        try:
                            reply.put((True, fn(c)))
                        except Exception as e:  # handed to the caller
                            reply.put((False, e))
            finally:
                c.close()  # LeaveGroup
        except BaseException as e:
            self._error = e

    def call(self, fn: Callable[[KafkaConsumer], Any], timeout: float = 20) -> Any:
        reply: queue.Queue[Any] = queue.Queue()
        self._calls.put((fn, reply))
        ok, value = reply.get(timeout=timeout)
        if not ok:
            raise value
        return value

    def commit(self, offsets: dict[int, int], metadata: str) -> dict[int, int]:
        """Commit, then read back what the broker says is committed."""
        tps = {p: TopicPartition(TOPIC, p) for p in offsets}

        def fn(c: KafkaConsumer) -> dict[int, int]:
            c.commit({tps[p]: OffsetAndMetadata(o, metadata, -1) for p, o in offsets.items()})
            return {p: c.committed(tps[p]) for p in offsets}

        return self.call(fn)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(20)
        assert not self._thread.is_alive(), f"{self.name} did not close"
        if self._error is not None:
            raise AssertionError(f"{self.name} failed: {self._error!r}") from self._error


def _produce(
    bootstrap: str, start: int, count: int, codec: str
) -> dict[tuple[int, int], tuple[bytes, bytes]]:
    """`count` records to each partition; returns (partition, offset) -> (key, value) as acked."""
    p = KafkaProducer(
        bootstrap_servers=bootstrap, compression_type=codec, linger_ms=5, max_block_ms=15000
    )
    try:
        sent = {}
        futures = []
        for partition in (0, 1):
            for i in range(start, start + count):
                k, v = b"key-%d-%d" % (partition, i), b"value-%d-%d" % (partition, i)
                futures.append(
                    (
                        k,
                        v,
                        p.send(
                            TOPIC,
                            key=k,
                            value=v,
                            partition=partition,
                            headers=[("seq", str(i).encode())],
                        ),
                    )
                )
        p.flush(timeout=20)
        for k, v, f in futures:
            md = f.get(timeout=5)
            sent[(md.partition, md.offset)] = (k, v)
        return sent
    finally:
        p.close(timeout=5)


def _clients(bootstrap: str) -> dict[str, Any]:
    """The client side of the story; returns what the clients saw."""
    seen: dict[str, Any] = {"sent": _produce(bootstrap, 0, FIRST, "gzip"), "committed": []}
    a = Member(bootstrap, "a")
    b = None
    try:
        _wait(lambda: a.assignment == {0, 1}, 30, "A to hold both partitions")
        seen["committed"].append(a.commit({0: 25, 1: 15}, "a-alone"))
        b = Member(bootstrap, "b")
        _wait(
            lambda: (
                a.assignment
                and b.assignment
                and a.assignment | b.assignment == {0, 1}
                and not a.assignment & b.assignment
            ),
            30,
            "A and B to split the partitions",
        )
        seen["split"] = {"a": a.assignment, "b": b.assignment}
        for member, target in ((a, 30), (b, 20)):
            (p,) = member.assignment
            seen["committed"].append(
                member.commit({p: target if p == 0 else target - 10}, f"{member.name}-split")
            )
        b.stop()
        b = None
        _wait(lambda: a.assignment == {0, 1}, 30, "A to take both partitions back")
        seen["committed"].append(a.commit({0: 35, 1: FIRST}, "a-final"))
    finally:
        if b is not None:
            b.stop()
        a.stop()
    seen["sent"].update(_produce(bootstrap, FIRST, LATER, "zstd"))
    return seen


def _reports(spark: Any, data_dir: Path, out: Path) -> dict[str, Any]:
    return {
        "records": [r.asDict() for r in jobs.read(spark, data_dir, topics=TOPIC).collect()],
        "codecs": {
            r["compression"]
            for r in jobs.read(spark, data_dir, topics=TOPIC, mode="batches").collect()
        },
        "lag": [r.asDict() for r in jobs.lag(spark, data_dir, groups=[GROUP]).collect()],
        "history": [
            r.asDict(recursive=True)
            for r in jobs.group_history(spark, data_dir, groups=[GROUP]).collect()
        ],
        "snapshot": [
            r.asDict() for r in jobs.committed_offsets(spark, data_dir, groups=[GROUP]).collect()
        ],
        "groups": [
            r.asDict(recursive=True)
            for r in jobs.group_metadata(jobs.snapshot(spark, data_dir)).collect()
        ],
        "export": pq.read_table(jobs.export(spark, data_dir, out, topics=[TOPIC])),
        "skipped": jobs.skipped(spark, data_dir),
    }


async def test_jobs_tell_what_the_clients_did(spark, tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    config = load_config(
        overrides={
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data_dir),
            "num.partitions": 2,
        }
    )
    async with trio.open_nursery() as nursery:
        broker = await nursery.start(serve, config)
        with trio.fail_after(120):
            seen = await trio.to_thread.run_sync(_clients, broker.bootstrap_servers)
        nursery.cancel_scope.cancel()

    with trio.fail_after(600):
        got = await trio.to_thread.run_sync(_reports, spark, data_dir, tmp_path / "export")

    # The records, as the producer had them acknowledged.
    records = {(r["partition"], r["offset"]): (r["key"], r["value"]) for r in got["records"]}
    assert records == seen["sent"]
    assert len(records) == 2 * (FIRST + LATER)
    assert all(r["headers"][0]["key"] == "seq" and not r["is_control"] for r in got["records"])
    assert {"gzip", "zstd"} <= got["codecs"]

    # Every commit was read back by the client; the last one is the state the log holds.
    final = seen["committed"][-1]
    assert final == {0: 35, 1: FIRST}
    assert {(r["partition"], r["offset"], r["metadata"]) for r in got["snapshot"]} == {
        (0, 35, "a-final"),
        (1, FIRST, "a-final"),
    }
    end = FIRST + LATER
    assert [
        (r["topic"], r["partition"], r["committed_offset"], r["log_end_offset"], r["lag"])
        for r in got["lag"]
    ] == [
        (TOPIC, 0, 35, end, end - 35),
        (TOPIC, 1, FIRST, end, end - FIRST),
    ]

    # The group's history: A alone, A and B splitting the partitions, A alone again, Empty.
    history = got["history"]
    generations = [h["generation"] for h in history]
    assert generations == sorted(set(generations))
    clients = [sorted(m["client_id"] for m in h["members"]) for h in history]
    assert ["e2e-a", "e2e-b"] in clients
    both = clients.index(["e2e-a", "e2e-b"])
    assert ["e2e-a"] in clients[:both]
    assert ["e2e-a"] in clients[both + 1 :]
    assert (history[-1]["state"], history[-1]["members"]) == ("Empty", [])
    b_id = next(m["member_id"] for m in history[both]["members"] if m["client_id"] == "e2e-b")
    assert b_id in history[both]["joined"]
    assert any(b_id in h["left"] for h in history[both + 1 :])
    owners = {(p["partition"], p["member_id"]) for p in history[both]["assignment"]}
    ids = {m["client_id"]: m["member_id"] for m in history[both]["members"]}
    assert owners == {
        (p, ids["e2e-" + name]) for name, parts in seen["split"].items() for p in parts
    }
    assert all(h["protocol_type"] == "consumer" for h in history)
    assert all(m["topics"] == [TOPIC] for h in history for m in h["members"])

    # The compacted state keeps the group's last metadata record: Empty, at its last generation.
    (group,) = [g for g in got["groups"] if g["group"] == GROUP]
    assert (group["generation"], group["members"]) == (generations[-1], [])

    # The export holds every record, by topic and partition; nothing was skipped.
    table = got["export"]
    assert table.num_rows == len(records)
    assert sorted(table.column("offset").to_pylist()) == sorted(o for _, o in records)
    assert got["skipped"] == []
