"""Log.open after crashes: torn tails, garbage, lost or wrong indexes, compaction leftovers."""

import os
import shutil

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import iter_batches, validate_batch
from tests.storage.helpers import SEGMENT_0, T0, log_records, make_batch


@pytest.fixture
def five_batches(open_log, log_dir):
    """A closed log of five 2-record batches (offsets 0..9) in one segment; returns the
    batches' positions and the segment file."""
    log = open_log(index_interval_bytes=100)
    for _ in range(5):
        log.append(make_batch(2), wall_ms=T0)
    log.close()
    segment = log_dir / f"{SEGMENT_0}.log"
    positions = [pos for pos, _ in iter_batches(segment.read_bytes())]
    return positions, segment


def actions(log):
    return [(e.path.name, e.action) for e in log.recovery_report]


def test_half_written_batch_is_truncated(open_log, five_batches):
    _positions, segment = five_batches
    size = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(make_batch(3)[:40])  # the crash came in the middle of a write
    log = open_log(index_interval_bytes=100)
    (event,) = log.recovery_report
    assert (event.path.name, event.action, event.bytes) == (f"{SEGMENT_0}.log", "truncated", 40)
    assert "cut short" in event.reason
    assert (event.position, event.offset) == (size, 10)  # cut there; offset 10 comes next
    assert segment.stat().st_size == size
    assert log.log_end_offset == 10
    assert log.append(make_batch(), wall_ms=T0).base_offset == 10


def test_batch_with_a_flipped_byte_is_truncated_with_everything_after_it(open_log, five_batches):
    positions, segment = five_batches
    data = bytearray(segment.read_bytes())
    data[positions[3] + 70] ^= 0xFF  # inside the 4th batch's records
    segment.write_bytes(data)
    log = open_log(index_interval_bytes=100)
    event = log.recovery_report[0]
    assert event.action == "truncated"
    assert "CRC" in event.reason
    # the index had entries for the batches that are gone
    assert {e.action for e in log.recovery_report[1:]} == {"index rebuilt"}
    assert event.bytes == len(data) - positions[3]
    assert (event.position, event.offset) == (positions[3], 6)
    assert log.log_end_offset == 6
    assert [o for o, _, _ in log_records(log)] == [0, 1, 2, 3, 4, 5]


def test_zero_filled_tail_is_truncated(open_log, five_batches):
    _, segment = five_batches
    size = segment.stat().st_size
    with open(segment, "ab") as f:
        f.write(bytes(4096))  # blocks allocated by a size update, never written
    log = open_log(index_interval_bytes=100)
    assert actions(log) == [(f"{SEGMENT_0}.log", "truncated")]
    assert "magic" in log.recovery_report[0].reason
    assert segment.stat().st_size == size


def test_stale_batch_with_offsets_going_back_is_truncated(open_log, five_batches):
    positions, segment = five_batches
    data = segment.read_bytes()
    with open(segment, "ab") as f:
        f.write(data[positions[1] : positions[2]])  # a whole, CRC-valid copy of offsets 2..3
    log = open_log(index_interval_bytes=100)
    assert actions(log) == [(f"{SEGMENT_0}.log", "truncated")]
    assert "expected a base offset from 10" in log.recovery_report[0].reason
    assert log.log_end_offset == 10


def test_missing_index_files_are_rebuilt_identically(open_log, log_dir, five_batches):
    index = log_dir / f"{SEGMENT_0}.index"
    timeindex = log_dir / f"{SEGMENT_0}.timeindex"
    expected = (index.read_bytes(), timeindex.read_bytes())
    assert expected[0]  # the fixture's small index interval gives entries
    index.unlink()
    timeindex.unlink()
    log = open_log(index_interval_bytes=100)
    assert [(e.action, e.reason) for e in log.recovery_report] == [
        ("index rebuilt", "index: missing"),
        ("index rebuilt", "timeindex: missing"),
    ]
    assert (index.read_bytes(), timeindex.read_bytes()) == expected


def test_garbled_index_is_rebuilt_and_reads_still_find_every_offset(
    open_log, log_dir, five_batches
):
    index = log_dir / f"{SEGMENT_0}.index"
    expected = index.read_bytes()
    index.write_bytes(b"\x7f" * 20)  # wrong size and nonsense entries
    log = open_log(index_interval_bytes=100)
    assert actions(log) == [(f"{SEGMENT_0}.log", "index rebuilt")]
    assert "inconsistent" in log.recovery_report[0].reason
    assert index.read_bytes() == expected
    for offset in range(10):
        first = validate_batch(log.read_bytes(offset, 1))
        assert first.base_offset <= offset <= first.last_offset


def test_index_behind_the_log_after_a_crash_is_completed(open_log, log_dir):
    log = open_log(index_interval_bytes=100)
    for _ in range(10):
        log.append(make_batch(2), wall_ms=T0)
    # No close: the active segment's index files were never written (as after a kill -9).
    reopened = open_log(index_interval_bytes=100)
    assert {e.action for e in reopened.recovery_report} == {"index rebuilt"}
    assert reopened.log_end_offset == 20


def test_torn_older_segment_ends_the_log_there(open_log, log_dir):
    size = len(make_batch(2))
    log = open_log(segment_bytes=size * 2)
    for _ in range(6):
        log.append(make_batch(2), wall_ms=T0)
    log.close()
    assert [s.base_offset for s in log.segments] == [0, 4, 8]
    middle = log_dir / "00000000000000000004.log"
    os.truncate(middle, size + 10)  # the second batch of the middle segment is cut
    log = open_log(segment_bytes=size * 2)
    assert actions(log) == [
        ("00000000000000000004.log", "truncated"),
        ("00000000000000000008.log", "deleted"),
    ]
    assert log.log_end_offset == 6
    assert not (log_dir / "00000000000000000008.log").exists()
    assert not (log_dir / "00000000000000000008.index").exists()
    assert log.append(make_batch(), wall_ms=T0).base_offset == 6


def test_unfinished_compaction_output_is_removed(open_log, log_dir, five_batches):
    leftover = log_dir / f"{SEGMENT_0}.log.cleaned"
    leftover.write_bytes(b"half of a cleaned segment")
    log = open_log(index_interval_bytes=100)
    assert actions(log) == [(f"{SEGMENT_0}.log.cleaned", "leftover removed")]
    assert not leftover.exists()
    assert log.log_end_offset == 10


def test_complete_compaction_swap_is_finished(open_log, log_dir):
    size = len(make_batch(2))
    log = open_log(segment_bytes=size * 2)
    for _ in range(6):
        log.append(make_batch(2), wall_ms=T0)
    before = log_records(log)
    log.close()
    # As if compaction had merged segments 0 and 4 into a swap file, then crashed before
    # deleting segment 4 and renaming the swap.
    merged = (log_dir / f"{SEGMENT_0}.log").read_bytes() + (
        log_dir / "00000000000000000004.log"
    ).read_bytes()
    (log_dir / f"{SEGMENT_0}.log.swap").write_bytes(merged)
    log = open_log(segment_bytes=size * 2)
    assert actions(log)[0] == (f"{SEGMENT_0}.log.swap", "swap completed")
    assert [s.base_offset for s in log.segments] == [0, 8]
    assert not (log_dir / "00000000000000000004.log").exists()
    assert log_records(log) == before


def test_checkpoint_beyond_the_recovered_log_restarts_it_there(open_log, log_dir):
    log = open_log()
    for _ in range(3):
        log.append(make_batch(), wall_ms=T0)
    log.advance_log_start_offset(3)
    log.close()
    shutil.copy(log_dir / "log-start-offset-checkpoint", log_dir.parent / "checkpoint")
    os.truncate(log_dir / f"{SEGMENT_0}.log", 0)  # the data never reached the disk
    log = open_log()
    assert (log.log_start_offset, log.log_end_offset) == (3, 3)
    assert [s.base_offset for s in log.segments] == [3]
    assert log.append(make_batch(), wall_ms=T0).base_offset == 3


def test_empty_directory_with_a_checkpoint_starts_at_it(open_log, log_dir):
    log_dir.mkdir()
    (log_dir / "log-start-offset-checkpoint").write_text("0\n42\n")
    log = open_log()
    assert (log.log_start_offset, log.log_end_offset) == (42, 42)
    assert (log_dir / "00000000000000000042.log").exists()


def test_unreadable_checkpoint_is_a_storage_error(open_log, log_dir):
    log_dir.mkdir()
    (log_dir / "log-start-offset-checkpoint").write_text("garbage")
    with pytest.raises(KafkaError) as raised:
        open_log()
    assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR


def test_files_that_are_not_segments_are_left_alone(open_log, log_dir, five_batches):
    (log_dir / "partition.metadata").write_text("version: 0\n")
    log = open_log(index_interval_bytes=100)
    assert log.recovery_report == []
    assert (log_dir / "partition.metadata").exists()
