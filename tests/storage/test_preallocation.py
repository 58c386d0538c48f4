"""Blocks reserved ahead of the active segment (storage.segment, PREALLOCATE_*): the files
keep Kafka's content and size, and the reserved blocks are given back at roll, close and
recovery."""

import os

import pytest

from storage.segment import PREALLOCATE_MIN_BYTES, reserve_blocks
from tests.storage.helpers import SEGMENT_0, log_records, make_batch

BLOCK = 4096


def _allocated(path) -> int:
    return os.stat(path).st_blocks * 512


def _reserves(directory) -> bool:
    """Whether the filesystem under `directory` takes fallocate(FALLOC_FL_KEEP_SIZE)."""
    directory.mkdir(parents=True, exist_ok=True)
    probe = directory / "probe"
    fd = os.open(probe, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        return reserve_blocks(fd, 0, 1 << 20) and _allocated(probe) >= 1 << 20
    finally:
        os.close(fd)
        probe.unlink()


@pytest.fixture
def reserving(log_dir):
    if not _reserves(log_dir):
        pytest.skip("this filesystem has no fallocate(FALLOC_FL_KEEP_SIZE)")


def _big_batch(i: int) -> bytes:
    # ~615 KB: two make a segment pass PREALLOCATE_MIN_BYTES.
    return make_batch(60, values=[os.urandom(10240) for _ in range(60)], timestamp=i)


def test_small_segments_reserve_nothing(open_log, log_dir):
    log = open_log()
    for _ in range(10):
        log.append(make_batch(5), wall_ms=0)
    path = log_dir / f"{SEGMENT_0}.log"
    assert os.stat(path).st_size == log.segments[-1].size < PREALLOCATE_MIN_BYTES
    assert _allocated(path) < log.segments[-1].size + BLOCK * 4


def test_large_appends_reserve_blocks_and_keep_the_files_content(open_log, log_dir, reserving):
    log = open_log()
    batches = [_big_batch(i) for i in range(4)]
    log.append(batches[0], wall_ms=0)
    log.append(batches[1], wall_ms=0)
    path = log_dir / f"{SEGMENT_0}.log"
    size = len(batches[0]) + len(batches[1])
    assert size > PREALLOCATE_MIN_BYTES
    # The size is the batches', nothing more: what Kafka's tools and recovery read.
    assert os.stat(path).st_size == log.segments[-1].size == size
    assert _allocated(path) >= 2 * size - BLOCK  # as much again reserved past the end
    log.append(batches[2], wall_ms=0)
    log.append(batches[3], wall_ms=0)
    size = sum(map(len, batches))
    assert os.stat(path).st_size == size
    assert path.read_bytes()[-len(batches[3]) + 61 :] == batches[3][61:]
    assert [offset for offset, _, _ in log_records(log)] == list(range(240))
    log.close()
    assert os.stat(path).st_size == size
    assert _allocated(path) < size + BLOCK * 4  # given back at close


def test_a_rolled_segment_gives_its_reserved_blocks_back(open_log, log_dir, reserving):
    log = open_log(segment_bytes=2_000_000)
    for i in range(4):
        log.append(_big_batch(i), wall_ms=0)
    first, active = log.segments
    assert _allocated(first.path) < first.size + BLOCK * 4
    assert os.stat(first.path).st_size == first.size
    assert active.size < PREALLOCATE_MIN_BYTES or _allocated(active.path) > active.size
    log.close()


def test_recovery_gives_back_blocks_reserved_before_a_crash(open_log, log_dir, reserving):
    log = open_log()
    for i in range(3):
        log.append(_big_batch(i), wall_ms=0)
    path = log_dir / f"{SEGMENT_0}.log"
    content = path.read_bytes()
    log._drop_handles()  # a crash: no close, so nothing is given back
    log.transactions.close()
    assert _allocated(path) >= len(content) + 512 * 1024
    mtime = os.stat(path).st_mtime_ns
    log = open_log()
    assert path.read_bytes() == content
    assert _allocated(path) < len(content) + BLOCK * 4
    assert os.stat(path).st_mtime_ns == mtime  # retention's fallback clock is untouched
    assert {e.action for e in log.recovery_report} == {"index rebuilt"}  # nothing cut
    assert [offset for offset, _, _ in log_records(log)] == list(range(180))
    log.close()


def test_a_failed_reservation_does_not_fail_the_append(open_log, log_dir, monkeypatch):
    import storage.segment as segment

    calls = []
    monkeypatch.setattr(segment, "reserve_blocks", lambda *a: calls.append(a) or False)
    log = open_log()
    for i in range(3):
        log.append(_big_batch(i), wall_ms=0)
    assert calls  # it was tried, once per step
    assert len(calls) < 3
    assert [offset for offset, _, _ in log_records(log)] == list(range(180))
    log.close()
