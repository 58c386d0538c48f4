"""Compaction: the latest record per key survives, with its original offset."""

import pytest

from protocol.compression import CompressionType
from protocol.errors import ErrorCode, KafkaError
from protocol.records import decode_records, validate_batch
from storage import compact
from tests.storage.helpers import T0, log_records, make_batch

DAY = 24 * 60 * 60 * 1000


def write(log, *pairs, timestamp=T0, roll=True, **kwargs):
    """Append one batch of (key, value) pairs, in a segment of its own unless roll=False."""
    keys = [k for k, _ in pairs]
    values = [v for _, v in pairs]
    batch = make_batch(len(pairs), keys=keys, values=values, timestamp=timestamp, **kwargs)
    info = log.append(batch, wall_ms=T0)
    if roll:
        log.roll(wall_ms=T0)
    return info


@pytest.fixture
def compacted_log(open_log):
    def make(**config):
        config.setdefault("cleanup_policy", "compact")
        return open_log(**config)

    return make


def test_latest_record_per_key_survives_with_its_offset(compacted_log):
    log = compacted_log()
    write(log, (b"a", b"1"), (b"b", b"1"))  # 0, 1
    write(log, (b"a", b"2"), (b"c", b"1"))  # 2, 3
    write(log, (b"b", b"2"), (b"a", b"3"))  # 4, 5
    write(log, (b"d", b"1"), roll=False)  # 6: the active segment
    assert len(log.segments) == 4
    report = compact(log, T0)
    assert report.records_removed == 3
    assert log_records(log) == [(3, b"c", b"1"), (4, b"b", b"2"), (5, b"a", b"3"), (6, b"d", b"1")]
    assert log.log_end_offset == 7
    assert log.log_start_offset == 0


def test_reads_after_compaction_skip_the_removed_offsets(compacted_log):
    log = compacted_log()
    write(log, (b"a", b"1"), (b"a", b"2"))
    write(log, (b"a", b"3"))
    write(log, (b"b", b"1"))
    write(log, (b"b", b"2"))
    compact(log, T0)
    first = log.read_bytes(0, 10_000)
    assert [r.offset for r in decode_records(first)] == [2]


def test_key_rewritten_in_the_active_segment_supersedes_older_copies(compacted_log):
    log = compacted_log()
    write(log, (b"a", b"1"))
    write(log, (b"b", b"1"))
    write(log, (b"a", b"2"), roll=False)
    assert log.segments[-1].base_offset == 2
    compact(log, T0)
    assert log_records(log) == [(1, b"b", b"1"), (2, b"a", b"2")]


def test_a_batch_that_keeps_all_its_records_is_copied_byte_for_byte(compacted_log):
    log = compacted_log()
    write(log, (b"a", b"1"), (b"b", b"1"))
    write(log, (b"c", b"1"))
    write(log, (b"d", b"1"))
    write(log, (b"e", b"1"))
    before = b"".join(s.read(0, s.size) for s in log.segments)
    report = compact(log, T0)
    assert report.records_removed == 0
    assert len(log.segments) == 2  # the three closed segments merged, their bytes unchanged
    assert b"".join(s.read(0, s.size) for s in log.segments) == before


def test_partly_kept_batch_keeps_codec_offsets_and_last_offset_delta(compacted_log):
    log = compacted_log()
    pairs = [(b"k%d" % i, b"v") for i in range(5)]
    write(log, *pairs, compression=CompressionType.GZIP)  # 0..4
    write(log, (b"k1", b"new"), (b"k3", b"new"))  # 5, 6
    write(log, (b"z", b"z"))
    compact(log, T0)
    header = validate_batch(log.read_bytes(0, 100_000))
    assert (header.base_offset, header.last_offset, header.records_count) == (0, 4, 3)
    assert header.compression == CompressionType.GZIP
    assert [o for o, _, _ in log_records(log)] == [0, 2, 4, 5, 6, 7]


def test_recent_tombstones_stay_and_old_ones_go(compacted_log):
    log = compacted_log(delete_retention_ms=DAY)
    write(log, (b"a", b"1"), (b"b", b"1"))
    write(log, (b"a", None))  # tombstone for a, timestamp T0
    write(log, (b"c", b"1"), timestamp=T0 + 2 * DAY)
    write(log, (b"d", b"1"), timestamp=T0 + 2 * DAY)
    compact(log, T0 + DAY // 2)
    assert (2, b"a", None) in log_records(log)
    report = compact(log, T0 + 3 * DAY // 2)
    assert report.tombstones_removed == 1
    assert [k for _, k, _ in log_records(log)] == [b"b", b"c", b"d"]


def test_records_without_a_key_are_dropped(compacted_log):
    log = compacted_log()
    write(log, (None, b"x"), (b"a", b"1"))
    write(log, (None, b"y"))
    write(log, (b"b", b"1"))
    write(log, (b"c", b"1"))
    compact(log, T0)
    assert [k for _, k, _ in log_records(log)] == [b"a", b"b", b"c"]


def test_compacted_log_survives_reopen(compacted_log):
    log = compacted_log()
    for i in range(12):
        write(log, (b"k%d" % (i % 3), b"v%d" % i), roll=i % 4 == 3)
    compact(log, T0)
    after = log_records(log)
    log.close()
    reopened = compacted_log()
    assert reopened.recovery_report == []
    assert log_records(reopened) == after
    assert reopened.append(make_batch(), wall_ms=T0).base_offset == 12


def test_shrunk_segments_merge_on_the_next_pass(compacted_log):
    size = len(make_batch(1, keys=[b"same-key"], values=[b"v10"]))
    log = compacted_log(segment_bytes=size * 2)
    for i in range(20):
        write(log, (b"same-key", b"v%d" % i), roll=False)
    assert len(log.segments) == 10
    # Groups are formed from the sizes before cleaning (as Kafka's are): full segments are
    # cleaned one by one, and merge once they have shrunk.
    first = compact(log, T0)
    assert (first.segments_cleaned, first.segments_after, first.bytes_after) == (9, 9, 0)
    second = compact(log, T0)
    assert (second.segments_cleaned, second.segments_after) == (9, 1)
    assert len(log.segments) == 2
    # the active segment (18, 19) is never cleaned
    assert log_records(log) == [(18, b"same-key", b"v18"), (19, b"same-key", b"v19")]


def test_producer_last_batch_stays_as_an_empty_batch(compacted_log):
    log = compacted_log()
    write(log, (b"a", b"1"), producer_id=7, producer_epoch=0, base_sequence=0)  # 0
    write(log, (b"a", b"2"))  # 1: supersedes the producer's only record
    write(log, (b"b", b"1"))
    write(log, (b"c", b"1"))
    compact(log, T0)
    assert [o for o, _, _ in log_records(log)] == [1, 2, 3]
    empty = validate_batch(log.read_bytes(0, 1000))
    assert (empty.records_count, empty.producer_id, empty.base_sequence) == (0, 7, 0)
    log.close()
    log = compacted_log()
    retry = log.append(
        make_batch(1, keys=[b"a"], values=[b"1"], producer_id=7, producer_epoch=0, base_sequence=0),
        wall_ms=T0,
    )
    assert (retry.base_offset, retry.duplicate) == (0, True)


def test_nothing_to_do_for_delete_policy_or_a_single_segment(compacted_log, open_log):
    log = compacted_log()
    write(log, (b"a", b"1"), (b"a", b"2"), roll=False)
    assert compact(log, T0).segments_cleaned == 0  # only the active segment
    log.close()
    delete_policy = open_log()
    for _ in range(4):
        write(delete_policy, (b"a", b"1"))
    assert compact(delete_policy, T0).segments_cleaned == 0


def test_a_read_slice_taken_before_compaction_still_reads_the_old_bytes(compacted_log):
    log = compacted_log()
    write(log, (b"a", b"1"), (b"a", b"2"))
    write(log, (b"b", b"1"))
    write(log, (b"b", b"2"))
    piece = log.read(0, 100_000)
    old = piece.read_bytes()
    compact(log, T0)
    assert piece.read_bytes() == old


def test_storage_failure_during_compaction_leaves_the_log_as_it_was(
    compacted_log, monkeypatch, log_dir
):
    log = compacted_log()
    for i in range(6):
        write(log, (b"k", b"v%d" % i))
    before = log_records(log)

    def fail(*args):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("storage.compaction.write_all", fail)
    with pytest.raises(KafkaError) as raised:
        compact(log, T0)
    assert raised.value.code == ErrorCode.KAFKA_STORAGE_ERROR
    assert log_records(log) == before
    assert not list(log_dir.glob("*.cleaned"))
