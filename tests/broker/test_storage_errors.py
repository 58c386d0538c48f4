"""A disk that fills up, turns read-only or fails an fsync: Produce and OffsetCommit answer
an error instead of an acknowledgement, nothing acknowledged is lost, and the broker takes
writes again once the disk does (after a failed fsync: once it is restarted, as Kafka
takes a log dir offline until then).

Two ways to make the disk fail:
  * a real one: a small tmpfs mounted under tmp_path (needs root; skipped otherwise), which
    answers ENOSPC when it is full, and EROFS once remounted read-only (Linux refuses that
    remount while a file is open for writing, so that case is a broker starting on it);
  * injected: storage's view of the `os` module is wrapped so that `writev`, `fdatasync`
    and `fsync` on one partition's files fail with a chosen errno (EROFS is what a file
    system that was remounted read-only after an error answers while the broker runs; EIO
    is a failing disk). This is the OS boundary, not our own code: nothing of kmock is faked.

The broker runs in process and is restarted on the same data directory (`serve` again) to
check what survived. Commits: a failed __consumer_offsets write is answered with
KAFKA_STORAGE_ERROR (retriable). Kafka's group coordinator answers NOT_COORDINATOR there,
because another broker may take over; kmock is the only one, so it says what happened.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import logging
import os
import subprocess
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

import storage.log
import storage.segment
from protocol.errors import ErrorCode
from tests.reliability import inproc
from tests.reliability.inproc import contents, create, produce, produce_values
from tests.reliability.process import ROOT, BrokerProcess
from tests.wire import WireClient

GROUP = "storage-errors"
# One __consumer_offsets log: fewer files on the small file system.
running = functools.partial(inproc.running, **{"offsets.topic.num.partitions": 1})


async def commit(client: WireClient, topic: str, offset: int) -> int:
    return await inproc.commit(client, GROUP, topic, offset)


async def committed(broker: Any, topic: str) -> int:
    return await inproc.committed(broker, GROUP, topic)


# --- disks that fail --------------------------------------------------------------------


@contextlib.contextmanager
def tmpfs(where: Path, size_bytes: int) -> Iterator[Path]:
    """A tmpfs of `size_bytes` mounted at `where` for the block (skips the test without
    the privilege to mount)."""
    where.mkdir(parents=True, exist_ok=True)
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_bytes}", "tmpfs", str(where)],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs (needs root): {done.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(fs: Path, leave_bytes: int) -> Path:
    """Write a file that leaves about `leave_bytes` free on `fs`; remove it to free space."""
    st = os.statvfs(fs)
    free = st.f_bavail * st.f_frsize
    filler = fs / f"filler-{len(list(fs.glob('filler-*')))}"
    with open(filler, "wb") as f:
        f.write(bytes(max(0, free - leave_bytes)))
    return filler


class FaultyOs:
    """The `os` module as storage sees it (and its `syncfs`), failing `writev`, `fdatasync`
    (or `syncfs`) and `fsync` with `errno` on files (and directories) whose path contains
    `match` while `failing` is set."""

    def __init__(self, real: Any, match: str) -> None:
        self._real = real
        self.match = match
        self.failing: int | None = None
        self.calls = {"writev", "fdatasync", "fsync"}  # which calls fail
        self.failures = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)

    def _check(self, fd: int, call: str) -> None:
        if self.failing is None or call not in self.calls:
            return
        if self.match in self._real.readlink(f"/proc/self/fd/{fd}"):
            self.failures += 1
            raise OSError(self.failing, os.strerror(self.failing))

    def writev(self, fd: int, buffers: Any) -> int:
        self._check(fd, "writev")
        return self._real.writev(fd, buffers)

    def fdatasync(self, fd: int) -> None:
        self._check(fd, "fdatasync")
        self._real.fdatasync(fd)

    def fsync(self, fd: int) -> None:
        self._check(fd, "fsync")
        self._real.fsync(fd)

    def syncfs(self, fd: int) -> bool:
        # The broker's group commit (storage.flush_logs) syncs a whole filesystem; it fails
        # as an fdatasync of the same file would.
        self._check(fd, "fdatasync")
        return storage.segment.syncfs(fd)


@pytest.fixture
def faulty_os(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], FaultyOs]:
    def install(match: str) -> FaultyOs:
        fake = FaultyOs(os, match)
        monkeypatch.setattr(storage.segment, "os", fake)
        monkeypatch.setattr(storage.log, "os", fake)
        monkeypatch.setattr(storage.log, "syncfs", fake.syncfs)
        return fake

    return install


def truncations(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "broker.topics" and "'truncated'" in r.getMessage()
    ]


# --- a full disk (real ENOSPC) ----------------------------------------------------------


@pytest.mark.expect_errors  # the coordinator runtime logs the failed __consumer_offsets write
async def test_full_disk_refuses_writes_keeps_what_it_acknowledged_and_recovers(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with tmpfs(tmp_path / "fs", 4 * 1024 * 1024) as fs, trio.fail_after(60):
        data = fs / "data"
        acked: dict[int, str] = {}
        async with running(data) as broker:
            client = await WireClient.connect(broker)
            await create(client, "full")
            assert await commit(client, "full", 0) == ErrorCode.NONE
            fillers = [fill(fs, 256 * 1024)]
            value_bytes = 16 * 1024
            refused = None
            for i in range(200):
                value = f"v{i:05d}-".encode() + bytes(value_bytes)
                code, base = await produce(client, "full", value)
                if code != ErrorCode.NONE:
                    refused = code
                    break
                acked[base] = value.decode()
            assert refused == ErrorCode.KAFKA_STORAGE_ERROR, f"no refusal after {len(acked)}"
            fillers.append(fill(fs, 0))  # whatever a smaller write could still use
            code, _ = await produce(client, "full", bytes(value_bytes), acks=1)
            assert code == ErrorCode.KAFKA_STORAGE_ERROR
            codes = [await commit(client, "full", n) for n in range(1, 200)]
            failed_commit = next((c for c in codes if c != ErrorCode.NONE), None)
            assert failed_commit == ErrorCode.KAFKA_STORAGE_ERROR
            # A refused commit does not replace the last acknowledged one.
            last_acked = max([0] + [n for n, c in enumerate(codes, 1) if c == ErrorCode.NONE])
            assert await committed(broker, "full") == last_acked
            # Reads keep working on a full disk, and serve exactly what was acknowledged.
            assert await contents(broker, "full") == acked
            # Space comes back: the same broker takes writes again, without a restart.
            for f in fillers:
                f.unlink()
            code, base = await produce(client, "full", b"after")
            assert code == ErrorCode.NONE
            acked[base] = "after"
            assert await commit(client, "full", 1000) == ErrorCode.NONE
            await client.aclose()
        # Everything acknowledged is there after a restart, and recovery had nothing to cut
        # (a failed write is undone when it fails).
        async with running(data) as broker:
            assert await contents(broker, "full") == acked
            assert await committed(broker, "full") == 1000
        assert not truncations(caplog)


@pytest.mark.expect_errors
async def test_stopping_while_the_disk_is_full_stops_cleanly_and_loses_nothing(
    tmp_path: Path,
) -> None:
    with tmpfs(tmp_path / "fs", 4 * 1024 * 1024) as fs, trio.fail_after(60):
        data = fs / "data"
        acked: dict[int, str] = {}
        stopped_with: list[BaseException] = []
        try:
            async with running(data) as broker:
                client = await WireClient.connect(broker)
                await create(client, "full")
                # Enough data for index entries (index.interval.bytes=4096), so that the
                # index files have something to write when the log closes.
                for i in range(8):
                    value = f"v{i}-".encode() + bytes(2048)
                    code, base = await produce(client, "full", value)
                    assert code == ErrorCode.NONE
                    acked[base] = value.decode()
                assert await commit(client, "full", 8) == ErrorCode.NONE
                await client.aclose()
                fill(fs, 0)
                fill(fs, 0)
        except BaseException as e:  # what a graceful stop raised out of serve()
            stopped_with.append(e)
        # Space back: the next start must find everything acknowledged.
        for f in fs.glob("filler-*"):
            f.unlink()
        async with running(data) as broker:
            assert await contents(broker, "full") == acked
            assert await committed(broker, "full") == 8
        assert not stopped_with, f"a graceful stop on a full disk raised {stopped_with[0]!r}"


# --- injected failures: read-only, I/O errors -------------------------------------------


@contextlib.asynccontextmanager
async def bad_and_good(
    data: Path, **settings: Any
) -> AsyncIterator[tuple[Any, WireClient, dict[int, str]]]:
    """(broker, client, acked): a broker on `data` with topics "bad" and "good", and three
    records acknowledged on "bad" (offset -> value) before any failure."""
    async with running(data, **settings) as broker:
        client = await WireClient.connect(broker)
        await create(client, "bad", "good")
        acked = await produce_values(client, "bad", [f"before-{i}" for i in range(3)])
        yield broker, client, acked
        await client.aclose()


@pytest.mark.expect_errors
@pytest.mark.parametrize(
    "error", [errno.EROFS, errno.ENOSPC, errno.EIO], ids=["read-only", "no-space", "io-error"]
)
async def test_failed_writes_are_refused_and_the_partition_takes_writes_when_the_disk_does(
    tmp_path: Path, faulty_os: Callable[[str], FaultyOs], error: int
) -> None:
    fault = faulty_os("/bad-0/")
    with trio.fail_after(30):
        async with bad_and_good(tmp_path / "data") as (broker, client, acked):
            fault.failing = error
            for acks in (-1, 1):
                code, _ = await produce(client, "bad", b"refused", acks=acks)
                assert code == ErrorCode.KAFKA_STORAGE_ERROR
            # Another partition on the same broker is not affected.
            assert (await produce(client, "good", b"fine"))[0] == ErrorCode.NONE
            assert await contents(broker, "bad") == acked
            fault.failing = None
            code, base = await produce(client, "bad", b"after")
            assert code == ErrorCode.NONE
            acked[base] = "after"
        async with running(tmp_path / "data") as broker:
            assert await contents(broker, "bad") == acked
        assert fault.failures >= 2


@pytest.mark.expect_errors  # broker.durability logs the failed fsync
async def test_failed_fsync_refuses_the_ack_takes_the_partition_offline_until_restart(
    tmp_path: Path, faulty_os: Callable[[str], FaultyOs], caplog: pytest.LogCaptureFixture
) -> None:
    fault = faulty_os("/bad-0/")
    with trio.fail_after(30):
        # The strict mode fsyncs an acks=all write before answering it.
        strict = {"kmock.durability": "strict"}
        async with bad_and_good(tmp_path / "data", **strict) as (broker, client, acked):
            # Only fdatasync fails: the write is in the page cache, but not known durable,
            # so acks=all must not be acknowledged.
            fault.calls = {"fdatasync"}
            fault.failing = errno.EIO
            code, _ = await produce(client, "bad", b"not-durable")
            assert code == ErrorCode.KAFKA_STORAGE_ERROR
            fault.failing = None
            # After a failed fsync the kernel may have dropped the dirty pages: the log
            # stays offline until it is reopened (Kafka's log dir failure).
            code, _ = await produce(client, "bad", b"still-offline")
            assert code == ErrorCode.KAFKA_STORAGE_ERROR
            assert (await produce(client, "good", b"fine"))[0] == ErrorCode.NONE
        async with running(tmp_path / "data") as broker:
            values = await contents(broker, "bad")
            assert {o: v for o, v in values.items() if o in acked} == acked
            client = await WireClient.connect(broker)
            code, _ = await produce(client, "bad", b"after-restart")
            assert code == ErrorCode.NONE
            await client.aclose()
    assert any("fsync" in r.getMessage() and r.levelno == logging.ERROR for r in caplog.records)


@pytest.mark.expect_errors
async def test_failed_commit_write_is_not_acknowledged_and_commits_resume(
    tmp_path: Path, faulty_os: Callable[[str], FaultyOs]
) -> None:
    fault = faulty_os("/__consumer_offsets-0/")
    with trio.fail_after(30):
        async with running(tmp_path / "data") as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            assert await commit(client, "t", 10) == ErrorCode.NONE
            fault.failing = errno.ENOSPC
            assert await commit(client, "t", 20) == ErrorCode.KAFKA_STORAGE_ERROR
            fault.failing = None
            # The refused commit did not replace the acknowledged one.
            assert await committed(broker, "t") == 10
            assert await commit(client, "t", 30) == ErrorCode.NONE
            await client.aclose()
        async with running(tmp_path / "data") as broker:
            assert await committed(broker, "t") == 30


@pytest.mark.expect_errors
async def test_failed_segment_roll_does_not_wedge_the_partition(
    tmp_path: Path, faulty_os: Callable[[str], FaultyOs]
) -> None:
    # Small segments, so that appends roll. Only the directory fsync that makes the new
    # segment's file durable fails: the file exists by then.
    fault = faulty_os("/roll-0")
    fault.calls = {"fsync"}
    with trio.fail_after(30):
        async with running(tmp_path / "data", **{"log.segment.bytes": 1024}) as broker:
            client = await WireClient.connect(broker)
            await create(client, "roll")
            acked = {}
            value = b"x" * 300
            for i in range(3):
                code, base = await produce(client, "roll", value + b"%d" % i)
                assert code == ErrorCode.NONE
                acked[base] = (value + b"%d" % i).decode()
            fault.failing = errno.EIO
            for _ in range(5):  # until an append needs a new segment
                code, base = await produce(client, "roll", value + b"refused")
                if code != ErrorCode.NONE:
                    break
                acked[base] = (value + b"refused").decode()
            assert code == ErrorCode.KAFKA_STORAGE_ERROR
            fault.failing = None
            # The disk works again: so must the partition (this append needs the roll too).
            code, base = await produce(client, "roll", value + b"after")
            assert code == ErrorCode.NONE, f"still refused: {ErrorCode(code).name}"
            acked[base] = (value + b"after").decode()
            await client.aclose()
        async with running(tmp_path / "data") as broker:
            assert await contents(broker, "roll") == acked


def test_starting_on_a_read_only_data_dir_fails_fast_with_one_clear_line(tmp_path: Path) -> None:
    """A data directory that cannot be written (a file system remounted read-only after an
    error, a wrong mount) cannot be recovered into: `kmock serve` must say so and exit,
    not serve half the logs or print a traceback."""
    with tmpfs(tmp_path / "fs", 8 * 1024 * 1024) as fs:
        broker = BrokerProcess(
            fs / "data", tmp_path / "logs", overrides={"offsets.topic.num.partitions": 2}
        )
        broker.start()
        assert broker.stop() == 0
        remount = subprocess.run(
            ["mount", "-o", "remount,ro", str(fs)], capture_output=True, text=True, check=False
        )
        assert remount.returncode == 0, remount.stderr
        done = subprocess.run(
            broker.command(),
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    assert "cannot start" in output, output
    assert "Read-only file system" in output, output
