import errno
import os

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import (
    decode_records,
    iter_batches,
    parse_batch_header,
    split_batches,
    validate_batch,
)
from storage import Log, LogConfig
from tests.storage.helpers import T0, log_records, make_batch


def kafka_error(call, *args, **kwargs):
    with pytest.raises(KafkaError) as raised:
        call(*args, **kwargs)
    return raised.value


def batch_offsets(data):
    return [(h.base_offset, h.last_offset) for _, h in iter_batches(data)]


# --- a new log, append, read ----------------------------------------------------------


def test_new_log_is_empty_with_kafka_file_names(open_log, log_dir):
    log = open_log()
    assert (log.log_start_offset, log.log_end_offset, log.high_watermark) == (0, 0, 0)
    assert log.read_bytes(0, 1000) == b""
    assert sorted(p.name for p in log_dir.iterdir()) == ["00000000000000000000.log"]
    assert log.recovery_report == []


def test_append_assigns_consecutive_offsets(open_log):
    log = open_log()
    infos = [log.append(make_batch(n), wall_ms=T0) for n in (3, 1, 5)]
    assert [(i.base_offset, i.last_offset) for i in infos] == [(0, 2), (3, 3), (4, 8)]
    assert all(i.log_append_time == -1 and not i.duplicate for i in infos)
    assert log.log_end_offset == 9


def test_read_returns_whole_valid_batches_with_assigned_offsets(open_log):
    log = open_log()
    for n in (3, 1, 5):
        log.append(make_batch(n), wall_ms=T0)
    data = log.read_bytes(0, 10_000)
    assert batch_offsets(data) == [(0, 2), (3, 3), (4, 8)]
    for pos, _ in iter_batches(data):
        validate_batch(data, pos)  # the CRC still holds after the offset rewrite
    assert [r.offset for r in decode_records(data[: 12 + validate_batch(data).batch_length])] == [
        0,
        1,
        2,
    ]


def test_read_starts_at_the_batch_holding_the_offset(open_log):
    log = open_log()
    log.append(make_batch(3), wall_ms=T0)
    log.append(make_batch(3), wall_ms=T0)
    assert batch_offsets(log.read_bytes(4, 10_000)) == [(3, 5)]
    assert batch_offsets(log.read_bytes(2, 10_000)) == [(0, 2), (3, 5)]


def test_every_offset_is_found_through_a_dense_index(open_log):
    log = open_log(index_interval_bytes=100)
    for n in range(1, 40):
        log.append(make_batch(n % 4 + 1), wall_ms=T0)
    for offset in range(log.log_end_offset):
        (first, last), *_ = batch_offsets(log.read_bytes(offset, 1))
        assert first <= offset <= last


def test_read_stops_at_max_bytes_on_a_batch_boundary(open_log):
    log = open_log(index_interval_bytes=150)
    size = len(make_batch())
    for _ in range(30):
        log.append(make_batch(), wall_ms=T0)
    assert len(log.read_bytes(0, size * 7 + size // 2)) == size * 7
    assert len(log.read_bytes(5, size * 3)) == size * 3
    assert len(log.read_bytes(0, 1_000_000)) == size * 30


def test_first_batch_is_returned_even_if_larger_than_max_bytes_kip_74(open_log):
    log = open_log()
    log.append(make_batch(10), wall_ms=T0)
    assert batch_offsets(log.read_bytes(0, 10)) == [(0, 9)]
    assert log.read_bytes(0, 10, min_one=False) == b""


def test_read_never_returns_batches_at_or_past_max_offset(open_log):
    log = open_log()
    for _ in range(5):
        log.append(make_batch(2), wall_ms=T0)
    assert batch_offsets(log.read_bytes(0, 10_000, max_offset=5)) == [(0, 1), (2, 3), (4, 5)]
    assert log.read_bytes(6, 10_000, max_offset=6) == b""


def test_read_outside_the_log_is_offset_out_of_range(open_log):
    log = open_log()
    log.append(make_batch(2), wall_ms=T0)
    assert log.read_bytes(2, 100) == b""  # the log end offset itself: nothing yet
    assert kafka_error(log.read, 3, 100).code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert kafka_error(log.read, -1, 100).code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_a_read_slice_spans_one_segment_only(open_log):
    size = len(make_batch())
    log = open_log(segment_bytes=size * 3)
    for _ in range(6):
        log.append(make_batch(), wall_ms=T0)
    assert batch_offsets(log.read_bytes(1, 10_000)) == [(1, 1), (2, 2)]
    assert batch_offsets(log.read_bytes(3, 10_000)) == [(3, 3), (4, 4), (5, 5)]


def test_slice_exposes_a_descriptor_for_sendfile(open_log):
    log = open_log()
    log.append(make_batch(), wall_ms=T0)
    piece = log.read(0, 1000)
    assert os.pread(piece.fd, piece.size, piece.position) == piece.read_bytes()


def test_reopen_finds_the_same_log(open_log):
    log = open_log(index_interval_bytes=100)
    for n in range(1, 20):
        log.append(make_batch(n), wall_ms=T0)
    before = log.read_bytes(0, 1_000_000)
    log.close()
    log = open_log(index_interval_bytes=100)
    assert log.recovery_report == []
    assert log.log_end_offset == sum(range(1, 20))
    assert log.read_bytes(0, 1_000_000) == before
    log.append(make_batch(), wall_ms=T0)
    assert log.log_end_offset == sum(range(1, 20)) + 1


def test_close_writes_the_index_files(open_log, log_dir):
    log = open_log(index_interval_bytes=100)
    for _ in range(20):
        log.append(make_batch(), wall_ms=T0)
    log.close()
    index = (log_dir / "00000000000000000000.index").read_bytes()
    timeindex = (log_dir / "00000000000000000000.timeindex").read_bytes()
    assert len(index) % 8 == 0
    assert len(index) > 0
    assert len(timeindex) % 12 == 0
    assert len(timeindex) > 0
    assert kafka_error(log.read, 0, 100).code == ErrorCode.KAFKA_STORAGE_ERROR
    assert kafka_error(log.append, make_batch(), wall_ms=T0).code == ErrorCode.KAFKA_STORAGE_ERROR


def test_delete_removes_the_directory(open_log, log_dir):
    log = open_log()
    log.append(make_batch(), wall_ms=T0)
    log.delete()
    assert not log_dir.exists()


# --- what append checks and rewrites ----------------------------------------------------


def test_partition_leader_epoch_is_stamped(open_log):
    log = open_log()
    log.append(make_batch(), wall_ms=T0, partition_leader_epoch=7)
    assert validate_batch(log.read_bytes(0, 1000)).partition_leader_epoch == 7


def test_log_append_time_rewrites_max_timestamp_and_crc(open_log):
    log = open_log(message_timestamp_type="LogAppendTime")
    info = log.append(make_batch(3, timestamp=5), wall_ms=T0 + 42)
    assert info.log_append_time == T0 + 42
    data = log.read_bytes(0, 1000)
    header = validate_batch(data)
    assert (header.timestamp_type, header.max_timestamp) == (1, T0 + 42)
    assert [r.timestamp for r in decode_records(data)] == [T0 + 42] * 3


def test_batch_over_max_message_bytes_is_refused(open_log):
    log = open_log(max_message_bytes=200)
    error = kafka_error(log.append, make_batch(20), wall_ms=T0)
    assert error.code == ErrorCode.MESSAGE_TOO_LARGE
    assert log.log_end_offset == 0


def test_append_refuses_bytes_that_are_not_one_whole_batch(open_log):
    log = open_log()
    two = make_batch() + make_batch()
    assert kafka_error(log.append, two, wall_ms=T0).code == ErrorCode.CORRUPT_MESSAGE
    assert kafka_error(log.append, make_batch()[:70], wall_ms=T0).code == ErrorCode.CORRUPT_MESSAGE


def test_append_with_the_callers_header_writes_what_a_parsed_append_writes(open_log, tmp_path):
    batch = make_batch(3)
    [(_, header)] = split_batches(batch)
    given = open_log()
    given.append(make_batch(2), wall_ms=T0)
    info = given.append(batch, wall_ms=T0, partition_leader_epoch=7, header=header)
    assert (info.base_offset, info.last_offset) == (2, 4)
    parsed = Log.open(tmp_path / "parsed-0", LogConfig(flush_mode="none"), now_wall_ms=T0)
    parsed.append(make_batch(2), wall_ms=T0)
    parsed.append(batch, wall_ms=T0, partition_leader_epoch=7)
    assert given.read_bytes(0, 1000) == parsed.read_bytes(0, 1000)
    assert log_records(given) == log_records(parsed)


def test_append_rechecks_the_callers_header_against_the_batch(open_log):
    log = open_log()
    [(_, header)] = split_batches(make_batch(3))
    error = kafka_error(log.append, make_batch(1), wall_ms=T0, header=header)
    assert error.code == ErrorCode.CORRUPT_MESSAGE
    assert log.log_end_offset == 0
    assert log.read_bytes(0, 1000) == b""


def _at(batch, base_offset):
    """The batch with its base offset set (outside the CRC), and its header."""
    stamped = base_offset.to_bytes(8, "big") + batch[8:]
    return stamped, parse_batch_header(stamped)


def test_append_stamped_writes_what_append_writes(open_log, tmp_path):
    # A batch built at the log end offset is written as it is; the same log through
    # `append` holds the same bytes and the same indexes, across a roll.
    stamped = open_log(segment_bytes=400, index_interval_bytes=1)
    parsed = Log.open(
        tmp_path / "parsed-0",
        LogConfig(flush_mode="none", segment_bytes=400, index_interval_bytes=1),
        now_wall_ms=T0,
    )
    for i in range(12):
        batch = make_batch(1 + i % 3, timestamp=T0 + i)
        stamped.append_stamped(*_at(batch, stamped.log_end_offset), wall_ms=T0 + i)
        parsed.append(batch, wall_ms=T0 + i)
    assert len(stamped.segments) > 1
    assert stamped.log_end_offset == parsed.log_end_offset
    assert [s.base_offset for s in stamped.segments] == [s.base_offset for s in parsed.segments]
    for a, b in zip(stamped.segments, parsed.segments, strict=True):
        assert (a.index_bytes(), a.time_index_bytes()) == (b.index_bytes(), b.time_index_bytes())
    assert stamped.read_bytes(0, 10_000) == parsed.read_bytes(0, 10_000)
    assert log_records(stamped) == log_records(parsed)


@pytest.mark.parametrize(
    ("config", "base_offset", "expected"),
    [
        ({}, 0, None),  # not at the log end offset (1): stamped by `append`
        ({"message_timestamp_type": "LogAppendTime"}, 1, None),
        ({"max_message_bytes": 100}, 1, ErrorCode.MESSAGE_TOO_LARGE),
    ],
)
def test_append_stamped_leaves_to_append_what_is_not_already_stored_form(
    open_log, config, base_offset, expected
):
    log = open_log(**config)
    log.append(make_batch(timestamp=5), wall_ms=T0)
    batch = make_batch(3, timestamp=5)
    if expected is not None:
        error = kafka_error(log.append_stamped, *_at(batch, base_offset), wall_ms=T0 + 42)
        assert error.code == expected
        assert log.log_end_offset == 1
        return
    log.append_stamped(*_at(batch, base_offset), wall_ms=T0 + 42)
    assert batch_offsets(log.read_bytes(0, 1000)) == [(0, 0), (1, 3)]
    header = validate_batch(log.read_bytes(1, 1000))
    appended_as = (1, T0 + 42) if config else (0, 7)
    assert (header.timestamp_type, header.max_timestamp) == appended_as


def test_append_stamped_to_a_closed_log_is_a_storage_error(open_log):
    log = open_log()
    log.close()
    error = kafka_error(log.append_stamped, *_at(make_batch(), 0), wall_ms=T0)
    assert error.code == ErrorCode.KAFKA_STORAGE_ERROR


def test_append_batches_writes_a_produce_request_in_place(open_log):
    log = open_log()
    records = memoryview(make_batch(2) + make_batch(3))
    views = [records[pos : pos + h.size] for pos, h in split_batches(records)]
    infos = log.append_batches(views, wall_ms=T0)
    assert [(i.base_offset, i.last_offset) for i in infos] == [(0, 1), (2, 4)]
    assert batch_offsets(log.read_bytes(0, 1000)) == [(0, 1), (2, 4)]


# --- segments ---------------------------------------------------------------------------


def test_segments_roll_by_size(open_log, log_dir):
    size = len(make_batch())
    log = open_log(segment_bytes=size * 4)
    for _ in range(10):
        log.append(make_batch(), wall_ms=T0)
    assert [s.base_offset for s in log.segments] == [0, 4, 8]
    assert all(s.size <= size * 4 for s in log.segments)
    names = sorted(p.name for p in log_dir.iterdir() if p.suffix == ".log")
    assert names == [
        "00000000000000000000.log",
        "00000000000000000004.log",
        "00000000000000000008.log",
    ]
    # a rolled segment got its index files
    assert (log_dir / "00000000000000000004.index").exists()
    assert log_records(log) == [(i, b"key-0", b"value-0") for i in range(10)]


def test_segments_roll_by_time(open_log):
    log = open_log(segment_ms=1000)
    log.append(make_batch(), wall_ms=T0)
    log.append(make_batch(), wall_ms=T0 + 999)
    log.append(make_batch(), wall_ms=T0 + 1000)
    log.append(make_batch(), wall_ms=T0 + 1500)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_all_batches_of_one_call_go_into_one_segment(open_log):
    size = len(make_batch())
    log = open_log(segment_bytes=size * 3)
    log.append(make_batch(), wall_ms=T0)
    log.append_batches([make_batch(), make_batch(), make_batch()], wall_ms=T0)
    assert [(s.base_offset, s.next_offset) for s in log.segments] == [(0, 1), (1, 4)]


def test_more_than_a_segment_in_one_call_is_record_list_too_large(open_log):
    size = len(make_batch())
    log = open_log(segment_bytes=size * 2)
    error = kafka_error(log.append_batches, [make_batch()] * 3, wall_ms=T0)
    assert error.code == ErrorCode.RECORD_LIST_TOO_LARGE


def test_a_segment_file_survives_its_deletion_for_open_slices(open_log):
    size = len(make_batch())
    log = open_log(segment_bytes=size * 2, retention_bytes=0)
    for _ in range(3):
        log.append(make_batch(), wall_ms=T0)
    piece = log.read(0, 10_000)
    expected = piece.read_bytes()
    assert log.apply_retention(T0) == 2
    assert piece.read_bytes() == expected


# --- disk failures ------------------------------------------------------------------------


def failing_writev(monkeypatch, *, after_bytes):
    """os.writev that writes `after_bytes` bytes, then fails with ENOSPC."""
    real = os.writev
    budget = [after_bytes]

    def writev(fd, buffers):
        if budget[0] <= 0:
            raise OSError(errno.ENOSPC, "No space left on device")
        first = memoryview(buffers[0])[: budget[0]]
        budget[0] -= len(first)
        return real(fd, [first])

    monkeypatch.setattr(os, "writev", writev)


def test_enospc_is_storage_error_and_leaves_the_log_consistent(open_log, log_dir, monkeypatch):
    log = open_log()
    log.append(make_batch(2), wall_ms=T0)
    before = log.read_bytes(0, 10_000)
    failing_writev(monkeypatch, after_bytes=30)  # a partial write, then ENOSPC
    error = kafka_error(log.append, make_batch(3), wall_ms=T0)
    assert error.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert log.log_end_offset == 2
    assert (log_dir / "00000000000000000000.log").stat().st_size == len(before)
    monkeypatch.undo()
    assert log.append(make_batch(3), wall_ms=T0).base_offset == 2  # space came back
    log.close()
    reopened = open_log()
    assert reopened.recovery_report == []
    assert [o for o, _, _ in log_records(reopened)] == [0, 1, 2, 3, 4]


def test_failed_write_that_cannot_be_undone_takes_the_log_offline(open_log, monkeypatch):
    log = open_log()
    log.append(make_batch(), wall_ms=T0)
    failing_writev(monkeypatch, after_bytes=30)

    def no_truncate(fd, length):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "ftruncate", no_truncate)
    assert kafka_error(log.append, make_batch(), wall_ms=T0).code == ErrorCode.KAFKA_STORAGE_ERROR
    monkeypatch.undo()
    error = kafka_error(log.append, make_batch(), wall_ms=T0)
    assert error.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert "offline" in error.detail
    assert batch_offsets(log.read_bytes(0, 1000)) == [(0, 0)]  # reads still work


# --- durability -------------------------------------------------------------------------


def count_fdatasync(monkeypatch):
    calls = []
    real = os.fdatasync

    def fdatasync(fd):
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    return calls


def test_group_commit_flush_covers_everything_appended_before_it(open_log, monkeypatch):
    log = open_log(flush_mode="interval")
    calls = count_fdatasync(monkeypatch)
    log.append(make_batch(3), wall_ms=T0)
    assert (log.flushed_offset, log.has_unflushed) == (0, True)
    assert calls == []  # interval mode: append does not sync
    assert log.flush() == 3
    assert (log.flushed_offset, log.has_unflushed) == (3, False)
    assert log.sync() == 3  # nothing new: no second fsync
    assert len(calls) == 1


def test_flush_mode_always_syncs_in_append(open_log, monkeypatch):
    log = open_log(flush_mode="always")
    calls = count_fdatasync(monkeypatch)
    log.append(make_batch(2), wall_ms=T0)
    assert log.flushed_offset == 2
    assert len(calls) == 1


def test_roll_fsyncs_the_closed_segment(open_log, monkeypatch):
    size = len(make_batch())
    log = open_log(segment_bytes=size)
    calls = count_fdatasync(monkeypatch)
    log.append(make_batch(), wall_ms=T0)
    log.append(make_batch(), wall_ms=T0)
    assert len(calls) == 1
    assert log.flushed_offset == 1


def test_failed_fsync_takes_the_log_offline(open_log, monkeypatch):
    log = open_log(flush_mode="interval")
    log.append(make_batch(), wall_ms=T0)

    def fdatasync(fd):
        raise OSError(errno.EIO, "Input/output error")

    monkeypatch.setattr(os, "fdatasync", fdatasync)
    assert kafka_error(log.flush).code == ErrorCode.KAFKA_STORAGE_ERROR
    assert log.flushed_offset == 0
    monkeypatch.undo()
    assert kafka_error(log.append, make_batch(), wall_ms=T0).code == ErrorCode.KAFKA_STORAGE_ERROR


def test_log_config_rejects_unknown_modes():
    with pytest.raises(ValueError, match="flush_mode"):
        LogConfig(flush_mode="sometimes")
    with pytest.raises(ValueError, match="cleanup_policy"):
        LogConfig(cleanup_policy="shred")
    assert LogConfig(cleanup_policy="compact,delete").compacts
    assert LogConfig().flush_mode == "interval"


# --- timestamps ----------------------------------------------------------------------------


def test_offset_for_timestamp_finds_the_first_record_at_or_after(open_log):
    size = len(make_batch(4))
    log = open_log(segment_bytes=size * 3, index_interval_bytes=50)
    for i in range(8):
        log.append(make_batch(4, timestamp=T0 + 10 * i), wall_ms=T0)  # 4 records: +0..+3
    assert log.offset_for_timestamp(0) == (0, T0)
    assert log.offset_for_timestamp(T0 + 2) == (2, T0 + 2)
    assert log.offset_for_timestamp(T0 + 5) == (4, T0 + 10)
    assert log.offset_for_timestamp(T0 + 51) == (21, T0 + 51)
    assert log.offset_for_timestamp(T0 + 73) == (31, T0 + 73)
    assert log.offset_for_timestamp(T0 + 74) is None


def test_offset_for_timestamp_with_out_of_order_timestamps(open_log):
    log = open_log()
    log.append(make_batch(1, timestamp=T0 + 100), wall_ms=T0)
    log.append(make_batch(1, timestamp=T0), wall_ms=T0)
    log.append(make_batch(1, timestamp=T0 + 50), wall_ms=T0)
    assert log.offset_for_timestamp(T0 + 40) == (0, T0 + 100)


def test_max_timestamp_offset(open_log):
    size = len(make_batch(3))
    log = open_log(segment_bytes=size * 2)
    assert log.max_timestamp_offset() is None
    log.append(make_batch(3, timestamp=T0), wall_ms=T0)
    log.append(make_batch(3, timestamp=T0 + 100), wall_ms=T0)  # max T0+102 at offset 5
    log.append(make_batch(3, timestamp=T0 + 50), wall_ms=T0)
    assert log.max_timestamp_offset() == (5, T0 + 102)


# --- truncation, DeleteRecords ------------------------------------------------------------------


def test_truncate_to_removes_whole_batches(open_log):
    size = len(make_batch(2))
    log = open_log(segment_bytes=size * 2)
    for _ in range(5):
        log.append(make_batch(2), wall_ms=T0)
    log.truncate_to(5, wall_ms=T0)  # offset 5 is in the batch 4..5: it goes entirely
    assert log.log_end_offset == 4
    assert [s.base_offset for s in log.segments] == [0, 4]
    assert log.append(make_batch(), wall_ms=T0).base_offset == 4
    log.truncate_to(0, wall_ms=T0)
    assert (log.log_start_offset, log.log_end_offset) == (0, 0)
    assert log_records(log) == []


def test_delete_records_advances_the_log_start_and_persists_it(open_log):
    size = len(make_batch(2))
    log = open_log(segment_bytes=size * 2)
    for _ in range(5):
        log.append(make_batch(2), wall_ms=T0)
    assert log.advance_log_start_offset(5) == 5
    assert [s.base_offset for s in log.segments] == [4, 8]  # 0..3 was wholly below 5
    assert kafka_error(log.read, 4, 1000).code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert batch_offsets(log.read_bytes(5, 1000))[0] == (4, 5)
    assert log.advance_log_start_offset(2) == 5  # never moves back
    assert kafka_error(log.advance_log_start_offset, 11).code == ErrorCode.OFFSET_OUT_OF_RANGE
    log.close()
    assert open_log(segment_bytes=size * 2).log_start_offset == 5
