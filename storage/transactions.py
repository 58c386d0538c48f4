"""Open transactions of one partition: the last stable offset and the aborted-transaction
entries markers produce (Kafka's ProducerStateManager, for its transactional part).

A transactional data batch opens its producer's transaction at the batch's base offset
unless one is already open; a COMMIT or ABORT marker (a control batch) closes it. The first
unstable offset is the first offset of the earliest open transaction, and the last stable
offset (LSO) is that, or the high watermark when it is lower: read_committed consumers read
no further.

An ABORT marker yields an `AbortedTxn` for the `.txnindex` of the segment the marker lands
in: the transaction's first offset, the marker's offset, and the LSO once it is closed
(Kafka's lastStableOffset(completedTxn): the first offset of the earliest other open
transaction, else the marker's offset + 1). A marker for a producer with no open
transaction (a transaction that wrote nothing here, or a marker written again after a
restart) closes an empty one starting at the marker, as Kafka's appendEndTxnMarker does.

The tracker is pure: it sees headers (and a marker's type, read from its record key) and
keeps no files. `PartitionTransactions` is what `Log` holds: the tracker plus one
`TransactionIndex` per segment, rebuilt from the segments on recovery, appended to after
each write, searched by read_committed fetches. Log calls it at a few points:

    open:        self.transactions = PartitionTransactions(self.path)
                 reports = self.transactions.recover(self._segments)      # after recovery
    append:      self.transactions.on_append(active.base_offset, written)  # after the write
    fetch:       log.transactions.last_stable_offset(log.high_watermark)
                 log.transactions.aborted_transactions(fetch_offset, upper_bound_offset)
    describe:    active_producers(log.producer_state.producers, log.transactions.tracker)
    retention:   self.transactions.remove_segments(bases, self._log_start_offset)
    truncation:  self.transactions.recover(self._segments)                 # rebuilt
    flush/close: self.transactions.flush() / close()
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

from protocol.compression import BytesLike
from protocol.control_records import read_txn_marker
from protocol.records import BatchHeader, ControlRecordType
from storage.layout import TXN_INDEX_SUFFIX, parse_segment_name
from storage.producer_state import ProducerEntry
from storage.txn_index import (
    AbortedTxn,
    TransactionIndex,
    collect_aborted_across,
)

__all__ = [
    "ActiveProducer",
    "CompletedTxn",
    "PartitionTransactions",
    "TransactionTracker",
    "active_producers",
    "marker_type",
    "replay_segment",
]


class CompletedTxn(NamedTuple):
    """A transaction a marker closed (Kafka's CompletedTxn)."""

    producer_id: int
    first_offset: int
    last_offset: int  # the marker's offset
    is_aborted: bool


def marker_type(batch: BytesLike) -> ControlRecordType:
    """The type of the transaction marker at the start of `batch` (its offsets may be the
    client's or the log's: only the record key is read).

    Raises:
        KafkaError: CORRUPT_MESSAGE for a batch that is not a well-formed marker.
    """
    return read_txn_marker(batch).control_type


class TransactionTracker:
    def __init__(self) -> None:
        # producer id -> first offset of its open transaction, in order of first offset
        # (producers open transactions in offset order, and a dict keeps insertion order).
        self._ongoing: dict[int, int] = {}
        # producer id -> coordinator epoch of its last marker.
        self._coordinator_epochs: dict[int, int] = {}

    def ongoing(self) -> dict[int, int]:
        """Open transactions: producer id -> first offset (a copy)."""
        return dict(self._ongoing)

    def first_unstable_offset(self) -> int | None:
        """The first offset of the earliest open transaction, if any."""
        return next(iter(self._ongoing.values()), None)

    def last_stable_offset(self, high_watermark: int) -> int:
        """What read_committed consumers may read up to (exclusive)."""
        first = self.first_unstable_offset()
        return high_watermark if first is None else min(first, high_watermark)

    def observe(
        self,
        header: BatchHeader,
        control_type: ControlRecordType | None = None,
        coordinator_epoch: int = -1,
    ) -> AbortedTxn | None:
        """Account for one batch just written, with its final offsets.

        Args:
          header: the batch's header as stored (base offset assigned).
          control_type: for a transaction marker, its type (see `marker_type`).
          coordinator_epoch: for a marker, the coordinator epoch it carries (what
            DescribeProducers reports per producer).

        Returns:
          The entry to append to the `.txnindex` of the segment holding the batch, for an
          ABORT marker; else None.
        """
        if not header.is_transactional:
            return None
        producer_id = header.producer_id
        if not header.is_control:
            self._ongoing.setdefault(producer_id, header.base_offset)
            return None
        if control_type is None:
            raise ValueError(f"marker at {header.base_offset} observed without its type")
        self._coordinator_epochs[producer_id] = coordinator_epoch
        completed = CompletedTxn(
            producer_id,
            self._ongoing.get(producer_id, header.base_offset),
            header.base_offset,
            control_type is ControlRecordType.ABORT,
        )
        entry = None
        if completed.is_aborted:
            entry = AbortedTxn(
                producer_id,
                completed.first_offset,
                completed.last_offset,
                self._stable_after(completed),
            )
        self._ongoing.pop(producer_id, None)
        return entry

    def _stable_after(self, completed: CompletedTxn) -> int:
        # Kafka's lastStableOffset(completedTxn) via findNextIncompleteTxn.
        for producer_id, first_offset in self._ongoing.items():
            if producer_id != completed.producer_id:
                return first_offset
        return completed.last_offset + 1

    def coordinator_epoch(self, producer_id: int) -> int:
        """The coordinator epoch of the producer's last marker here, or -1."""
        return self._coordinator_epochs.get(producer_id, -1)

    def evict_below(self, offset: int) -> None:
        """Forget open transactions that start below `offset` (the log start moved past
        them: Kafka's removal of evicted ongoing transactions on truncateHead)."""
        self._ongoing = {p: o for p, o in self._ongoing.items() if o >= offset}

    def truncate_to(self, offset: int) -> None:
        """Forget transactions opened at or after `offset`. A truncation can also reopen a
        transaction whose marker was cut off: rebuild with `replay_segment` for that."""
        self._ongoing = {p: o for p, o in self._ongoing.items() if o < offset}


def replay_segment(
    tracker: TransactionTracker,
    batches: Iterable[tuple[BatchHeader, Callable[[], BytesLike]]],
) -> list[AbortedTxn]:
    """Rebuild state from one segment's batches, in order, continuing from earlier segments.

    Args:
      batches: (header, read) per batch; `read()` returns the batch's bytes and is called
        only for transaction markers.

    Returns:
      The segment's `.txnindex` entries.
    """
    entries = []
    for header, read in batches:
        if not header.is_transactional:
            continue
        entry = _observe(tracker, header, read)
        if entry is not None:
            entries.append(entry)
    return entries


def _observe(
    tracker: TransactionTracker, header: BatchHeader, read: Callable[[], BytesLike]
) -> AbortedTxn | None:
    if not header.is_control:
        return tracker.observe(header)
    marker = read_txn_marker(read())
    return tracker.observe(header, marker.control_type, marker.coordinator_epoch)


class SegmentBatches(Protocol):
    """What `PartitionTransactions` reads of a segment (storage.segment.Segment has it)."""

    @property
    def base_offset(self) -> int: ...

    def iter_batches(self, position: int = 0) -> Iterator[tuple[int, BatchHeader]]: ...

    def read(self, position: int, size: int) -> bytes: ...


class PartitionTransactions:
    """A partition's open transactions and its segments' aborted-transaction indexes."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.tracker = TransactionTracker()
        self._indexes: dict[int, TransactionIndex] = {}  # by segment base offset, in order

    def index(self, base_offset: int) -> TransactionIndex:
        """The index of the segment starting at `base_offset` (made on first use)."""
        index = self._indexes.get(base_offset)
        if index is None:
            index = self._indexes[base_offset] = TransactionIndex(self.directory, base_offset)
        return index

    def recover(self, segments: Sequence[SegmentBatches]) -> list[str]:
        """Rebuild everything from `segments` (the whole log, in order): open transactions,
        each segment's entries, and its `.txnindex` file, which is rewritten if it
        disagrees and deleted if it belongs to no segment.

        Returns:
          What had to be rewritten or removed, e.g. ["00000000000000000000.txnindex:
          missing"], for the recovery report.
        """
        self.close()
        self.tracker = TransactionTracker()
        self._indexes = {}
        reports = []
        for segment in segments:
            batches = (
                (header, _reader(segment, position, header.size))
                for position, header in segment.iter_batches()
            )
            index = self.index(segment.base_offset)
            index.reset(replay_segment(self.tracker, batches))
            why = index.sync_file()
            if why is not None:
                reports.append(f"{index.path.name}: {why}")
        for path in sorted(self.directory.glob(f"*{TXN_INDEX_SUFFIX}")):
            if parse_segment_name(path.name, TXN_INDEX_SUFFIX) not in self._indexes:
                path.unlink()
                reports.append(f"{path.name}: belongs to no segment")
        return reports

    def on_append(
        self, segment_base_offset: int, written: Iterable[tuple[BatchHeader, BytesLike]]
    ) -> None:
        """Account for batches just written to the segment at `segment_base_offset`:
        (header as stored, the batch's bytes as received) each; only markers' bytes are
        read.

        Raises:
          OSError: an entry could not be written to the `.txnindex` (the tracker is up to
            date; the next recovery rewrites the file).
        """
        entries = []
        for header, batch in written:
            if not header.is_transactional:
                continue
            entry = _observe(self.tracker, header, functools.partial(bytes, batch))
            if entry is not None:
                entries.append(entry)
        index = self.index(segment_base_offset)
        for entry in entries:
            index.append(entry)

    def last_stable_offset(self, high_watermark: int) -> int:
        return self.tracker.last_stable_offset(high_watermark)

    def aborted_transactions(self, fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions a read_committed fetch of [fetch_offset,
        upper_bound_offset) must report (for FetchResponse's aborted_transactions)."""
        bases = sorted(self._indexes)
        start = 0
        for i, base in enumerate(bases):
            if base <= fetch_offset:
                start = i
        indexes = [self._indexes[b] for b in bases[start:]]
        return collect_aborted_across(indexes, fetch_offset, upper_bound_offset)

    def remove_segments(self, base_offsets: Iterable[int], log_start_offset: int) -> None:
        """Segments went (retention, DeleteRecords): delete their indexes, and forget open
        transactions that started below the new log start."""
        for base in base_offsets:
            index = self._indexes.pop(base, None)
            if index is None:
                index = TransactionIndex(self.directory, base)
            index.delete()
        self.tracker.evict_below(log_start_offset)

    def flush(self) -> None:
        for index in self._indexes.values():
            index.flush()

    def close(self) -> None:
        for index in self._indexes.values():
            index.close()


def _reader(segment: SegmentBatches, position: int, size: int) -> Callable[[], bytes]:
    return lambda: segment.read(position, size)


class ActiveProducer(NamedTuple):
    """One row of DescribeProducers (its ProducerState, with Kafka's defaults of -1)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int
    current_txn_start_offset: int


def active_producers(
    producers: Mapping[int, ProducerEntry], tracker: TransactionTracker
) -> list[ActiveProducer]:
    """What DescribeProducers reports for a partition: every producer the log has state
    for (`ProducerStateManager.producers`), with its open transaction's first offset
    (Kafka's ReplicaManager.activeProducerState)."""
    ongoing = tracker.ongoing()
    rows = []
    for producer_id, entry in sorted(producers.items()):
        last = entry.batches[-1] if entry.batches else None
        rows.append(
            ActiveProducer(
                producer_id,
                entry.producer_epoch,
                -1 if last is None else last.last_seq,
                -1 if last is None else last.max_timestamp,
                tracker.coordinator_epoch(producer_id),
                ongoing.get(producer_id, -1),
            )
        )
    return rows
