"""Idempotent producers: retries acknowledged with their original offsets, sequence and
epoch checks, state rebuilt from the log on open."""

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import ControlRecordType, build_control_batch, parse_batch_header
from storage import ProducerStateManager
from tests.storage.helpers import T0, log_records, make_batch

PID = 1000


def produce(log, sequence, count=1, *, epoch=0, producer_id=PID):
    batch = make_batch(count, producer_id=producer_id, producer_epoch=epoch, base_sequence=sequence)
    return log.append(batch, wall_ms=T0)


def refused(log, sequence, count=1, *, epoch=0):
    with pytest.raises(KafkaError) as raised:
        produce(log, sequence, count, epoch=epoch)
    return raised.value.code


def test_in_sequence_batches_are_appended(open_log):
    log = open_log()
    assert [produce(log, seq, 2).base_offset for seq in (0, 2, 4)] == [0, 2, 4]


def test_retry_of_the_last_batch_gets_its_original_offsets_and_is_not_written(open_log):
    log = open_log()
    produce(log, 0, 3)
    first = produce(log, 3, 2)
    retry = produce(log, 3, 2)
    assert (retry.base_offset, retry.last_offset, retry.duplicate) == (3, 4, True)
    assert (first.base_offset, first.duplicate) == (3, False)
    assert log.log_end_offset == 5


def test_retry_of_any_of_the_last_five_batches_is_recognised(open_log):
    log = open_log()
    for seq in range(6):
        produce(log, seq)
    assert produce(log, 1).base_offset == 1  # batches 1..5 are cached
    assert produce(log, 1).duplicate
    assert refused(log, 0) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # too old: not cached
    assert log.log_end_offset == 6


def test_gap_in_sequence_is_out_of_order(open_log):
    log = open_log()
    produce(log, 0, 2)
    assert refused(log, 3) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert log.log_end_offset == 2
    assert produce(log, 2).base_offset == 2


def test_lower_epoch_is_fenced(open_log):
    log = open_log()
    produce(log, 0, epoch=3)
    assert refused(log, 1, epoch=2) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_new_epoch_must_start_at_sequence_zero(open_log):
    log = open_log()
    produce(log, 0, 5, epoch=0)
    assert refused(log, 5, epoch=1) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(log, 0, epoch=1).base_offset == 5
    assert refused(log, 1, epoch=0) == ErrorCode.INVALID_PRODUCER_EPOCH


def test_unknown_producer_may_start_at_any_sequence_kip_360(open_log):
    log = open_log()
    assert produce(log, 42).base_offset == 0
    assert produce(log, 43).base_offset == 1


def test_sequence_wraps_after_int32_max(open_log):
    log = open_log()
    produce(log, 2**31 - 2, 2)  # last sequence 2**31 - 1
    assert produce(log, 0).base_offset == 2


def test_non_idempotent_batches_are_not_checked(open_log):
    log = open_log()
    log.append(make_batch(), wall_ms=T0)
    log.append(make_batch(), wall_ms=T0)
    assert log.log_end_offset == 2


def test_state_is_rebuilt_from_the_log_on_open(open_log):
    size = len(make_batch(1, producer_id=PID, producer_epoch=0, base_sequence=0))
    log = open_log(segment_bytes=size * 2)
    for seq in range(4):
        produce(log, seq)
    log.close()
    log = open_log(segment_bytes=size * 2)
    retry = produce(log, 3)
    assert (retry.base_offset, retry.duplicate) == (3, True)
    assert refused(log, 5) == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert produce(log, 4).base_offset == 4


def test_one_call_with_two_batches_of_one_producer_chains(open_log):
    log = open_log()
    batches = [
        make_batch(2, producer_id=PID, producer_epoch=0, base_sequence=0),
        make_batch(3, producer_id=PID, producer_epoch=0, base_sequence=2),
    ]
    infos = log.append_batches(batches, wall_ms=T0)
    assert [(i.base_offset, i.last_offset) for i in infos] == [(0, 1), (2, 4)]


def test_a_refused_batch_leaves_the_call_unwritten_and_the_state_unchanged(open_log):
    log = open_log()
    batches = [
        make_batch(2, producer_id=PID, producer_epoch=0, base_sequence=0),
        make_batch(1, producer_id=PID, producer_epoch=0, base_sequence=7),
    ]
    with pytest.raises(KafkaError):
        log.append_batches(batches, wall_ms=T0)
    assert log.log_end_offset == 0
    assert log_records(log) == []
    assert produce(log, 0, 2).base_offset == 0  # sequence 0 was not taken by the failed call


def test_retention_removes_the_state_of_producers_whose_batches_are_gone(open_log):
    size = len(make_batch(1, producer_id=PID, producer_epoch=0, base_sequence=0))
    log = open_log(segment_bytes=size, retention_ms=1000)
    produce(log, 0)
    log.append(make_batch(timestamp=T0 + 10_000), wall_ms=T0)
    assert log.apply_retention(T0 + 5000) == 1
    assert produce(log, 17).base_offset == 2  # no state any more: any sequence


def test_transaction_marker_bumps_the_epoch_without_a_sequence():
    manager = ProducerStateManager()
    manager.replay(
        parse_batch_header(make_batch(3, producer_id=PID, producer_epoch=0, base_sequence=0))
    )
    marker = build_control_batch(
        ControlRecordType.COMMIT,
        producer_id=PID,
        producer_epoch=1,
        coordinator_epoch=0,
        timestamp=T0,
    )
    append = manager.begin_append()
    assert append.check(parse_batch_header(marker)) is None
    append.add(parse_batch_header(marker))
    append.commit()
    assert manager.producers[PID].producer_epoch == 1
    assert manager.producers[PID].batches == []
