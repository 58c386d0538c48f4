"""The aborted-transactions index: Kafka's `.txnindex` file beside each segment.

    <20-digit base offset>.txnindex    one 34-byte entry per transaction aborted by a marker
                                       in this segment, in marker order

    AbortedTxn (Kafka's AbortedTxn.java), big-endian:
      version           int16   0
      producerId        int64
      firstOffset       int64   the transaction's first offset in the partition
      lastOffset        int64   the offset of its ABORT marker
      lastStableOffset  int64   the partition's last stable offset once the marker is in

A read_committed Fetch asks for the aborted transactions overlapping the range it returns
(`collect_aborted`); the consumer drops their records. A transaction may start segments
before its marker, so the search runs forward from the segment of the fetch offset until an
entry's lastStableOffset reaches the end of the range: nothing aborted later can overlap it
(Kafka's TransactionIndex.collectAbortedTxns and UnifiedLog.collectAbortedTransactions).

As in Kafka, the file is created only when the segment gets its first aborted transaction.
Unlike Kafka, which trusts the files of segments below its recovery point, kmock rebuilds
every segment's entries from the batches on start (it rebuilds the other indexes the same
way, and keeps no producer-state snapshots) and rewrites a file that disagrees
(`sync_file`). The entries in memory are the ones searched.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from storage.layout import TXN_INDEX_SUFFIX, segment_path
from storage.segment import file_mismatch, replace_file

__all__ = [
    "ABORTED_TXN_SIZE",
    "AbortedTxn",
    "CorruptTxnIndexError",
    "TransactionIndex",
    "TxnIndexSearchResult",
    "collect_aborted",
    "collect_aborted_across",
    "decode_entries",
]

ABORTED_TXN_VERSION = 0  # AbortedTxn.CURRENT_VERSION
_ENTRY = struct.Struct(">hqqqq")
ABORTED_TXN_SIZE = _ENTRY.size  # AbortedTxn.TOTAL_SIZE, 34


class CorruptTxnIndexError(ValueError):
    """A `.txnindex` file that cannot be Kafka's (Kafka's CorruptIndexException)."""


class AbortedTxn(NamedTuple):
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return _ENTRY.pack(ABORTED_TXN_VERSION, *self)


class TxnIndexSearchResult(NamedTuple):
    aborted: list[AbortedTxn]
    is_complete: bool  # no later segment can hold an overlapping aborted transaction


def decode_entries(data: bytes, base_offset: int = 0) -> list[AbortedTxn]:
    """The entries of a `.txnindex` file's bytes.

    A trailing partial entry (a write cut short) is ignored, as Kafka's reader ignores it.

    Raises:
        CorruptTxnIndexError: a version other than 0 (Kafka rejects versions above its
            own; a negative one is no less corrupt), or an entry whose last offset lies
            below the segment's base offset (Kafka's sanityCheck).
    """
    entries = []
    for pos in range(0, len(data) - ABORTED_TXN_SIZE + 1, ABORTED_TXN_SIZE):
        version, *fields = _ENTRY.unpack_from(data, pos)
        if version != ABORTED_TXN_VERSION:
            raise CorruptTxnIndexError(f"aborted transaction version {version} at {pos}")
        entry = AbortedTxn(*fields)
        if entry.last_offset < base_offset:
            raise CorruptTxnIndexError(
                f"aborted transaction {entry} ends below the segment's base offset {base_offset}"
            )
        entries.append(entry)
    return entries


def collect_aborted(
    entries: Iterable[AbortedTxn], fetch_offset: int, upper_bound_offset: int
) -> TxnIndexSearchResult:
    """The aborted transactions overlapping [fetch_offset, upper_bound_offset) among one
    segment's entries (Kafka's TransactionIndex.collectAbortedTxns)."""
    aborted = []
    for entry in entries:
        if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound_offset:
            aborted.append(entry)
        if entry.last_stable_offset >= upper_bound_offset:
            return TxnIndexSearchResult(aborted, True)
    return TxnIndexSearchResult(aborted, False)


def collect_aborted_across(
    indexes: Sequence[TransactionIndex], fetch_offset: int, upper_bound_offset: int
) -> list[AbortedTxn]:
    """The aborted transactions overlapping a fetch range, searching `indexes` in order
    (those of the segment holding `fetch_offset` and every later one) until the search is
    complete (Kafka's UnifiedLog.collectAbortedTransactions)."""
    aborted: list[AbortedTxn] = []
    for index in indexes:
        result = collect_aborted(index.entries, fetch_offset, upper_bound_offset)
        aborted += result.aborted
        if result.is_complete:
            break
    return aborted


class TransactionIndex:
    """One segment's aborted transactions, in memory and in its `.txnindex` file."""

    def __init__(self, directory: Path, base_offset: int) -> None:
        self.base_offset = base_offset
        self.path = segment_path(directory, base_offset, TXN_INDEX_SUFFIX)
        self.entries: list[AbortedTxn] = []
        self._fd: int | None = None

    @property
    def last_offset(self) -> int | None:
        return self.entries[-1].last_offset if self.entries else None

    def read_file(self) -> list[AbortedTxn]:
        """The entries the file holds (none if there is no file).

        Raises:
            CorruptTxnIndexError: see `decode_entries`.
        """
        try:
            data = self.path.read_bytes()
        except FileNotFoundError:
            return []
        return decode_entries(data, self.base_offset)

    def append(self, entry: AbortedTxn) -> None:
        """Add an entry at the end, in memory and in the file (created now if absent).

        Raises:
            ValueError: `entry` does not end after the last one (Kafka's "The last offset
                of appended transactions must increase sequentially").
            OSError: the write failed; the entry is not in memory either.
        """
        last = self.last_offset
        if last is not None and entry.last_offset <= last:
            raise ValueError(
                f"{self.path.name}: aborted transaction ending at {entry.last_offset} "
                f"after one ending at {last}"
            )
        data = entry.encode()
        fd = self._open()
        start = os.fstat(fd).st_size
        try:
            written = os.write(fd, data)
            if written != len(data):
                raise OSError(f"short write to {self.path.name}: {written} of {len(data)}")
        except OSError:
            os.ftruncate(fd, start)
            raise
        self.entries.append(entry)

    def truncate_to(self, offset: int) -> None:
        """Drop the entries of transactions whose marker is at or after `offset` (Kafka's
        truncateTo), in memory and in the file."""
        keep = [e for e in self.entries if e.last_offset < offset]
        if len(keep) == len(self.entries):
            return
        self.entries = keep
        if self._fd is not None or self.path.exists():
            os.ftruncate(self._open(), len(keep) * ABORTED_TXN_SIZE)

    def reset(self, entries: Iterable[AbortedTxn] = ()) -> None:
        """Replace the entries in memory (the file is left to `sync_file`)."""
        self.entries = list(entries)

    def sync_file(self) -> str | None:
        """Make the file hold exactly the in-memory entries; no entries and no file is
        right too. Returns why it had to be rewritten, or None."""
        expected = b"".join(e.encode() for e in self.entries)
        why = file_mismatch(self.path, expected)
        if why is None or (why == "missing" and not expected):
            return None
        self.close()
        replace_file(self.path, expected)
        return why

    def flush(self) -> None:
        if self._fd is not None:
            os.fsync(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)

    def _open(self) -> int:
        if self._fd is None:
            self._fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
        return self._fd
