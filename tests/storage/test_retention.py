"""Retention: whole segments go by age (largest timestamp) or by total size, oldest first."""

import os

import pytest

from protocol.errors import ErrorCode, KafkaError
from tests.storage.helpers import T0, make_batch

SIZE = len(make_batch())


@pytest.fixture
def four_segments(open_log):
    """Eight one-record batches, two per segment, timestamps T0, T0+1000, ..., T0+7000."""

    def make(**config):
        config.setdefault("segment_bytes", SIZE * 2)
        log = open_log(**config)
        for i in range(8):
            log.append(make_batch(timestamp=T0 + 1000 * i), wall_ms=T0)
        assert [s.base_offset for s in log.segments] == [0, 2, 4, 6]
        return log

    return make


def test_segments_older_than_retention_ms_are_deleted(four_segments, log_dir):
    log = four_segments(retention_ms=10_000)
    # segment 0 ends at T0+1000, segment 1 at T0+3000: at T0+13_500 both are more than 10 s old
    assert log.apply_retention(T0 + 13_500) == 2
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.log_start_offset == 4
    assert not (log_dir / "00000000000000000000.log").exists()
    assert not (log_dir / "00000000000000000002.index").exists()
    with pytest.raises(KafkaError) as raised:
        log.read(3, 1000)
    assert raised.value.code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_exactly_retention_ms_old_is_kept(four_segments):
    log = four_segments(retention_ms=10_000)
    assert log.apply_retention(T0 + 11_000) == 0  # Kafka deletes when strictly older


def test_deletion_stops_at_the_first_segment_that_may_stay(open_log):
    log = open_log(segment_bytes=SIZE, retention_ms=10_000)
    for ts in (T0, T0 + 50_000, T0):  # the middle segment is young
        log.append(make_batch(timestamp=ts), wall_ms=T0)
    log.append(make_batch(timestamp=T0 + 50_000), wall_ms=T0)
    assert log.apply_retention(T0 + 20_000) == 1
    assert [s.base_offset for s in log.segments] == [1, 2, 3]


def test_size_retention_deletes_oldest_until_under_retention_bytes(four_segments):
    log = four_segments(retention_bytes=SIZE * 5, retention_ms=-1)
    assert log.apply_retention(T0) == 1  # 8 -> 6 batches; deleting one more would leave 4 < 5
    assert log.size_bytes == SIZE * 6
    assert log.log_start_offset == 2


def test_when_everything_expired_the_log_rolls_and_keeps_its_end_offset(four_segments, log_dir):
    log = four_segments(retention_ms=1000)
    assert log.apply_retention(T0 + 100_000) == 4
    assert [s.base_offset for s in log.segments] == [8]
    assert (log.log_start_offset, log.log_end_offset) == (8, 8)
    assert log.read_bytes(8, 1000) == b""
    assert log.append(make_batch(), wall_ms=T0).base_offset == 8
    log.close()
    reopened_names = sorted(p.name for p in log_dir.iterdir() if p.suffix == ".log")
    assert reopened_names == ["00000000000000000008.log"]


def test_infinite_retention_keeps_everything(four_segments):
    log = four_segments(retention_ms=-1)
    assert log.apply_retention(T0 + 10**12) == 0


def test_compact_only_topics_are_not_deleted_by_age(four_segments):
    log = four_segments(retention_ms=1000, cleanup_policy="compact")
    assert log.apply_retention(T0 + 100_000) == 0


def test_log_start_offset_survives_reopen(four_segments, open_log):
    log = four_segments(retention_ms=10_000)
    log.apply_retention(T0 + 13_500)
    log.close()
    assert open_log(segment_bytes=SIZE * 2).log_start_offset == 4


def test_segment_without_timestamps_ages_by_file_mtime(open_log, log_dir):
    log = open_log(segment_bytes=SIZE, retention_ms=10_000)
    log.append(make_batch(timestamp=-1), wall_ms=T0)  # a batch with no timestamps
    log.append(make_batch(timestamp=T0 + 100_000), wall_ms=T0)
    old = (T0 - 60_000) / 1000
    os.utime(log_dir / "00000000000000000000.log", (old, old))
    assert log.apply_retention(T0) == 1


def test_retention_also_drops_segments_below_a_delete_records_start(four_segments):
    log = four_segments(retention_ms=-1)
    log.advance_log_start_offset(5)
    assert [s.base_offset for s in log.segments] == [4, 6]
    assert log.apply_retention(T0) == 0
