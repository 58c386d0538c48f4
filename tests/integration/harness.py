"""What every client's scenarios share: deadlines, CLI processes with their output kept for
the report, the expected records, and what the broker stored on disk.

Records are keyed `key-<i>` with value `<prefix>-<i>` (what sarama-check and kafkajs-check
produce too), so a consumer's output can be checked for loss, duplicates and order without
sharing state with the producer.
"""

from __future__ import annotations

import collections
import contextlib
import json
import logging
import os
import signal
import struct
import subprocess
import sys
import threading
import time
import traceback
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[2]
JS_DIR = ROOT / "tests" / "integration" / "js"
SARAMA_BIN = ROOT / "tests" / "integration" / "sarama" / "sarama-check"

CODECS = ("gzip", "snappy", "lz4", "zstd")
# RecordBatch attributes bits 0-2.
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# Headers every producer that can set them sends; the value is not ASCII on purpose.
HEADERS = [("trace", "t-1"), ("origin", "kmock-über")]

# Client-side timing for group scenarios: fast heartbeats so that a rebalance completes
# within a second or two, and the smallest session timeout the broker accepts by default.
SESSION_TIMEOUT_MS = 6000
HEARTBEAT_MS = 1000
POLL_S = 0.05
# kafka-python 3.0.12 can lose the end of a rebalance (a client race: Apache Kafka shows it
# too with group.initial.rebalance.delay.ms=0, kmock's default). When the leader rejoins
# because its metadata changed since it assigned (ConsumerCoordinator.need_rejoin:
# assignment_snapshot != metadata_snapshot), the new assignment makes the snapshots equal
# while the JoinGroup/SyncGroup task is still in flight; if poll()'s timer runs out just
# then, join_group_async returns, and the next poll finds need_rejoin() False and never
# collects the finished task: no assignment applied, heartbeats left disabled, the member is
# evicted at its session timeout and never rejoins. The usual trigger is a member that joins
# before its metadata has the topic (it assigns nothing, then rejoins). Group consumers
# therefore learn the topic's partitions before they subscribe (kafka_python_group_consumer)
# and poll with a timeout longer than a join round trip.
KAFKA_PYTHON_POLL_MS = 1000
# Every client's request timeout (ms), under kafka-python's and aiokafka's name.
REQUEST_TIMEOUT_MS = 10_000
# Group members commit automatically, every half second (kafka-python's names; confluent-kafka
# modules turn `_` into `.`).
MEMBER_AUTO_COMMIT: dict[str, Any] = {"enable_auto_commit": True, "auto_commit_interval_ms": 500}
# How long stopping a group member waits for it to close or exit.
MEMBER_STOP_S = 15.0
# librdkafka's own log: confluent-kafka clients log through it, so that its words appear in
# the captured log of a failed scenario.
RDKAFKA_LOG = logging.getLogger("confluent_kafka.librdkafka")

F = TypeVar("F", bound=Callable[..., Any])
C = TypeVar("C")


class ScenarioDeadline(Exception):
    """A scenario ran past its deadline (raised in the test's thread by the conftest guard)."""


def deadline(seconds: float) -> Callable[[F], F]:
    """The conftest guard fails the scenario once it has run `seconds`."""

    def tag(fn: F) -> F:
        fn.kmock_deadline = seconds  # type: ignore[attr-defined]
        return fn

    return tag


def unique(prefix: str) -> str:
    """A topic or group name no other scenario on a shared broker uses."""
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def key(i: int) -> str:
    return f"key-{i}"


def value(prefix: str, i: int) -> str:
    return f"{prefix}-{i}"


def encoded_headers(
    headers: Sequence[tuple[str, str]] = HEADERS,
) -> list[tuple[str, bytes]]:
    """`headers` (by default HEADERS) with their values encoded, as producers send them."""
    return [(k, v.encode()) for k, v in headers]


def kafka_python_consumer_options(bootstrap: str, client_id: str, **kw: Any) -> dict[str, Any]:
    """A consumer's options under kafka-python's names (aiokafka takes the same): it reads
    from the start, commits by hand, waits at most 100 ms for a fetch, and has the session
    timeout and heartbeat interval above; `kw` adds or overrides."""
    return {
        "bootstrap_servers": bootstrap,
        "client_id": client_id,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "fetch_max_wait_ms": 100,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_MS,
        "request_timeout_ms": REQUEST_TIMEOUT_MS,
        **kw,
    }


def kafka_python_group_consumer(topic: str, **options: Any) -> Any:
    """A kafka-python KafkaConsumer subscribed to `topic` (which must exist) that has the
    topic's partitions in its metadata before it joins its group (see KAFKA_PYTHON_POLL_MS).
    A broker that is restarting meanwhile (the crash cycles) is asked again."""
    from kafka import KafkaConsumer
    from kafka.errors import KafkaError as KpError

    consumer = KafkaConsumer(**options)

    def partitions() -> Any:
        try:
            return consumer.partitions_for_topic(topic)
        except KpError:
            return None

    try:
        wait_until(partitions, 30, f"{topic} in metadata")
    except BaseException:
        consumer.close()
        raise
    consumer.subscribe([topic])
    return consumer


# A kafka-python group member in a process of its own, as kafka_python_group_consumer makes
# one: `python -c KAFKA_PYTHON_MEMBER OPTIONS_JSON TOPIC`. It learns the topic's partitions
# before it subscribes and polls for KAFKA_PYTHON_POLL_MS (the client race above), prints
# {"event": "assigned", "partitions": [...]} at each change of its assignment, and on SIGTERM
# closes (LeaveGroup) and prints {"event": "closed"}.
KAFKA_PYTHON_MEMBER = f"POLL_MS = {KAFKA_PYTHON_POLL_MS}\n" + (
    r"""
import json, signal, sys, time
from kafka import KafkaConsumer
options, topic = json.loads(sys.argv[1]), sys.argv[2]
stop = []
signal.signal(signal.SIGTERM, lambda *a: stop.append(1))
c = KafkaConsumer(**options)
deadline = time.monotonic() + 30
# Each call waits for a metadata answer from the broker (kafka-python's blocking fetch).
while not c.partitions_for_topic(topic):
    if time.monotonic() > deadline:
        sys.exit(f"{topic} is not in the metadata after 30 s")
c.subscribe([topic])
last = None
while not stop:
    c.poll(timeout_ms=POLL_MS)
    now = sorted(tp.partition for tp in c.assignment())
    if now != last:
        print(json.dumps({"event": "assigned", "partitions": now}), flush=True)
        last = now
c.close()
print(json.dumps({"event": "closed"}), flush=True)
"""
)


def kafka_python_rec(r: Any) -> Rec:
    """A kafka-python ConsumerRecord (aiokafka's has the same fields) as a Rec."""
    return Rec(
        r.partition,
        r.offset,
        r.key.decode() if r.key is not None else None,
        r.value.decode() if r.value is not None else None,
        tuple((k, v.decode()) for k, v in r.headers or ()),
    )


def wait_until(
    predicate: Callable[[], Any],
    timeout: float,
    what: str,
    detail: Callable[[], str] | None = None,
    *,
    poll_s: float = POLL_S,
) -> Any:
    """Poll `predicate` every `poll_s` until it returns something truthy, for at most `timeout`
    seconds; on timeout the error names `what` and adds `detail()`."""
    deadline = time.monotonic() + timeout
    tick = threading.Event()
    while True:
        result = predicate()
        if result:
            return result
        if time.monotonic() >= deadline:
            extra = f"\n{detail()}" if detail else ""
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{extra}")
        tick.wait(poll_s)


def run_in_thread(fn: Callable[[], Any], timeout: float, what: str) -> Any:
    """Run `fn` in a daemon thread and wait at most `timeout` s for it (asyncio clients run
    their own loop in there). On timeout the thread's stack is part of the error."""
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["result"] = fn()
        except BaseException as e:  # re-raised in the caller's thread below
            box["error"] = e

    t = threading.Thread(target=target, name=f"scenario-{what}", daemon=True)
    t.start()
    t.join(timeout)
    if t.is_alive():
        frame = sys._current_frames().get(t.ident or -1)
        stack = "".join(traceback.format_stack(frame)) if frame else "(no stack)"
        raise AssertionError(f"{what}: still running after {timeout:g} s; it was at:\n{stack}")
    if "error" in box:
        raise box["error"]
    return box.get("result")


# --- group members --------------------------------------------------------------------


class GroupMember(ABC):
    """One group member: a consumer that lives and dies in a thread of its own (kafka-python
    and aiokafka consumers must not be used from two threads), polling until `stop()`.

    A client's subclass opens its consumer as `self.c` in `_open`, subscribed to `topic` in
    `group`, and turns a poll into records in `_poll`; both run in the member's thread. What
    they raise is reported by `assignment()` and `stop()`. A subclass that has attributes of
    its own sets them before calling `GroupMember.__init__`, which starts the thread.
    """

    STOP_S = MEMBER_STOP_S  # how long stop() waits for the consumer to close

    def __init__(self, bootstrap: str, topic: str, group: str, name: str) -> None:
        self.bootstrap, self.topic, self.group, self.name = bootstrap, topic, group, name
        self.c: Any = None
        self.closing_at: float | None = None  # when the consumer's close began
        self.closed_at: float | None = None  # when it returned
        self._assignment: frozenset[int] | None = None
        self._records: list[Rec] = []
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(
            target=self._main, name=f"{type(self).__name__}-{name}", daemon=True
        )
        self._thread.start()

    # -- what each client implements; all run in the member's thread --

    @abstractmethod
    def _open(self) -> None: ...

    @abstractmethod
    def _poll(self) -> list[Rec]: ...

    def _assigned(self) -> frozenset[int]:
        return frozenset(tp.partition for tp in self.c.assignment())

    def _close(self) -> None:
        self.c.close()

    # -- the member's thread --

    def _main(self) -> None:
        try:
            self._open()
            try:
                while not self._stop.is_set():
                    self._step()
            finally:
                self.closing_at = time.monotonic()
                self._close()
                self.closed_at = time.monotonic()
        except BaseException as e:  # reported through assignment()/stop()
            self._error = e

    def _step(self) -> list[Rec]:
        """One poll; returns what it consumed."""
        records = self._poll()
        with self._lock:
            self._records.extend(records)
            self._assignment = self._assigned()
        return records

    # -- any thread --

    def assignment(self) -> frozenset[int] | None:
        self._raise()
        with self._lock:
            return self._assignment

    def records(self) -> list[Rec]:
        with self._lock:
            return list(self._records)

    def stop(self, timeout: float | None = None) -> None:
        timeout = self.STOP_S if timeout is None else timeout
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"member {self.name} did not close in {timeout:g} s"
        self._raise()

    def describe(self) -> str:
        return (
            f"member {self.name}: assignment {sorted(self._assignment or ())}, "
            f"{len(self._records)} records, error {self._error!r}"
        )

    def _raise(self) -> None:
        if self._error is not None:
            raise AssertionError(f"member {self.name} failed: {self._error!r}") from self._error


class ProcMember(ABC):
    """One group member that is a client process (kcat, kafkajs-check, sarama-check) started
    by the subclass as `self.proc`: what it was assigned and consumed is read from its output.
    An exit before `stop()` fails the member."""

    def __init__(self, name: str, proc: Proc) -> None:
        self.name, self.proc = name, proc

    @abstractmethod
    def _assigned(self) -> frozenset[int] | None:
        """The last assignment the process printed, None before the first."""

    def records(self) -> list[Rec]:
        """The records the process consumed: its "consumed" events, as the check programs
        (kafkajs-check, sarama-check) print them."""
        return consumed(self.proc)

    def _leave(self) -> None:
        """Ask the process to leave the group and exit: SIGTERM, unless the client says else."""
        if self.proc.popen.poll() is None:
            self.proc.popen.send_signal(signal.SIGTERM)

    def assignment(self) -> frozenset[int] | None:
        current = self._assigned()
        if self.proc.popen.poll() is not None:
            raise AssertionError(
                f"member {self.name} exited: {self.proc.error_summary()}\n{self.proc.output()}"
            )
        return current

    def stop(self, timeout: float = MEMBER_STOP_S) -> None:
        self._leave()
        self.proc.check(timeout)

    def describe(self) -> str:
        return self.proc.output()


# --- what is on disk --------------------------------------------------------------------

# RecordBatch v2 header, up to the record count (61 bytes).
_BATCH = struct.Struct(">qiiBihiqqqhii")


@dataclass(frozen=True)
class BatchHeader:
    partition: int
    base_offset: int
    attributes: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def codec(self) -> str:
        return {v: k for k, v in CODEC_IDS.items()}.get(self.attributes & 7, "?")


def batches_on_disk(data_dir: Path, topic: str) -> list[BatchHeader]:
    """The batch headers of every partition of `topic`, read from the segment files.

    This is what the client actually sent (the broker stores batches as they arrive),
    so it tells whether a client really compressed, or really produced idempotently.
    """
    out = []
    for pdir in sorted(Path(data_dir).glob(f"{topic}-*")):
        part = pdir.name[len(topic) + 1 :]
        if not part.isdigit():
            continue
        for seg in sorted(pdir.glob("*.log")):
            data = seg.read_bytes()
            pos = 0
            while pos + _BATCH.size <= len(data):
                (
                    base_offset,
                    length,
                    _epoch,
                    magic,
                    _crc,
                    attributes,
                    _lod,
                    _bts,
                    _mts,
                    producer_id,
                    producer_epoch,
                    base_sequence,
                    count,
                ) = _BATCH.unpack_from(data, pos)
                if magic != 2 or length <= 0:
                    break
                out.append(
                    BatchHeader(
                        int(part),
                        base_offset,
                        attributes,
                        producer_id,
                        producer_epoch,
                        base_sequence,
                        count,
                    )
                )
                pos += 12 + length
    return out


# --- records ----------------------------------------------------------------------------


@dataclass(frozen=True)
class Rec:
    """One consumed record, whichever client read it."""

    partition: int
    offset: int
    key: str | None
    value: str | None
    headers: tuple[tuple[str, str], ...] = ()


def confluent_rec(m: Any) -> Rec:
    """A confluent-kafka Message as a Rec."""
    k, v = m.key(), m.value()
    return Rec(
        m.partition(),
        m.offset(),
        k.decode() if k is not None else None,
        v.decode() if v is not None else None,
        tuple((hk, hv.decode()) for hk, hv in m.headers() or ()),
    )


def confluent_consume(c: Any, n: int, timeout: float = 0.1) -> list[Rec]:
    """At most `n` records from one `consume()` of a confluent-kafka Consumer `c` waiting at
    most `timeout` s; an error event raises KafkaException."""
    from confluent_kafka import KafkaException

    out = []
    for m in c.consume(num_messages=n, timeout=timeout):
        if m.error():
            raise KafkaException(m.error())
        out.append(confluent_rec(m))
    return out


def confluent_conf(bootstrap: str, client_id: str, **kw: Any) -> dict[str, Any]:
    """A confluent-kafka client's configuration: it logs through RDKAFKA_LOG and waits at
    most 10 s for an answer; `kw` (under librdkafka's names) adds or overrides."""
    return {
        "bootstrap.servers": bootstrap,
        "client.id": client_id,
        "logger": RDKAFKA_LOG,
        "socket.timeout.ms": 10000,
        **kw,
    }


def confluent_send(
    p: Any,
    topic: str,
    prefix: str,
    indexes: Iterable[int],
    on_delivery: Callable[[Any, Any], None],
    *,
    headers: Sequence[tuple[str, str]] | None = HEADERS,
) -> None:
    """Hand records `indexes` of `prefix` (keyed, with `headers`) to a confluent-kafka
    Producer `p`, serving its delivery reports as it goes; the caller flushes."""
    hdrs = None if headers is None else encoded_headers(headers)
    for i in indexes:
        p.produce(
            topic,
            key=key(i).encode(),
            value=value(prefix, i).encode(),
            headers=hdrs,
            on_delivery=on_delivery,
        )
        p.poll(0)


def check_records(
    got: Iterable[Rec],
    prefix: str,
    n: int,
    *,
    start: int = 0,
    exactly_once: bool = True,
    headers: list[tuple[str, str]] | None = None,
    contiguous_from_zero: bool = False,
) -> None:
    """`got` holds records `start`..`n-1` of `prefix`, each key matching its value, in
    produce order within each partition, (when `exactly_once`) with no duplicates, and
    (when given) carrying `headers`."""
    got = list(got)
    want = {value(prefix, i) for i in range(start, n)}
    values = [r.value for r in got]
    missing = sorted(want - set(values), key=lambda v: int(str(v).rsplit("-", 1)[1]))
    extra = sorted({str(v) for v in values} - want)
    assert not missing, f"{len(missing)} records never consumed, e.g. {missing[:5]}"
    assert not extra, f"unexpected records consumed: {extra[:5]}"
    if exactly_once:
        dups = sorted(v for v, n in collections.Counter(values).items() if n > 1)
        assert not dups, f"records consumed twice: {dups[:5]}"
    for r in got:
        i = int(str(r.value).rsplit("-", 1)[1])
        assert r.key == key(i), f"record {r.value!r} has key {r.key!r}, not {key(i)!r}"
        if headers is not None:
            assert list(r.headers) == headers, f"record {r.value!r} has headers {r.headers!r}"
    by_partition: dict[int, list[Rec]] = {}
    for r in got:
        by_partition.setdefault(r.partition, []).append(r)
    for p, recs in by_partition.items():
        seen = sorted({(r.offset, r.value) for r in recs})
        indexes = [int(str(v).rsplit("-", 1)[1]) for _, v in seen]
        assert indexes == sorted(indexes), (
            f"partition {p}: records out of produce order: {indexes[:20]}"
        )
        if contiguous_from_zero:
            offsets = [o for o, _ in seen]
            assert offsets == list(range(len(offsets))), (
                f"partition {p}: offsets not contiguous from 0: {offsets[:20]}"
            )


def check_compressed(data_dir: Path, topic: str, codec: str) -> None:
    """The client's batches reached the log compressed with `codec`. Some clients (kafka-python)
    send a batch uncompressed when compressing would not make it smaller, so uncompressed
    batches are allowed beside compressed ones; other codecs are not."""
    batches = batches_on_disk(data_dir, topic)
    assert batches, f"no batches of {topic} on disk"
    codecs = {b.codec for b in batches}
    assert codec in codecs, f"batches on disk use {sorted(codecs)}, not {codec}"
    assert codecs <= {codec, "none"}, f"batches on disk use {sorted(codecs)}, not {codec}"


def check_idempotent(data_dir: Path, topic: str, n: int) -> None:
    """Every batch carries one producer id and per-partition sequences without gaps."""
    batches = batches_on_disk(data_dir, topic)
    assert batches, f"no batches of {topic} on disk"
    pids = {b.producer_id for b in batches}
    assert len(pids) == 1, f"producer ids on disk: {sorted(pids)}"
    assert min(pids) >= 0, f"producer ids on disk: {sorted(pids)}"
    by_partition: dict[int, list[BatchHeader]] = {}
    for b in batches:
        by_partition.setdefault(b.partition, []).append(b)
    for p, bs in by_partition.items():
        seq = 0
        for b in bs:
            assert b.base_sequence == seq, (
                f"partition {p}: batch at offset {b.base_offset} has base_sequence "
                f"{b.base_sequence}, expected {seq}"
            )
            seq += b.records_count
    assert sum(b.records_count for b in batches) == n, "records on disk != records produced"


class LogLines(logging.Handler):
    """Keeps the message of every log record at `level` or above, for a test to search (a
    client's own log, such as RDKAFKA_LOG)."""

    def __init__(self, level: int = logging.DEBUG) -> None:
        super().__init__(level)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


# --- CLI clients ------------------------------------------------------------------------


def tail(text: str, lines: int = 60) -> str:
    parts = text.rstrip().splitlines()
    cut = len(parts) - lines
    body = "\n".join(parts[-lines:])
    return (f"[{cut} earlier lines cut]\n" if cut > 0 else "") + body


@dataclass
class Proc:
    """A client process whose stdout (JSON lines where it prints them) and stderr are
    collected by two reader threads, so that a test can wait on what it printed."""

    args: list[str]
    name: str
    cwd: Path | None = None
    stdin_data: bytes | None = None
    keep_stdin_open: bool = False
    popen: subprocess.Popen[bytes] = field(init=False)
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.lock = threading.Lock()
        self.popen = subprocess.Popen(
            self.args,
            cwd=self.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        self._readers = [
            threading.Thread(target=self._read, args=(self.popen.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._read, args=(self.popen.stderr, self.stderr), daemon=True),
        ]
        for t in self._readers:
            t.start()
        assert self.popen.stdin is not None
        if self.stdin_data is not None:
            self.popen.stdin.write(self.stdin_data)
            self.popen.stdin.flush()
        if not self.keep_stdin_open:
            self.popen.stdin.close()

    def _read(self, stream: Any, into: list[str]) -> None:
        for raw in iter(stream.readline, b""):
            with self.lock:
                into.append(raw.decode("utf-8", "replace").rstrip("\n"))
        stream.close()

    def lines(self) -> list[str]:
        with self.lock:
            return list(self.stdout)

    def err_lines(self) -> list[str]:
        with self.lock:
            return list(self.stderr)

    def events(self) -> list[dict[str, Any]]:
        out = []
        for line in self.lines():
            with contextlib.suppress(ValueError):
                obj = json.loads(line)
                if isinstance(obj, dict):
                    out.append(obj)
        return out

    def first(self, event: str) -> dict[str, Any]:
        """The first {"event": `event`} line it printed; fails with its output if none."""
        found = [e for e in self.events() if e.get("event") == event]
        assert found, f"{self.name} printed no {event!r} line\n{self.output()}"
        return found[0]

    def error_summary(self) -> str:
        """The client's own last word on what went wrong: its last {"event": "error"} line,
        else its last line on stderr."""
        errors = [e for e in self.events() if e.get("event") == "error"]
        if errors:
            return str(errors[-1].get("error", errors[-1])).splitlines()[0][:300]
        err = [ln for ln in self.err_lines() if ln.strip()]
        return err[-1][:300] if err else "(no error output)"

    def output(self) -> str:
        return (
            f"--- {self.name}: {' '.join(self.args)}\n"
            f"--- exit status: {self.popen.poll()}\n"
            f"--- stdout:\n{tail(chr(10).join(self.lines()))}\n"
            f"--- stderr:\n{tail(chr(10).join(self.err_lines()))}"
        )

    def close_stdin(self) -> None:
        if self.popen.stdin and not self.popen.stdin.closed:
            with contextlib.suppress(BrokenPipeError):
                self.popen.stdin.close()

    def wait(self, timeout: float) -> int:
        try:
            rc = self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError(
                f"{self.name} still running after {timeout:g} s: {self.error_summary()}\n"
                f"{self.output()}"
            ) from None
        for t in self._readers:
            t.join(5)
        return rc

    def check(self, timeout: float) -> Proc:
        """Wait for exit; fail with the client's own output unless it exited 0."""
        rc = self.wait(timeout)
        assert rc == 0, (
            f"{self.name} exited with status {rc}: {self.error_summary()}\n{self.output()}"
        )
        return self

    def kill(self) -> None:
        if self.popen.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.popen.pid, 9)
            self.popen.wait(10)


def consumed(p: Proc) -> list[Rec]:
    """The records a check program (kafkajs-check, sarama-check) printed as "consumed"
    events."""
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


@contextlib.contextmanager
def subscribed(consumer: C, topic: str) -> Iterator[C]:
    """A group consumer (kafka-python's or confluent-kafka's) subscribed to `topic`, closed
    (leaving its group) on exit."""
    consumer.subscribe([topic])  # type: ignore[attr-defined]
    try:
        yield consumer
    finally:
        consumer.close()  # type: ignore[attr-defined]


@contextlib.contextmanager
def explain(*procs: Proc) -> Iterator[None]:
    """Append the processes' output to any assertion raised inside, and kill them on exit."""
    try:
        yield
    except AssertionError as e:
        outputs = "\n".join(p.output() for p in procs if p.output() not in str(e))
        raise AssertionError(f"{e}\n{outputs}" if outputs else str(e)) from None
    finally:
        for p in procs:
            p.kill()


def run(
    args: list[str],
    name: str,
    timeout: float,
    *,
    stdin: bytes | None = None,
    cwd: Path | None = None,
) -> Proc:
    """Run a client command to completion; fail with its output unless it exits 0."""
    p = Proc(args, name, cwd=cwd, stdin_data=stdin)
    try:
        return p.check(timeout)
    finally:
        p.kill()
