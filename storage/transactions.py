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

Pure: the tracker sees headers (and a marker's type, read from its record key) and keeps
no files. `Log` calls `observe` after each batch is written and rebuilds the tracker on
recovery with `replay_segment`, which returns each segment's entries.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import NamedTuple

from protocol.compression import BytesLike
from protocol.control_records import read_txn_marker
from protocol.records import BatchHeader, ControlRecordType
from storage.txn_index import AbortedTxn

__all__ = ["CompletedTxn", "TransactionTracker", "marker_type", "replay_segment"]


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
        self, header: BatchHeader, control_type: ControlRecordType | None = None
    ) -> AbortedTxn | None:
        """Account for one batch just written, with its final offsets.

        Args:
          header: the batch's header as stored (base offset assigned).
          control_type: for a transaction marker, its type (see `marker_type`).

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
        kind = marker_type(read()) if header.is_control else None
        entry = tracker.observe(header, kind)
        if entry is not None:
            entries.append(entry)
    return entries
