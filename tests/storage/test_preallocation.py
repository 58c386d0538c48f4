"""Large appends reserve disk blocks ahead (fallocate, keeping the file size); the blocks past
the data are given back at roll, at close, and when a log left by a crash is opened again."""

from __future__ import annotations

import os
import sys

import pytest

from storage import Log
from storage.segment import PREALLOCATE_MIN_WRITE
from tests.storage.helpers import T0, make_batch

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="fallocate(2) is Linux's"
)

BIG_VALUE = os.urandom(PREALLOCATE_MIN_WRITE)


def allocated(path: os.PathLike[str]) -> int:
    return os.stat(path).st_blocks * 512


def active_file(log):
    return log.segments[-1].path


def test_a_large_append_reserves_blocks_past_the_data_and_the_size_stays_the_data(open_log):
    log = open_log()
    log.append(make_batch(1, values=[BIG_VALUE]), wall_ms=T0)
    path = active_file(log)
    size = os.stat(path).st_size
    assert size == log.segments[-1].size
    assert allocated(path) >= size + 4 * PREALLOCATE_MIN_WRITE
    # What is reserved is invisible to readers: the log reads back exactly what was written.
    assert log.read_bytes(0, 10 * size) == os.pread(log.segments[-1].fd, size, 0)


def test_small_appends_reserve_nothing(open_log):
    log = open_log()
    for _ in range(50):
        log.append(make_batch(3), wall_ms=T0)
    path = active_file(log)
    assert allocated(path) <= os.stat(path).st_size + 4096


@pytest.mark.parametrize(
    "finish",
    [
        pytest.param(lambda log: log.roll(wall_ms=T0), id="roll"),
        pytest.param(Log.close, id="close"),
    ],
)
def test_a_segment_left_behind_gives_back_its_blocks(open_log, finish):
    log = open_log()
    log.append(make_batch(1, values=[BIG_VALUE]), wall_ms=T0)
    path = active_file(log)
    assert allocated(path) > os.stat(path).st_size + 4096
    finish(log)
    assert allocated(path) <= os.stat(path).st_size + 4096


def test_reopening_after_a_crash_gives_back_the_blocks_and_keeps_the_data(open_log):
    log = open_log()
    infos = [log.append(make_batch(1, values=[BIG_VALUE]), wall_ms=T0) for _ in range(3)]
    path = active_file(log)
    before = log.read_bytes(0, 10**7)
    assert allocated(path) > os.stat(path).st_size + 4096
    # A crash: the process is gone without closing the log (its descriptors with it).
    log._drop_handles()
    reopened = open_log()
    # Nothing cut: the reserved blocks past the end are not read as a torn tail (only the
    # index files, never written before the crash, are rebuilt).
    assert {e.action for e in reopened.recovery_report} <= {"index rebuilt"}
    assert reopened.log_end_offset == infos[-1].last_offset + 1
    assert reopened.read_bytes(0, 10**7) == before
    assert allocated(path) <= os.stat(path).st_size + 4096
