"""Crash cycles under a transactional workload: a confluent-kafka transactional producer
commits and aborts transactions while the broker is SIGKILLed at random moments and
restarted; afterwards every transaction must have ended committed or aborted as a whole.

The producer writes transaction i as n records valued "i:j:n" (j = 0..n-1) and commits or
aborts it at random, flushing first so that aborted records are in the log. The outcome is
known when commit_transaction/abort_transaction returned; a kill in between leaves it
unknown, and the producer starts over with a new instance of the same transactional.id,
whose InitProducerId ends the open transaction (as after a client crash).

Checked after the last cycle, reading the whole topic:
  * read_committed sees, of every transaction, all of its records or none;
  * every acknowledged commit is there whole (nothing acknowledged is lost);
  * no record of an acknowledged abort is there;
  * read_uncommitted holds every record of every acknowledged transaction (aborted ones
    included: they were flushed before the abort);
  * the last stable offset reaches the log end (nothing stays open), so read_committed
    readers are not held back.

`--cycles N` (default 3; `make reliability` runs more). KMOCK_RELIABILITY_SEED replays a
run's choices.
"""

from __future__ import annotations

import os
import random
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from client import KafkaClient
from tests.reliability.process import BrokerProcess

TOPIC = "txn-reliability"
PARTITIONS = 3
PROGRESS_TIMEOUT_S = 60.0
READ_TIMEOUT_S = 60.0


class TxnWorkload:
    """The transactional producer, in a thread, and what it learnt of each transaction."""

    def __init__(self, bootstrap: str, seed: int) -> None:
        self.bootstrap = bootstrap
        self.rng = random.Random(seed)
        self.sizes: dict[int, int] = {}  # transaction -> records sent
        self.outcomes: dict[int, str] = {}  # transaction -> "commit" / "abort", once known
        self.lock = threading.Lock()
        self.stopping = threading.Event()
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._main, daemon=True)

    def start(self) -> TxnWorkload:
        self.thread.start()
        return self

    def done(self) -> int:
        with self.lock:
            return len(self.outcomes)

    def _producer(self) -> Producer:
        """A new instance of the transactional id, once the broker takes it."""
        while not self.stopping.is_set():
            producer = Producer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "transactional.id": "reliability-tid",
                    "linger.ms": 2,
                    "transaction.timeout.ms": 60000,
                    "message.timeout.ms": 5000,
                    "socket.connection.setup.timeout.ms": 1000,
                }
            )
            try:
                producer.init_transactions(5)
                return producer
            except KafkaException:
                continue
        raise InterruptedError

    def _main(self) -> None:
        try:
            producer = self._producer()
            txn = 0
            while not self.stopping.is_set():
                n = self.rng.randint(1, 20)
                outcome = self.rng.choice(("commit", "abort"))
                with self.lock:
                    self.sizes[txn] = n
                try:
                    producer.begin_transaction()
                    for j in range(n):
                        producer.produce(
                            TOPIC, value=f"{txn}:{j}:{n}".encode(), partition=j % PARTITIONS
                        )
                    if producer.flush(5) != 0:
                        raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
                    if outcome == "commit":
                        producer.commit_transaction(5)
                    else:
                        producer.abort_transaction(5)
                except KafkaException:
                    producer = self._producer()  # the outcome stays unknown
                else:
                    with self.lock:
                        self.outcomes[txn] = outcome
                txn += 1
        except InterruptedError:
            return
        except BaseException as e:  # reported by the test
            self.error = e

    def stop(self) -> None:
        self.stopping.set()
        self.thread.join(30)
        assert not self.thread.is_alive(), "the producer did not stop"


def read_all(bootstrap: str, isolation: str) -> list[str]:
    """Every value of the topic, up to the end of each partition (for read_committed: the
    last stable offset, which must reach the log end: nothing is left open)."""
    with KafkaClient(bootstrap) as client:
        latest = client.list_offsets([(TOPIC, p) for p in range(PARTITIONS)], -1)
    ends = {p: latest[(TOPIC, p)] for p in range(PARTITIONS)}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"reader-{isolation}",
            "isolation.level": isolation,
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
        values: list[str] = []
        positions = dict.fromkeys(range(PARTITIONS), 0)
        deadline = time.monotonic() + READ_TIMEOUT_S
        while any(positions[p] < ends[p] for p in positions):
            assert time.monotonic() < deadline, f"{isolation} stuck at {positions} of {ends}"
            message = consumer.poll(0.2)
            if message is None:
                continue
            if message.error() is not None:
                if message.error().code() == KafkaError._PARTITION_EOF:
                    positions[message.partition()] = max(
                        positions[message.partition()], message.offset()
                    )
                    continue
                raise KafkaException(message.error())
            positions[message.partition()] = message.offset() + 1
            values.append(message.value().decode())
        return values
    finally:
        consumer.close()


def by_transaction(values: list[str]) -> dict[int, tuple[set[int], int]]:
    found: dict[int, tuple[set[int], int]] = {}
    for v in values:
        txn, j, n = (int(x) for x in v.split(":"))
        found.setdefault(txn, (set(), n))[0].add(j)
    return found


@pytest.mark.reliability
def test_transactions_end_whole_across_crash_cycles(
    cycles: int, tmp_path: Path, reliability_report: Any
) -> None:
    seed = int(os.environ.get("KMOCK_RELIABILITY_SEED", random.randrange(1 << 32)))
    rng = random.Random(seed)
    context = f"seed={seed}"
    broker = BrokerProcess(
        tmp_path / "data",
        tmp_path / "logs",
        overrides={"transaction.abort.timed.out.transaction.cleanup.interval.ms": 500},
    )
    workload: TxnWorkload | None = None
    try:
        broker.start()
        with KafkaClient(broker.bootstrap) as client:
            client.create_topic(TOPIC, num_partitions=PARTITIONS)
        workload = TxnWorkload(broker.bootstrap, rng.randrange(1 << 32)).start()
        for cycle in range(1, cycles + 1):
            target = workload.done() + rng.randint(1, 8)
            deadline = time.monotonic() + PROGRESS_TIMEOUT_S
            while workload.done() < target:
                assert workload.error is None, f"{context}: {workload.error!r}"
                assert time.monotonic() < deadline, f"{context} cycle {cycle}: no progress"
                workload.stopping.wait(0.01)
            broker.kill()
            broker.start()
            assert not broker.problems(), "\n".join(broker.problems())
        # One more transaction after the last restart, so that an open one is ended.
        target = workload.done() + 1
        deadline = time.monotonic() + PROGRESS_TIMEOUT_S
        while workload.done() < target:
            assert time.monotonic() < deadline, f"{context}: no progress after the last cycle"
            workload.stopping.wait(0.01)
        workload.stop()
        assert workload.error is None, f"{context}: {workload.error!r}"

        committed = by_transaction(read_all(broker.bootstrap, "read_committed"))
        everything = by_transaction(read_all(broker.bootstrap, "read_uncommitted"))
        for txn, (seen, n) in committed.items():
            assert seen == set(range(n)), f"{context}: transaction {txn} is partly visible"
            assert workload.outcomes.get(txn) != "abort", f"{context}: aborted {txn} is visible"
        for txn, outcome in workload.outcomes.items():
            n = workload.sizes[txn]
            if outcome == "commit":
                assert committed.get(txn, (set(), n))[0] == set(range(n)), (
                    f"{context}: acknowledged commit {txn} lost records"
                )
            assert everything.get(txn, (set(), n))[0] == set(range(n)), (
                f"{context}: acknowledged transaction {txn} is not whole in the log"
            )
        reliability_report(
            f"transactional crash cycles: {cycles} cycles, {len(workload.outcomes)} "
            f"transactions acknowledged, {len(committed)} committed visible ({context})"
        )
        assert not broker.problems(), "\n".join(broker.problems())
    finally:
        if workload is not None and not workload.stopping.is_set():
            workload.stopping.set()
        broker.stop()
