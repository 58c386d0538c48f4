"""The append path: `stamp`'s header against the patch-and-parse it replaces, `Log.append`
(one batch, the path of every Produce and OffsetCommit) against `Log.append_batches` (the
general path), byte for byte, and writes that the kernel takes in pieces."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import (
    BATCH_HEADER_SIZE,
    ControlRecordType,
    build_control_batch,
    parse_batch_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    validate_batch,
)
from storage import Log, LogConfig
from storage.append import stamp
from storage.segment import write_all
from tests.storage.helpers import T0, log_records, make_batch

PID = 4000


def reference_stamp(batch, base_offset, epoch, log_append_ms):
    """The batch as stored, built the long way: a copy of it patched with protocol.records'
    setters, its header parsed from the result."""
    stored = bytearray(batch)
    set_base_offset(stored, 0, base_offset)
    if epoch is not None:
        set_partition_leader_epoch(stored, 0, epoch)
    if log_append_ms >= 0:
        set_log_append_time(stored, 0, log_append_ms)
    return bytes(stored), parse_batch_header(stored)


BATCHES = [
    make_batch(1),
    make_batch(7, timestamp=T0 - 5),
    make_batch(3, producer_id=PID, producer_epoch=2, base_sequence=9),
    make_batch(2, producer_id=PID, producer_epoch=2, base_sequence=0, is_transactional=True),
    make_batch(1, partition_leader_epoch=11),
    build_control_batch(
        ControlRecordType.COMMIT,
        producer_id=PID,
        producer_epoch=2,
        coordinator_epoch=3,
        timestamp=T0,
    ),
]
BATCH_IDS = ["one", "seven", "idempotent", "transactional", "epoch-11", "marker"]


@pytest.mark.parametrize("batch", BATCHES, ids=BATCH_IDS)
@pytest.mark.parametrize("epoch", [None, 0, 7])
@pytest.mark.parametrize("log_append_ms", [-1, T0 + 99])
@pytest.mark.parametrize("base_offset", [0, 5, 2**40 + 3])
def test_stamp_writes_and_reports_what_patching_a_copy_does(
    batch, epoch, log_append_ms, base_offset
):
    view = memoryview(batch)
    head, rest, header = stamp(view, parse_batch_header(view), base_offset, epoch, log_append_ms)
    expected_bytes, expected_header = reference_stamp(batch, base_offset, epoch, log_append_ms)
    assert bytes(head) + bytes(rest) == expected_bytes
    assert header == expected_header
    assert type(header) is type(expected_header)
    validate_batch(expected_bytes)  # the CRC holds


def test_stamp_leaves_the_records_in_the_received_buffer():
    batch = bytearray(make_batch(4))
    view = memoryview(batch)
    header = parse_batch_header(view)
    for epoch, log_append_ms, head_size in ((None, -1, 8), (3, -1, 16), (3, T0, BATCH_HEADER_SIZE)):
        head, rest, _ = stamp(view, header, 10, epoch, log_append_ms)
        assert rest.obj is batch  # a view of the caller's buffer, not a copy
        assert (len(head), len(rest)) == (head_size, len(batch) - head_size)


def open_pair(tmp_path: Path, **config):
    config.setdefault("flush_mode", "none")
    return tuple(
        Log.open(tmp_path / f"{name}-0", LogConfig(**config), now_wall_ms=T0)
        for name in ("one", "many")
    )


def same_files(a: Log, b: Log) -> None:
    assert [s.base_offset for s in a.segments] == [s.base_offset for s in b.segments]
    for sa, sb in zip(a.segments, b.segments, strict=True):
        assert sa.path.read_bytes() == sb.path.read_bytes()
        assert sa.index_bytes() == sb.index_bytes()
        assert sa.time_index_bytes() == sb.time_index_bytes()
        assert (sa.max_timestamp, sa.offset_of_max_timestamp, sa.position_of_max_timestamp) == (
            sb.max_timestamp,
            sb.offset_of_max_timestamp,
            sb.position_of_max_timestamp,
        )
    assert a.log_end_offset == b.log_end_offset
    assert a.producer_state.producers.keys() == b.producer_state.producers.keys()
    for pid, entry in a.producer_state.producers.items():
        other = b.producer_state.producers[pid]
        assert (entry.producer_epoch, entry.batches) == (other.producer_epoch, other.batches)
    assert a.transactions.last_stable_offset(a.high_watermark) == (
        b.transactions.last_stable_offset(b.high_watermark)
    )


def workload():
    """(batch, leader epoch) pairs: plain, idempotent (a retry among them), transactional
    with its marker, stamped and unstamped."""
    idem = [make_batch(2, producer_id=PID, producer_epoch=0, base_sequence=2 * i) for i in range(4)]
    txn = make_batch(
        3, producer_id=PID + 1, producer_epoch=0, base_sequence=0, is_transactional=True
    )
    marker = build_control_batch(
        ControlRecordType.ABORT,
        producer_id=PID + 1,
        producer_epoch=0,
        coordinator_epoch=1,
        timestamp=T0,
    )
    out = []
    for i in range(12):
        out.append((make_batch(1 + i % 4, timestamp=T0 + (i * 37) % 11), None if i % 3 else 5))
    out += [(idem[0], 2), (idem[1], 2), (idem[1], 2), (txn, None), (idem[2], 2), (marker, None)]
    out += [(make_batch(5, timestamp=T0 - 100), 4), (idem[3], None)]
    return out


@pytest.mark.parametrize(
    "config",
    [
        {},
        {"index_interval_bytes": 0},
        {"index_interval_bytes": 200, "segment_bytes": 700},
        {"message_timestamp_type": "LogAppendTime", "index_interval_bytes": 100},
        {"segment_ms": 3},
    ],
)
def test_one_batch_appends_write_what_append_batches_writes(tmp_path, config):
    one, many = open_pair(tmp_path, **config)
    for i, (batch, epoch) in enumerate(workload()):
        wall_ms = T0 + 2 * i
        got = one.append(batch, wall_ms=wall_ms, partition_leader_epoch=epoch)
        want = many.append_batches([batch], wall_ms=wall_ms, partition_leader_epoch=epoch)
        assert [got] == want
    same_files(one, many)
    if "segment_bytes" in config or "segment_ms" in config:
        assert len(one.segments) > 1
    if "index_interval_bytes" in config:
        assert len(one.segments[0].index_bytes()) > 8
    for log in (one, many):
        log.close()
    reopened = open_pair(tmp_path, **config)
    same_files(*reopened)
    assert reopened[0].recovery_report == []  # the index files written agree with recovery


def test_one_batch_append_answers_a_retry_with_its_first_offsets(open_log):
    log = open_log()
    batch = make_batch(3, producer_id=PID, producer_epoch=1, base_sequence=0)
    log.append(make_batch(2), wall_ms=T0)
    first = log.append(batch, wall_ms=T0)
    again = log.append(batch, wall_ms=T0 + 1)
    assert (first.base_offset, first.last_offset, first.duplicate) == (2, 4, False)
    assert (again.base_offset, again.last_offset, again.duplicate) == (2, 4, True)
    assert log.log_end_offset == 5
    with pytest.raises(KafkaError) as raised:
        log.append(
            make_batch(1, producer_id=PID, producer_epoch=1, base_sequence=7), wall_ms=T0 + 2
        )
    assert raised.value.code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 5


@pytest.mark.parametrize(
    ("config", "code"),
    [
        ({"max_message_bytes": 100}, ErrorCode.MESSAGE_TOO_LARGE),
        ({"segment_bytes": 100}, ErrorCode.RECORD_LIST_TOO_LARGE),
    ],
)
def test_one_batch_append_refuses_what_append_batches_refuses(tmp_path, config, code):
    batch = make_batch(5)
    for log, call in zip(open_pair(tmp_path, **config), ("append", "append_batches"), strict=True):
        arg = batch if call == "append" else [batch]
        with pytest.raises(KafkaError) as raised:
            getattr(log, call)(arg, wall_ms=T0)
        assert raised.value.code == code
        assert log.log_end_offset == 0
        assert log.segments[0].path.stat().st_size == 0


def test_one_batch_append_refuses_a_length_other_than_the_buffers(open_log):
    log = open_log()
    with pytest.raises(KafkaError) as raised:
        log.append(make_batch(2) + b"\0", wall_ms=T0)
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


def writev_in_pieces(monkeypatch, piece):
    """os.writev that writes at most `piece` bytes a call, as a kernel may."""
    real = os.writev
    calls = []

    def writev(fd, buffers):
        data = b"".join(bytes(b) for b in buffers)[:piece]
        calls.append(len(data))
        return real(fd, [data])

    monkeypatch.setattr(os, "writev", writev)
    return calls


def test_a_short_write_is_finished_and_the_log_reads_back(open_log, monkeypatch):
    log = open_log()
    batches = [make_batch(n) for n in (3, 1, 6)]
    calls = writev_in_pieces(monkeypatch, 17)
    infos = [log.append(b, wall_ms=T0, partition_leader_epoch=2) for b in batches]
    monkeypatch.undo()
    assert len(calls) > len(batches)
    assert [(i.base_offset, i.last_offset) for i in infos] == [(0, 2), (3, 3), (4, 9)]
    assert [offset for offset, _, _ in log_records(log)] == list(range(10))
    assert log.segments[0].size == log.segments[0].path.stat().st_size == sum(map(len, batches))


def test_write_all_writes_what_a_first_writev_left(tmp_path):
    parts = [b"abc", bytearray(b"defgh"), memoryview(b"ijklmnop")[2:]]
    total = sum(map(len, parts))
    path = tmp_path / "f"
    for done in (1, 3, 5, 9, total - 1):
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC | os.O_APPEND)
        try:
            os.write(fd, b"".join(bytes(p) for p in parts)[:done])
            write_all(fd, parts, total, done)
        finally:
            os.close(fd)
        assert path.read_bytes() == b"abcdefghklmnop"
