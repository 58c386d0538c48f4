"""The soak: real clients' everyday work against one broker process for a long time (30
minutes under `make reliability`; `--soak-minutes M`), checking that nothing accumulates.

Rounds, until the time is up; each round is a client restart:
  1. start the four clients of tests/reliability/workload.py: an idempotent confluent-kafka
     producer and a kafka-python producer (acks=all), a confluent-kafka and a kafka-python
     consumer in their own groups (join, sync, heartbeats, a commit after every poll);
  2. grant the producers ROUND_RECORDS records and wait until the broker acknowledged all of
     them and at least one commit;
  3. stop the clients (the consumers leave their groups, every connection closes), wait
     until the broker holds no client connection, and sample the broker process: resident
     memory and open descriptors (/proc/<pid>/status and /proc/<pid>/fd). A connection whose
     client end is still open in this process after the client was closed is the client's
     leak, not the broker's (kafka-python 3.0.12's close can fail inside its selector and
     keep a socket): it is counted and reported, left to the broker's idle timeout
     (connections.max.idle.ms, short here), and its descriptor is not counted as the
     broker's. A connection the broker keeps after its client end closed fails the soak.
Small segments, retention by size and frequent compaction of __consumer_offsets keep the
data on disk bounded, so that what the broker holds should not grow either.

Checked: after the warm-up (the first WARM_SHARE of the time) the resident memory never
rises more than RSS_GROWTH_LIMIT above its warm value; the descriptors that are not segment
files (each segment of a log keeps its file open, and their number goes up and down with
rolls, retention and compaction) end no more than FD_SLACK above their warm count; the
broker logs nothing at ERROR; no send failed and no client hit a fatal error.
"""

from __future__ import annotations

import contextlib
import functools
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from client import KafkaClient
from tests.broker.test_limits import tcp_sockets
from tests.reliability.process import BrokerProcess, poll_until
from tests.reliability.workload import Workload, wait_for_progress

TOPIC = "soak"
PARTITIONS = 3
ROUND_RECORDS = 2000
ROUND_TIMEOUT_S = 120.0
WARM_SHARE = 0.2
RSS_GROWTH_LIMIT = 40 * 1024 * 1024
FD_SLACK = 2  # a file open for a moment (compaction's output) when a sample is taken
BROKER_SETTINGS = {
    "log.segment.bytes": 256 * 1024,
    "log.retention.bytes": 1024 * 1024,
    "log.retention.check.interval.ms": 2000,
    "offsets.topic.segment.bytes": 64 * 1024,
    "log.cleaner.backoff.ms": 2000,
    # Connections a client leaked (see the module docstring) are closed by the broker soon.
    "connections.max.idle.ms": 60_000,
}
STALL_LOG_LINES = 40
LONG_RUN_ONLY = True  # `make reliability` only (tests/reliability/conftest.py)


@dataclass
class Sample:
    at_s: float
    rss: int
    fds: int
    segments: int  # segment files on disk: each holds a descriptor
    leaked: int = 0  # connections whose client end a client leaked: the client's descriptors

    @property
    def other_fds(self) -> int:
        return self.fds - self.segments - self.leaked


@dataclass
class SoakReport:
    minutes: float
    rounds: int = 0
    records: int = 0
    commits: int = 0
    failed_sends: int = 0
    client_errors: list[str] = field(default_factory=list)
    samples: list[Sample] = field(default_factory=list)
    client_leaks: int = 0  # rounds that ended with a connection a client left open

    def warm(self) -> Sample:
        warm_at = self.samples[-1].at_s * WARM_SHARE
        return next(s for s in self.samples if s.at_s >= warm_at)

    def summary(self) -> str:
        mib = 1024 * 1024
        first, warm, last = self.samples[0], self.warm(), self.samples[-1]
        after = [s for s in self.samples if s.at_s >= warm.at_s]
        return (
            f"soak {last.at_s / 60:.1f} min: {self.rounds} rounds (client restarts), "
            f"{self.records:,} records and {self.commits:,} commits acknowledged, "
            f"{self.failed_sends} failed sends, {len(self.client_errors)} client errors, "
            f"{self.client_leaks} rounds with a connection the client left open; "
            f"RSS {first.rss / mib:.0f} MiB after round 1, {warm.rss / mib:.0f} warm, max "
            f"{max(s.rss for s in after) / mib:.0f} after warm-up, {last.rss / mib:.0f} at "
            f"the end; descriptors {first.fds}, {warm.fds} warm, max "
            f"{max(s.fds for s in after)}, {last.fds} at the end, of which not segments "
            f"{first.other_fds}, {warm.other_fds} warm, max {max(s.other_fds for s in after)}, "
            f"{last.other_fds} at the end"
        )

    def sampled(self, n: int = 13) -> str:
        """About `n` samples spread over the run: minute, RSS, descriptors (not segments)."""
        step = max(1, (len(self.samples) - 1) // (n - 1))
        picked = self.samples[::step]
        if picked[-1] is not self.samples[-1]:
            picked.append(self.samples[-1])
        mib = 1024 * 1024
        return "soak samples (minute: RSS MiB, descriptors not segments): " + "; ".join(
            f"{s.at_s / 60:.1f}: {s.rss / mib:.1f} MiB, {s.other_fds}" for s in picked
        )


def _own_sockets() -> set[str]:
    """The inodes of the sockets this process (the clients' process) has open."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    return inodes


def _open_connections(port: int) -> tuple[set[int], int]:
    """The broker's (listening on `port`) connections that are not closed on its side:
    (the client ports of those whose client end this process still holds open: a client's
    leak, the number of those whose client end is closed: the broker's to close)."""
    sockets = tcp_sockets()
    own = _own_sockets()
    client_ends = {local: inode for local, remote, _, inode in sockets if remote == port}
    leaked: set[int] = set()
    kept = 0
    for local, remote, state, _ in sockets:
        if local != port or state not in ("01", "08"):  # TCP_ESTABLISHED, TCP_CLOSE_WAIT
            continue
        if state == "01" and client_ends.get(remote) in own:
            leaked.add(remote)
        else:
            kept += 1
    return leaked, kept


def _settled(port: int, leaks: set[int]) -> bool:
    """No connection left open but the clients' leaks already known."""
    leaked, kept = _open_connections(port)
    return kept == 0 and leaked <= leaks


def _open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def _segments(data_dir: Path) -> int:
    return sum(1 for _ in data_dir.glob("*/*.log"))


def _stalled(workload: Workload, broker: BrokerProcess) -> str:
    """What a stalled round shows: the clients' state and the broker's last log lines."""
    tail = "\n".join(broker.log_text().splitlines()[-STALL_LOG_LINES:])
    return f"{workload.describe()}\nthe broker's last {STALL_LOG_LINES} log lines:\n{tail}"


@pytest.mark.reliability
def test_soak_memory_and_descriptors_stay_flat(
    tmp_path: Path, soak_minutes: float, reliability_report: Any
) -> None:
    broker = BrokerProcess(tmp_path / "data", tmp_path / "logs", overrides=BROKER_SETTINGS)
    report = SoakReport(soak_minutes)
    broker.start()
    started = time.monotonic()
    leaks: set[int] = set()  # client ports of connections a client left open
    try:
        with KafkaClient(broker.bootstrap) as client:
            client.create_topic(TOPIC, num_partitions=PARTITIONS)
        while time.monotonic() - started < soak_minutes * 60 or report.rounds < 2:
            workload = Workload(broker.bootstrap, TOPIC, PARTITIONS).start()
            try:
                workload.budget.grant(ROUND_RECORDS)
                wait_for_progress(
                    workload.ledger,
                    ROUND_RECORDS,
                    1,
                    ROUND_TIMEOUT_S,
                    workload.check_alive,
                    functools.partial(_stalled, workload, broker),
                )
            finally:
                workload.stop()
            records, commits = workload.ledger.count()
            report.rounds += 1
            report.records += records
            report.commits += commits
            report.failed_sends += workload.ledger.failed_sends
            report.client_errors += workload.ledger.client_errors
            # Every connection closed, or only the clients' leaks left (reported).
            with contextlib.suppress(AssertionError):
                poll_until(functools.partial(_settled, broker.port, leaks), 30, "closes")
            leaked, kept = _open_connections(broker.port)
            assert kept == 0, (
                f"round {report.rounds}: the broker keeps {kept} connections their clients "
                f"closed 30 s ago"
            )
            report.client_leaks += bool(leaked - leaks)
            leaks |= leaked
            report.samples.append(
                Sample(
                    time.monotonic() - started,
                    broker.rss_bytes(),
                    _open_fds(broker.pid),
                    _segments(broker.data_dir),
                    leaked=len(leaked),
                )
            )
            problems = broker.problems()
            assert not problems, f"round {report.rounds}:\n" + "\n".join(problems[:10])
    finally:
        if broker.is_running():
            broker.kill()
        if report.samples:
            reliability_report(report.summary())
            reliability_report(report.sampled())
    warm = report.warm()
    after = [s for s in report.samples if s.at_s >= warm.at_s]
    peak = max(after, key=lambda s: s.rss)
    assert peak.rss - warm.rss <= RSS_GROWTH_LIMIT, (
        f"RSS grew from {warm.rss} to {peak.rss} after the warm-up: {report.summary()}"
    )
    assert report.samples[-1].other_fds <= warm.other_fds + FD_SLACK, (
        f"descriptors leak: {report.summary()}"
    )
    assert not report.client_errors, report.client_errors[:10]
    assert report.failed_sends == 0, report.summary()
