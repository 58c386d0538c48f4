"""Planning, scanning and decoding segments, without Spark."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipeline.segments import (
    Columns,
    Skipped,
    UnreadableSegments,
    decode_columns,
    iter_columns,
    partition_dirs,
    plan,
    scan,
    scan_segment,
)
from protocol.compression import CompressionType
from protocol.errors import KafkaError
from protocol.records import (
    ControlRecordType,
    build_batch,
    build_control_batch,
    decode_records,
    iter_batches,
)
from tests.pipeline.logdata import T0, batch, values, write_segment


def _decode_all(buf: bytes, **kwargs: int) -> Columns:
    out = Columns()
    for pos, header in iter_batches(buf):
        decode_columns(buf, pos, header, out, **kwargs)
    return out


def _as_rows(c: Columns) -> list[tuple]:
    return [
        (
            c.offset[i],
            c.timestamp[i],
            c.key[i],
            c.value[i],
            tuple(
                zip(
                    c.header_keys[c.header_offsets[i] : c.header_offsets[i + 1]],
                    c.header_values[c.header_offsets[i] : c.header_offsets[i + 1]],
                    strict=True,
                )
            ),
        )
        for i in range(len(c))
    ]


def _canonical(buf: bytes) -> list[tuple]:
    return [
        (r.offset, r.timestamp, r.key, r.value, r.headers)
        for pos, h in iter_batches(buf)
        for r in decode_records(buf[pos : pos + h.size])
    ]


# --- planning ---------------------------------------------------------------------------


def test_partition_dirs_lists_topics_with_dashes_and_ignores_other_entries(tmp_path: Path) -> None:
    write_segment(tmp_path, "orders-eu", 0, 0, [])
    write_segment(tmp_path, "orders-eu", 10, 0, [])
    write_segment(tmp_path, "__consumer_offsets", 3, 0, [])
    (tmp_path / "orders-eu-1.abc123-delete").mkdir()
    (tmp_path / "meta.properties").write_text("x")
    (tmp_path / "cleaner-offset-checkpoint").write_text("")
    found = [(t, p) for t, p, _ in partition_dirs([tmp_path])]
    assert found == [("__consumer_offsets", 3), ("orders-eu", 0), ("orders-eu", 10)]


def test_partition_dirs_accepts_partition_dirs_and_dedupes(tmp_path: Path) -> None:
    write_segment(tmp_path, "a", 0, 0, [])
    write_segment(tmp_path, "b", 1, 0, [])
    found = partition_dirs([tmp_path / "b-1", tmp_path, tmp_path / "a-0"])
    assert [(t, p) for t, p, _ in found] == [("a", 0), ("b", 1)]


def test_partition_dirs_rejects_a_missing_path(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="not a directory"):
        partition_dirs([tmp_path / "nope"])


def test_plan_prunes_by_topic_partition_and_offset_range(tmp_path: Path) -> None:
    for p in (0, 1):
        for base in (0, 100, 200):
            write_segment(tmp_path, "t", p, base, [values(base, 10)])
    write_segment(tmp_path, "u", 0, 0, [values(0, 10)])
    (tmp_path / "t-0" / f"{0:020d}.index").write_bytes(b"")
    (tmp_path / "t-0" / f"{300:020d}.log.deleted").write_bytes(b"")

    def bases(**kw: object) -> list[tuple[str, int, int]]:
        return [(s.topic, s.partition, s.base_offset) for s in plan([tmp_path], **kw)]  # type: ignore[arg-type]

    assert len(bases()) == 7
    assert bases(topics=["u"]) == [("u", 0, 0)]
    assert bases(topics=["t"], partitions=[1]) == [("t", 1, 0), ("t", 1, 100), ("t", 1, 200)]
    # [150, 200) meets only the segment holding 100..199; [100, 201) meets two.
    assert bases(topics=["t"], partitions=[0], start_offset=150, end_offset=200) == [("t", 0, 100)]
    assert bases(topics=["t"], partitions=[0], start_offset=100, end_offset=201) == [
        ("t", 0, 100),
        ("t", 0, 200),
    ]
    # The last segment is open-ended.
    assert bases(topics=["t"], partitions=[0], start_offset=10_000) == [("t", 0, 200)]


def test_plan_records_each_file_size_when_planned(tmp_path: Path) -> None:
    path = write_segment(tmp_path, "t", 0, 0, [values(0, 3)])
    (segment,) = plan([tmp_path])
    with path.open("ab") as f:
        f.write(values(3, 3))
    scanned = scan_segment(segment)
    assert (scanned.records, scanned.log_end_offset, scanned.skipped) == (3, 3, [])


# --- scanning ---------------------------------------------------------------------------


def test_scan_reads_every_batch_of_a_clean_segment() -> None:
    buf = values(0, 3) + values(3, 2) + values(5, 1)
    skipped: list[Skipped] = []
    assert [h.base_offset for _, h in scan(buf, skipped=skipped)] == [0, 3, 5]
    assert skipped == []


def test_scan_reports_a_truncated_tail_and_keeps_what_precedes_it() -> None:
    good = values(0, 3) + values(3, 2)
    torn = values(5, 4)[:-7]
    skipped: list[Skipped] = []
    assert [h.base_offset for _, h in scan(good + torn, skipped=skipped)] == [0, 3]
    assert skipped == [Skipped(len(good), len(torn), skipped[0].reason)]
    assert skipped[0].reason.startswith("truncated")


def test_scan_reports_a_header_cut_short_as_truncated() -> None:
    skipped: list[Skipped] = []
    assert len(list(scan(values(0, 1) + b"\x00" * 20, skipped=skipped))) == 1
    assert skipped[0].length == 20
    assert skipped[0].reason.startswith("truncated")


def test_scan_skips_a_batch_failing_its_crc_and_reads_on() -> None:
    first, bad, last = values(0, 3), bytearray(values(3, 3)), values(6, 3)
    bad[-3] ^= 0xFF  # inside the records: only the CRC can tell
    skipped: list[Skipped] = []
    headers = [h.base_offset for _, h in scan(first + bytes(bad) + last, skipped=skipped)]
    assert headers == [0, 6]
    assert skipped == [Skipped(len(first), len(bad), skipped[0].reason)]
    assert "CRC" in skipped[0].reason


def test_scan_without_crc_check_reads_a_damaged_batch() -> None:
    bad = bytearray(values(0, 3))
    bad[-3] ^= 0xFF
    skipped: list[Skipped] = []
    assert len(list(scan(bytes(bad), check_crc=False, skipped=skipped))) == 1
    assert skipped == []


def test_scan_resynchronises_after_garbage_between_batches() -> None:
    garbage = bytes(range(256)) * 3  # holds 0x02 bytes: candidates that must fail
    buf = values(100, 2) + garbage + values(102, 2)
    skipped: list[Skipped] = []
    assert [h.base_offset for _, h in scan(buf, base_offset=100, skipped=skipped)] == [100, 102]
    assert [(s.position, s.length) for s in skipped] == [(len(values(100, 2)), len(garbage))]
    assert skipped[0].reason.startswith("corrupt")


def test_scan_resynchronises_after_a_damaged_length_field() -> None:
    first = bytearray(values(0, 3))
    first[8:12] = (10**6).to_bytes(4, "big")  # batchLength past the end of the file
    rest = values(3, 3)
    skipped: list[Skipped] = []
    assert [h.base_offset for _, h in scan(bytes(first) + rest, skipped=skipped)] == [3]
    assert [(s.position, s.length) for s in skipped] == [(0, len(first))]
    assert skipped[0].reason.startswith("corrupt")


def test_scan_segment_of_an_empty_file_ends_at_its_base_offset(tmp_path: Path) -> None:
    write_segment(tmp_path, "t", 0, 0, [values(0, 5)])
    write_segment(tmp_path, "t", 0, 5, [])
    first, empty = (scan_segment(s) for s in plan([tmp_path]))
    assert (first.batches, first.records, first.first_offset, first.log_end_offset) == (1, 5, 0, 5)
    assert (empty.batches, empty.first_offset, empty.log_end_offset) == (0, None, 5)


def test_scan_segment_log_end_offset_follows_last_offset_delta_across_compaction_gaps(
    tmp_path: Path,
) -> None:
    # A compacted batch keeps its lastOffsetDelta: offsets 10 and 14 survive of 10..19.
    compacted = build_batch(
        [(b"a", b"1", (), T0), (b"b", b"2", (), T0)],
        base_offset=10,
        offset_deltas=[0, 4],
        last_offset_delta=9,
    )
    write_segment(tmp_path, "t", 0, 10, [compacted])
    (scanned,) = (scan_segment(s) for s in plan([tmp_path]))
    assert (scanned.records, scanned.log_end_offset) == (2, 20)


def test_scan_segment_with_record_check_reports_a_crc_valid_batch_that_does_not_decode(
    tmp_path: Path,
) -> None:
    # A batch whose CRC is right but whose record count is wrong: the framing checks pass.
    good = values(0, 2)
    lying = bytearray(values(2, 2))
    lying[57:61] = (5).to_bytes(4, "big")  # recordsCount, inside the CRC: recompute it
    from crc32c import crc32c

    lying[17:21] = crc32c(bytes(lying[21:])).to_bytes(4, "big")
    write_segment(tmp_path, "t", 0, 0, [good, bytes(lying)])
    (segment,) = plan([tmp_path])
    assert scan_segment(segment).skipped == []
    deep = scan_segment(segment, check="records")
    assert (deep.batches, deep.log_end_offset) == (1, 2)
    assert [(s.position, s.length) for s in deep.skipped] == [(len(good), len(lying))]
    assert deep.skipped[0].reason.startswith("records")
    skipped: list[Skipped] = []
    rows = [o for c in iter_columns(segment, skipped=skipped) for o in c.offset]
    assert rows == [0, 1]
    assert [s.position for s in skipped] == [len(good)]


# --- decoding ---------------------------------------------------------------------------


@pytest.mark.parametrize("codec", list(CompressionType))
def test_decode_columns_matches_decode_records_for_every_codec(codec: CompressionType) -> None:
    items = [(b"key-%d" % i, bytes(range(256)) * (i % 3) + b"x" * i) for i in range(40)]
    items[5] = (None, b"no key")
    items[6] = (b"tombstone", None)
    items[7] = (b"big" * 3000, b"x" * 20_000)  # lengths past two varint bytes
    buf = batch(0, items, compression=codec) + batch(
        40, items[:3], compression=codec, timestamp=T0 + 10**7
    )
    c = _decode_all(buf)
    assert _as_rows(c) == _canonical(buf)
    assert c.header_offsets == [0] * 44


def test_decode_columns_falls_back_for_headers() -> None:
    records = [(b"k", b"v", [("trace", b"t1"), ("n", None)], T0), (b"k2", b"v2", (), T0 + 1)]
    buf = build_batch(records, base_offset=7)
    c = _decode_all(buf)
    assert _as_rows(c) == _canonical(buf)
    assert c.header_offsets == [0, 2, 2]


def test_decode_columns_uses_max_timestamp_for_log_append_time() -> None:
    buf = build_batch(
        [(b"a", b"1", (), T0), (b"b", b"2", (), T0 + 5)], timestamp_type=1, max_timestamp=T0 + 99
    )
    c = _decode_all(buf)
    assert c.timestamp == [T0 + 99, T0 + 99]
    assert c.timestamp_type == [1, 1]


def test_decode_columns_flags_control_and_transactional_batches() -> None:
    data = batch(
        0, [(b"k", b"v")], producer_id=42, producer_epoch=3, base_sequence=0, is_transactional=True
    )
    marker = build_control_batch(
        ControlRecordType.COMMIT,
        producer_id=42,
        producer_epoch=3,
        coordinator_epoch=0,
        timestamp=T0,
        base_offset=1,
    )
    c = _decode_all(data + marker)
    assert c.offset == [0, 1]
    assert c.is_control == [False, True]
    assert c.is_transactional == [True, True]
    assert c.producer_id == [42, 42]
    assert c.producer_epoch == [3, 3]


def test_decode_columns_trims_records_outside_the_offset_range() -> None:
    buf = values(0, 10) + values(10, 10, compression=CompressionType.LZ4)
    assert _decode_all(buf, start_offset=7, end_offset=13).offset == [7, 8, 9, 10, 11, 12]


def test_decode_columns_raises_and_appends_nothing_for_undecodable_records() -> None:
    buf = bytearray(values(0, 2))
    buf[-1] = 0x7F  # the last record's headersCount: a count past the record's end
    out = Columns()
    ((pos, header),) = iter_batches(bytes(buf))
    with pytest.raises(KafkaError):
        decode_columns(bytes(buf), pos, header, out)
    assert len(out) == 0
    assert out.header_offsets == [0]


_records = st.lists(
    st.tuples(
        st.none() | st.binary(max_size=200),
        st.none() | st.binary(max_size=300),
        st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=8)), max_size=2),
        st.integers(min_value=-1, max_value=2**42),
    ),
    min_size=1,
    max_size=20,
)


@settings(max_examples=40, deadline=None)
@given(records=_records, codec=st.sampled_from(list(CompressionType)), base=st.integers(0, 2**40))
def test_decode_columns_agrees_with_decode_records(records: list, codec: int, base: int) -> None:
    buf = build_batch(records, base_offset=base, compression=codec)
    assert _as_rows(_decode_all(buf)) == _canonical(buf)


def test_a_segment_shortened_after_planning_is_reported_as_skipped(tmp_path: Path) -> None:
    path = write_segment(tmp_path, "t", 0, 0, [values(0, 3), values(3, 3)])
    (planned,) = plan([tmp_path])
    whole = len(values(0, 3))
    with path.open("r+b") as f:
        f.truncate(whole)
    shrunk = scan_segment(planned)
    assert (shrunk.records, shrunk.log_end_offset) == (3, 3)
    assert shrunk.skipped == [
        Skipped(whole, planned.size_bytes - whole, "gone: the file shrank after planning")
    ]


def test_a_planned_segment_that_cannot_be_opened_is_an_error_naming_it(tmp_path: Path) -> None:
    write_segment(tmp_path, "t", 0, 0, [values(0, 3)])
    second = write_segment(tmp_path, "t", 0, 3, [values(3, 3)])
    first_planned, second_planned = plan([tmp_path])
    second.unlink()
    assert scan_segment(first_planned).records == 3
    for read in (
        lambda: scan_segment(second_planned),
        lambda: list(iter_columns(second_planned, skipped=[])),
    ):
        with pytest.raises(UnreadableSegments) as caught:
            read()
        assert caught.value.failures == [(str(second), "No such file or directory")]
        message = str(caught.value)
        assert message.startswith(f"kmock-log: host {socket.gethostname()} could not open 1 ")
        assert f"{second} (No such file or directory)" in message
        assert "must be visible to every worker at the same path" in message


def test_unreadable_segments_message_is_found_in_a_longer_error_text() -> None:
    error = UnreadableSegments(
        [(f"/d/t-0/{i:020d}.log", "No such file or directory") for i in range(7)]
    )
    text = (
        "Job aborted due to stage failure: ... PythonException: Traceback (most recent call"
        f" last):\n  ...\npipeline.segments.UnreadableSegments: {error}\n\tat org.apache..."
    )
    message = UnreadableSegments.message_in(text)
    assert message == str(error)
    assert "could not open 7 planned segment files" in message
    assert "/d/t-0/00000000000000000004.log (No such file or directory); and 2 more." in message
    assert UnreadableSegments.message_in("Job aborted: java.lang.OutOfMemoryError") is None


def test_plan_gives_absolute_paths_for_a_relative_data_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_segment(tmp_path / "data", "t", 0, 0, [values(0, 3)])
    monkeypatch.chdir(tmp_path)
    (planned,) = plan(["data"])
    assert planned.path == str(path)
    assert Path(planned.path).is_absolute()
