"""Real clients that keep producing and committing while the broker is killed and restarted.

Each client runs in its own thread for the whole test and reconnects by itself after every
restart (the broker keeps its port). What the broker acknowledged is written to a `Ledger`:

  * producers (acks=all): the (topic, partition, offset, value) of every record whose
    delivery succeeded, from the client's own delivery report;
  * consumers (manual, synchronous commits): the (group, topic, partition, offset) of every
    commit the broker answered without error.

Values are unique (`<producer>-<n>`), so a record read back can be matched with its
acknowledgement and duplicates can be counted per producer.

The producers send only what the test grants them (`Budget`), a random amount per cycle.

  confluent-kafka (librdkafka) producer   idempotent, acks=all     duplicates must be 0
  kafka-python producer                   acks=all, retries        duplicates allowed
  confluent-kafka consumer, group A       commit(asynchronous=False) after each poll
  kafka-python consumer, group B          commit(offsets) after each poll
"""

from __future__ import annotations

import threading
import time
import traceback
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tests.integration.harness import KAFKA_PYTHON_POLL_MS, kafka_python_group_consumer

PRODUCERS = ("ck", "kp")  # value prefixes: confluent-kafka, kafka-python
IDEMPOTENT = ("ck",)
MAX_UNACKED = 500  # records a producer keeps in flight before it waits for reports
WAIT_S = 0.05  # how long a client thread waits for a report or a grant before looking again
# kafka-python clients (producer and consumer) find the broker again within ~200 ms of a
# restart, and notice a lost one within 5 s.
RECONNECT_QUICKLY = {
    "request_timeout_ms": 5000,
    "reconnect_backoff_ms": 20,
    "reconnect_backoff_max_ms": 200,
    "retry_backoff_ms": 20,
    "metadata_max_age_ms": 1000,
}


class Budget:
    """Records the producers may still send, granted by the test cycle by cycle: it keeps
    the data (and so the time each verification takes) in proportion to the cycles run,
    however fast the producers are."""

    def __init__(self) -> None:
        self._left = 0
        self._cond = threading.Condition()

    def grant(self, n: int) -> None:
        with self._cond:
            self._left += n
            self._cond.notify_all()

    def take(self) -> bool:
        """One record's worth, if granted within WAIT_S."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._left > 0, WAIT_S):
                return False
            self._left -= 1
            return True


@dataclass(frozen=True, slots=True)
class AckedRecord:
    topic: str
    partition: int
    offset: int
    value: str


@dataclass(frozen=True, slots=True)
class AckedCommit:
    group: str
    topic: str
    partition: int
    offset: int


@dataclass
class Ledger:
    """Everything the broker acknowledged, in order, shared by the client threads."""

    records: list[AckedRecord] = field(default_factory=list)
    commits: list[AckedCommit] = field(default_factory=list)
    failed_sends: int = 0
    failed_commits: int = 0
    client_errors: list[str] = field(default_factory=list)  # fatal client states, reported
    lock: threading.Lock = field(default_factory=threading.Lock)

    def ack(self, record: AckedRecord) -> None:
        with self.lock:
            self.records.append(record)

    def commit(self, commit: AckedCommit) -> None:
        with self.lock:
            self.commits.append(commit)

    def describe(self) -> str:
        """Acknowledged records per producer, commits per group, failures: where a round
        that stalls stopped."""
        with self.lock:
            by_producer = Counter(r.value.split("-", 1)[0] for r in self.records)
            by_group = Counter(c.group for c in self.commits)
            return (
                f"records by producer {dict(by_producer)}, commits by group {dict(by_group)}, "
                f"failed sends {self.failed_sends}, failed commits {self.failed_commits}, "
                f"client errors {self.client_errors[-3:]}"
            )

    def count(self) -> tuple[int, int]:
        with self.lock:
            return len(self.records), len(self.commits)

    def snapshot(self) -> tuple[list[AckedRecord], list[AckedCommit]]:
        with self.lock:
            return list(self.records), list(self.commits)

    def note(self, what: str) -> None:
        with self.lock:
            self.client_errors.append(what)

    def send_failed(self) -> None:
        with self.lock:
            self.failed_sends += 1

    def commit_failed(self) -> None:
        with self.lock:
            self.failed_commits += 1


class _Worker(ABC):
    """A client loop in a daemon thread; `stop()` asks it to finish and waits."""

    def __init__(self, name: str, ledger: Ledger, stopping: threading.Event) -> None:
        self.name = name
        self.ledger = ledger
        self.stopping = stopping
        self.crash: str | None = None
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def _run(self) -> None:
        try:
            self.run()
        except Exception:
            self.crash = traceback.format_exc()

    @abstractmethod
    def run(self) -> None: ...

    def join(self, timeout: float) -> None:
        self.thread.join(timeout)
        if self.thread.is_alive():
            raise AssertionError(f"client {self.name} did not stop within {timeout:g} s")
        if self.crash:
            raise AssertionError(f"client {self.name} crashed:\n{self.crash}")


# --- producers ---------------------------------------------------------------------------


class _ProducerWorker(_Worker):
    """A producer sending what `budget` grants, record n to partition n % `partitions`."""

    NAME = ""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        ledger: Ledger,
        stopping: threading.Event,
        budget: Budget,
        *,
        partitions: int,
    ) -> None:
        super().__init__(self.NAME, ledger, stopping)
        self.budget = budget
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.sent = 0


class ConfluentProducer(_ProducerWorker):
    NAME = "ck-producer"
    fatal: str | None = None  # librdkafka's last fatal error, until the producer is replaced

    def _producer(self) -> Any:
        from confluent_kafka import Producer

        def on_error(err: Any) -> None:
            if err.fatal():
                self.fatal = str(err)

        return Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "enable.idempotence": True,
                "acks": "all",
                "linger.ms": 2,
                "message.timeout.ms": 120000,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                "retry.backoff.ms": 20,
                "retry.backoff.max.ms": 200,
                "socket.connection.setup.timeout.ms": 5000,
                "topic.metadata.refresh.interval.ms": 1000,
                "error_cb": on_error,
            }
        )

    def run(self) -> None:
        producer = self._producer()

        def report(err: Any, msg: Any) -> None:
            if err is None:
                self.ledger.ack(
                    AckedRecord(msg.topic(), msg.partition(), msg.offset(), msg.value().decode())
                )
            else:
                self.ledger.send_failed()

        while not self.stopping.is_set():
            if self.fatal:
                # An idempotent producer that hit a fatal error cannot go on (librdkafka
                # fails everything after it); the broker caused it, so it is reported.
                self.ledger.note(f"ck-producer fatal error: {self.fatal}")
                self.fatal = None
                producer.flush(10)
                producer = self._producer()
            if len(producer) >= MAX_UNACKED or not self.budget.take():
                producer.poll(WAIT_S if len(producer) >= MAX_UNACKED else 0)
                continue
            value = f"ck-{self.sent}"
            try:
                producer.produce(
                    self.topic,
                    value=value.encode(),
                    key=str(self.sent).encode(),
                    partition=self.sent % self.partitions,
                    on_delivery=report,
                )
            except BufferError:  # pragma: no cover - MAX_UNACKED keeps the queue short
                self.budget.grant(1)
                producer.poll(WAIT_S)
                continue
            self.sent += 1
            producer.poll(0)
        producer.flush(60)


class KafkaPythonProducer(_ProducerWorker):
    NAME = "kp-producer"

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._in_flight = 0
        self._lock = threading.Lock()

    def run(self) -> None:
        from kafka import KafkaProducer
        from kafka.errors import KafkaError as KpError

        producer = KafkaProducer(
            bootstrap_servers=self.bootstrap,
            acks="all",
            retries=1_000_000,
            linger_ms=2,
            delivery_timeout_ms=120000,
            max_in_flight_requests_per_connection=5,
            enable_idempotence=False,
            **RECONNECT_QUICKLY,
        )
        tick = threading.Event()
        try:
            while not self.stopping.is_set():
                with self._lock:
                    busy = self._in_flight >= MAX_UNACKED
                if busy:
                    tick.wait(WAIT_S)
                    continue
                if not self.budget.take():
                    continue
                value = f"kp-{self.sent}"
                partition = self.sent % self.partitions
                self.sent += 1
                with self._lock:
                    self._in_flight += 1
                try:
                    future = producer.send(
                        self.topic,
                        value=value.encode(),
                        key=str(self.sent).encode(),
                        partition=partition,
                    )
                except KpError:  # no metadata while the broker is down: not sent
                    with self._lock:
                        self._in_flight -= 1
                    self.budget.grant(1)
                    continue
                future.add_callback(self._acked, value)
                future.add_errback(self._failed)
            producer.flush(timeout=60)
        finally:
            producer.close(timeout=10)

    def _acked(self, value: str, metadata: Any) -> None:
        with self._lock:
            self._in_flight -= 1
        self.ledger.ack(AckedRecord(metadata.topic, metadata.partition, metadata.offset, value))

    def _failed(self, _exc: Any) -> None:
        with self._lock:
            self._in_flight -= 1
        self.ledger.send_failed()


# --- committing consumers ----------------------------------------------------------------


class _ConsumerWorker(_Worker):
    """A consumer of `topic` in `group` that commits what each poll returned."""

    NAME = ""

    def __init__(
        self, bootstrap: str, topic: str, group: str, ledger: Ledger, stopping: threading.Event
    ) -> None:
        super().__init__(self.NAME, ledger, stopping)
        self.bootstrap = bootstrap
        self.topic = topic
        self.group = group
        self.consumed = 0


class ConfluentConsumer(_ConsumerWorker):
    NAME = "ck-consumer"

    def run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": self.group,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 10000,
                "heartbeat.interval.ms": 500,
                "reconnect.backoff.ms": 20,
                "reconnect.backoff.max.ms": 200,
                "retry.backoff.ms": 20,
                "topic.metadata.refresh.interval.ms": 1000,
            }
        )
        consumer.subscribe([self.topic])
        try:
            while not self.stopping.is_set():
                messages = consumer.consume(num_messages=200, timeout=0.1)
                positions: dict[int, int] = {}
                for m in messages:
                    if m.error() is None:
                        positions[m.partition()] = m.offset() + 1
                        self.consumed += 1
                if not positions:
                    continue
                offsets = [TopicPartition(self.topic, p, o) for p, o in sorted(positions.items())]
                try:
                    result = consumer.commit(offsets=offsets, asynchronous=False)
                except KafkaException:
                    self.ledger.commit_failed()
                    continue
                for tp in result or []:
                    if tp.error is None:
                        self.ledger.commit(
                            AckedCommit(self.group, tp.topic, tp.partition, tp.offset)
                        )
                    else:
                        self.ledger.commit_failed()
        finally:
            consumer.close()


class KafkaPythonConsumer(_ConsumerWorker):
    NAME = "kp-consumer"

    def run(self) -> None:
        from kafka import OffsetAndMetadata
        from kafka.errors import KafkaError as KpError

        # It learns the topic's partitions before it joins: see KAFKA_PYTHON_POLL_MS.
        consumer = kafka_python_group_consumer(
            self.topic,
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=10000,
            heartbeat_interval_ms=500,
            **RECONNECT_QUICKLY,
        )
        try:
            while not self.stopping.is_set():
                try:
                    batches = consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS, max_records=200)
                except KpError:  # kafka-python raises connection errors while it is down
                    continue
                positions: dict[Any, int] = {}
                for tp, records in batches.items():
                    for r in records:
                        positions[tp] = r.offset + 1
                        self.consumed += 1
                if not positions:
                    continue
                offsets = {tp: OffsetAndMetadata(o, "", -1) for tp, o in positions.items()}
                try:
                    consumer.commit(offsets, timeout_ms=5000)
                except KpError:
                    self.ledger.commit_failed()
                    continue
                for tp, o in positions.items():
                    self.ledger.commit(AckedCommit(self.group, tp.topic, tp.partition, o))
        finally:
            consumer.close(autocommit=False, timeout_ms=5000)


@dataclass
class Workload:
    """The four clients, started together and stopped together."""

    bootstrap: str
    topic: str
    partitions: int
    ledger: Ledger = field(default_factory=Ledger)
    stopping: threading.Event = field(default_factory=threading.Event)
    budget: Budget = field(default_factory=Budget)
    workers: list[_Worker] = field(default_factory=list)

    GROUPS: tuple[str, str] = ("reliability-ck", "reliability-kp")

    def start(self) -> Workload:
        args = (self.bootstrap, self.topic)
        self.workers = [
            ConfluentProducer(
                *args, self.ledger, self.stopping, self.budget, partitions=self.partitions
            ),
            KafkaPythonProducer(
                *args, self.ledger, self.stopping, self.budget, partitions=self.partitions
            ),
            ConfluentConsumer(*args, self.GROUPS[0], self.ledger, self.stopping),
            KafkaPythonConsumer(*args, self.GROUPS[1], self.ledger, self.stopping),
        ]
        for w in self.workers:
            w.start()
        return self

    def describe(self) -> str:
        """Each client: alive or not, and what a producer sent (kafka-python: in flight)."""
        parts = []
        for w in self.workers:
            state = "running" if w.thread.is_alive() else "stopped"
            if isinstance(w, _ProducerWorker):
                state += f", sent {w.sent}"
            if isinstance(w, KafkaPythonProducer):
                state += f", in flight {w._in_flight}"
            parts.append(f"{w.name}: {state}")
        return "; ".join(parts)

    def check_alive(self) -> None:
        for w in self.workers:
            if w.crash:
                raise AssertionError(f"client {w.name} crashed:\n{w.crash}")

    def stop(self, timeout: float = 120.0) -> None:
        self.stopping.set()
        deadline = time.monotonic() + timeout
        for w in self.workers:
            w.join(max(1.0, deadline - time.monotonic()))


def wait_for_progress(
    ledger: Ledger,
    records: int,
    commits: int,
    timeout: float,
    alive: Callable[[], None],
    detail: Callable[[], str] | None = None,
) -> None:
    """Poll until the ledger holds `records` more acknowledged records and `commits` more
    acknowledged commits than now (the clients are working against the live broker). On
    timeout the error says how far each side got, and adds `detail()` (the clients' state)."""
    from tests.reliability.process import poll_until

    r0, c0 = ledger.count()

    def done() -> bool:
        alive()
        r, c = ledger.count()
        return r - r0 >= records and c - c0 >= commits

    def reached() -> str:
        r, c = ledger.count()
        return (
            f"reached {r - r0} acknowledged records and {c - c0} commits; "
            f"{ledger.describe()}" + (f"\n{detail()}" if detail else "")
        )

    poll_until(done, timeout, f"{records} acknowledged records and {commits} commits", reached)
