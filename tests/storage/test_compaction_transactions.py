"""Compaction of a log with transactions, as Kafka's cleaner does it: records of aborted
transactions go and never hide a committed value, markers stay, nothing at or after the
last stable offset decides what is kept, and the aborted-transaction index follows."""

from __future__ import annotations

from protocol.records import ControlRecordType, build_control_batch
from storage import compact
from tests.storage.helpers import T0, log_records, make_batch

P1, P2 = 7, 8
ABORT_KEY, COMMIT_KEY = b"\x00\x00\x00\x00", b"\x00\x00\x00\x01"  # version 0, type


def txn(producer_id: int, seq: int, key: bytes, value: bytes) -> bytes:
    return make_batch(
        keys=[key],
        values=[value],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=seq,
        is_transactional=True,
    )


def marker(producer_id: int, control_type: ControlRecordType) -> bytes:
    return build_control_batch(
        control_type, producer_id=producer_id, producer_epoch=0, coordinator_epoch=0, timestamp=T0
    )


def test_aborted_records_go_and_do_not_hide_the_committed_value(open_log):
    log = open_log(cleanup_policy="compact")
    log.append(txn(P1, 0, b"k", b"committed"), wall_ms=T0)  # 0
    log.append(marker(P1, ControlRecordType.COMMIT), wall_ms=T0)  # 1
    log.append(txn(P1, 1, b"k", b"aborted"), wall_ms=T0)  # 2
    log.append(marker(P1, ControlRecordType.ABORT), wall_ms=T0)  # 3
    log.roll(wall_ms=T0)
    log.append(make_batch(keys=[b"other"], values=[b"x"]), wall_ms=T0)  # 4, active segment
    report = compact(log, T0)
    assert report.records_removed == 1
    assert log_records(log) == [
        (0, b"k", b"committed"),
        (1, COMMIT_KEY, bytes(6)),  # the COMMIT marker (value: version 0, epoch 0)
        (3, ABORT_KEY, bytes(6)),  # the ABORT marker stays
        (4, b"other", b"x"),
    ]
    # The index still says where an aborted transaction ended.
    assert [
        (a.producer_id, a.last_offset) for a in log.transactions.aborted_transactions(0, 5)
    ] == [(P1, 3)]
    assert log.transactions.last_stable_offset(log.high_watermark) == 5
    log.close()


def test_nothing_from_the_last_stable_offset_on_decides_what_stays(open_log):
    log = open_log(cleanup_policy="compact")
    log.append(make_batch(keys=[b"k"], values=[b"v1"]), wall_ms=T0)  # 0
    log.roll(wall_ms=T0)
    log.append(txn(P2, 0, b"k", b"open"), wall_ms=T0)  # 1: a transaction still open
    log.roll(wall_ms=T0)
    log.append(make_batch(keys=[b"z"], values=[b"z"]), wall_ms=T0)  # 2
    assert log.transactions.last_stable_offset(log.high_watermark) == 1
    assert compact(log, T0).records_removed == 0
    assert [v for _, _, v in log_records(log)] == [b"v1", b"open", b"z"]
    # Once it aborts, v1 is still the value of k and the aborted record can go.
    log.append(marker(P2, ControlRecordType.ABORT), wall_ms=T0)  # 3
    log.roll(wall_ms=T0)
    log.append(make_batch(keys=[b"y"], values=[b"y"]), wall_ms=T0)  # 4
    compact(log, T0)
    assert [(o, v) for o, k, v in log_records(log) if k == b"k"] == [(0, b"v1")]
    log.close()
