"""Open transactions per partition: the last stable offset, and the aborted-transaction
entries that markers produce, tracked live and rebuilt from a real log's segments."""

import pytest

from protocol.errors import ErrorCode, KafkaError
from protocol.records import ControlRecordType, build_control_batch, parse_batch_header
from storage.transactions import (
    TransactionTracker,
    marker_type,
    replay_segment,
)
from storage.txn_index import AbortedTxn, TransactionIndex, collect_aborted_across
from tests.storage.helpers import T0, make_batch

P1, P2, P3 = 1000, 2000, 3000
COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT


def data(producer_id, base_offset, count=1, *, transactional=True, sequence=0):
    batch = make_batch(
        count,
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=sequence,
        is_transactional=transactional,
        base_offset=base_offset,
    )
    return parse_batch_header(batch)


def marker(producer_id, offset, control_type):
    batch = build_control_batch(
        control_type,
        producer_id=producer_id,
        producer_epoch=0,
        coordinator_epoch=0,
        timestamp=T0,
        base_offset=offset,
    )
    return parse_batch_header(batch)


def test_interleaved_transactions_give_kafkas_lso_and_abort_entries():
    tracker = TransactionTracker()
    assert tracker.observe(data(P1, 0, 2)) is None  # P1 opens at 0
    assert tracker.observe(data(P2, 2)) is None  # P2 opens at 2
    assert tracker.observe(data(P1, 3)) is None  # still P1's first transaction
    assert tracker.first_unstable_offset() == 0
    assert tracker.last_stable_offset(high_watermark=4) == 0
    # P1 aborts at 4: the LSO after it is P2's first offset.
    assert tracker.observe(marker(P1, 4, ABORT), ABORT) == AbortedTxn(P1, 0, 4, 2)
    assert tracker.last_stable_offset(high_watermark=5) == 2
    assert tracker.observe(marker(P2, 5, COMMIT), COMMIT) is None
    assert tracker.last_stable_offset(high_watermark=6) == 6
    assert tracker.ongoing() == {}


def test_the_lso_is_capped_by_the_high_watermark():
    tracker = TransactionTracker()
    tracker.observe(data(P1, 10))
    assert tracker.last_stable_offset(high_watermark=5) == 5
    assert TransactionTracker().last_stable_offset(high_watermark=7) == 7


def test_an_abort_with_nothing_open_is_an_empty_transaction_at_the_marker():
    tracker = TransactionTracker()
    assert tracker.observe(marker(P1, 7, ABORT), ABORT) == AbortedTxn(P1, 7, 7, 8)
    assert tracker.observe(marker(P1, 8, COMMIT), COMMIT) is None


def test_non_transactional_batches_do_not_open_transactions():
    tracker = TransactionTracker()
    assert tracker.observe(data(P1, 0, transactional=False)) is None
    assert tracker.observe(data(-1, 1, transactional=False, sequence=-1)) is None
    assert tracker.first_unstable_offset() is None


def test_a_marker_must_come_with_its_type():
    with pytest.raises(ValueError, match="without its type"):
        TransactionTracker().observe(marker(P1, 0, COMMIT))


def test_evict_and_truncate_forget_transactions_by_first_offset():
    tracker = TransactionTracker()
    tracker.observe(data(P1, 0))
    tracker.observe(data(P2, 5))
    tracker.observe(data(P3, 9))
    tracker.evict_below(1)
    assert tracker.ongoing() == {P2: 5, P3: 9}
    tracker.truncate_to(9)
    assert tracker.ongoing() == {P2: 5}


def test_marker_type_reads_the_record_key_and_refuses_other_batches():
    assert (
        marker_type(
            build_control_batch(
                ABORT, producer_id=1, producer_epoch=0, coordinator_epoch=0, timestamp=T0
            )
        )
        is ABORT
    )
    with pytest.raises(KafkaError) as e:
        marker_type(make_batch(1))
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE


# --- with a real log -------------------------------------------------------------------------


def _client_batches():
    """P1 and P2 interleave; P1 aborts, P2 commits, P3 aborts after a segment roll."""

    def txn(pid, seq):
        return make_batch(
            1, producer_id=pid, producer_epoch=0, base_sequence=seq, is_transactional=True
        )

    def end(pid, kind):
        return build_control_batch(
            kind, producer_id=pid, producer_epoch=0, coordinator_epoch=0, timestamp=T0
        )

    return [
        txn(P1, 0),  # 0
        txn(P2, 0),  # 1
        txn(P1, 1),  # 2
        end(P1, ABORT),  # 3: P1 aborted, LSO then 1 (P2 open)
        make_batch(1),  # 4: not transactional
        end(P2, COMMIT),  # 5
        txn(P3, 0),  # 6
        "roll",
        txn(P3, 1),  # 7
        end(P3, ABORT),  # 8
    ]


def _write(log, tracker):
    """Append as Log would, observing each batch after it is written; returns the entries
    per segment base offset."""
    entries = {}
    for batch in _client_batches():
        if batch == "roll":
            log.roll(wall_ms=T0)
            continue
        info = log.append(batch, wall_ms=T0)
        header = parse_batch_header(batch)._replace(base_offset=info.base_offset)
        kind = marker_type(batch) if header.is_control else None
        entry = tracker.observe(header, kind)
        if entry is not None:
            entries.setdefault(log.segments[-1].base_offset, []).append(entry)
    return entries


def _replay(log):
    tracker = TransactionTracker()
    entries = {}
    for segment in log.segments:
        batches = (
            (header, lambda s=segment, p=position, h=header: s.read(p, h.size))
            for position, header in segment.iter_batches()
        )
        found = replay_segment(tracker, batches)
        if found:
            entries[segment.base_offset] = found
    return tracker, entries


def test_entries_observed_while_writing_are_rebuilt_from_the_segments_after_a_restart(open_log):
    log = open_log()
    tracker = TransactionTracker()
    written = _write(log, tracker)
    assert written == {
        0: [AbortedTxn(P1, 0, 3, 1)],
        log.segments[-1].base_offset: [AbortedTxn(P3, 6, 8, 9)],
    }
    assert log.segments[-1].base_offset == 7
    log.close()
    reopened = open_log()
    rebuilt_tracker, rebuilt = _replay(reopened)
    assert rebuilt == written
    assert rebuilt_tracker.ongoing() == tracker.ongoing() == {}
    reopened.close()


def test_an_open_transaction_holds_the_lso_across_a_restart(open_log):
    log = open_log()
    log.append(make_batch(1), wall_ms=T0)
    log.append(
        make_batch(2, producer_id=P1, producer_epoch=0, base_sequence=0, is_transactional=True),
        wall_ms=T0,
    )
    log.append(make_batch(1), wall_ms=T0)
    log.close()
    reopened = open_log()
    tracker, _ = _replay(reopened)
    assert tracker.last_stable_offset(reopened.high_watermark) == 1
    reopened.close()


def test_indexes_built_from_the_log_answer_a_read_committed_fetch(open_log, log_dir):
    log = open_log()
    written = _write(log, TransactionTracker())
    indexes = []
    for segment in log.segments:
        index = TransactionIndex(log_dir, segment.base_offset)
        index.reset(written.get(segment.base_offset, []))
        assert index.sync_file() is None  # the log wrote the same entries as it appended
        indexes.append(index)
    assert sorted(p.name for p in log_dir.glob("*.txnindex")) == [
        "00000000000000000000.txnindex",
        "00000000000000000007.txnindex",
    ]
    # A fetch of offsets 0..4 sees P1's aborted transaction and stops searching there.
    assert collect_aborted_across(indexes, 0, 5) == [AbortedTxn(P1, 0, 3, 1)]
    # From 4 on, P1's ended before the range; P3's, in the next segment, overlaps it.
    assert collect_aborted_across(indexes, 4, 9) == [AbortedTxn(P3, 6, 8, 9)]
    for index in indexes:
        index.close()
    log.close()


# --- PartitionTransactions: what Log holds -------------------------------------------------------


def _append_all(log, transactions):
    for batch in _client_batches():
        if batch == "roll":
            log.roll(wall_ms=T0)
            continue
        log.append(batch, wall_ms=T0)  # the log shows it to log.transactions


def test_partition_transactions_write_index_files_and_answer_fetches(open_log, log_dir):
    log = open_log()
    transactions = log.transactions
    assert transactions.recover(log.segments) == []
    _append_all(log, transactions)
    assert sorted(p.name for p in log_dir.glob("*.txnindex")) == [
        "00000000000000000000.txnindex",
        "00000000000000000007.txnindex",
    ]
    assert transactions.index(0).read_file() == [AbortedTxn(P1, 0, 3, 1)]
    assert transactions.last_stable_offset(log.high_watermark) == log.high_watermark
    assert transactions.aborted_transactions(0, 5) == [AbortedTxn(P1, 0, 3, 1)]
    assert transactions.aborted_transactions(7, 9) == [AbortedTxn(P3, 6, 8, 9)]
    assert transactions.aborted_transactions(4, 6) == []
    transactions.flush()
    transactions.close()
    log.close()


def test_recovery_rebuilds_and_repairs_the_index_files(open_log, log_dir):
    log = open_log()
    transactions = log.transactions
    _append_all(log, transactions)
    transactions.close()
    log.close()
    (log_dir / "00000000000000000007.txnindex").unlink()
    (log_dir / "00000000000000000000.txnindex").write_bytes(b"\xff" * 34)
    (log_dir / "00000000000000000099.txnindex").write_bytes(b"")
    reopened = open_log()
    again = reopened.transactions
    assert [e.reason for e in reopened.recovery_report if e.action == "index rebuilt"] == [
        "00000000000000000000.txnindex: inconsistent (34 bytes on disk, 34 expected)",
        "00000000000000000007.txnindex: missing",
        "00000000000000000099.txnindex: belongs to no segment",
    ]
    assert again.index(0).read_file() == [AbortedTxn(P1, 0, 3, 1)]
    assert again.index(7).read_file() == [AbortedTxn(P3, 6, 8, 9)]
    assert again.recover(reopened.segments) == []  # now everything is right
    again.close()
    reopened.close()


def test_an_open_transaction_across_a_restart_holds_the_lso_until_its_marker(open_log, log_dir):
    log = open_log()
    transactions = log.transactions
    first = make_batch(2, producer_id=P1, producer_epoch=0, base_sequence=0, is_transactional=True)
    log.append(make_batch(1), wall_ms=T0)
    log.append(first, wall_ms=T0)
    assert transactions.last_stable_offset(log.high_watermark) == 1
    log.close()
    reopened = open_log()
    again = reopened.transactions
    assert again.last_stable_offset(reopened.high_watermark) == 1
    abort = build_control_batch(
        ABORT, producer_id=P1, producer_epoch=0, coordinator_epoch=0, timestamp=T0
    )
    reopened.append(abort, wall_ms=T0)
    assert again.last_stable_offset(reopened.high_watermark) == reopened.high_watermark == 4
    assert again.aborted_transactions(1, 4) == [AbortedTxn(P1, 1, 3, 4)]
    again.close()
    reopened.close()


def test_removed_segments_take_their_index_and_evicted_transactions_with_them(open_log, log_dir):
    log = open_log()
    transactions = log.transactions
    _append_all(log, transactions)
    transactions.remove_segments([0], log_start_offset=7)
    assert not (log_dir / "00000000000000000000.txnindex").exists()
    assert transactions.aborted_transactions(7, 9) == [AbortedTxn(P3, 6, 8, 9)]
    transactions.remove_segments([3], log_start_offset=7)  # no such index: nothing to do
    transactions.close()
    log.close()
