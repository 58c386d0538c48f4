"""Log compaction for cleanup.policy=compact (used by __consumer_offsets).

A pass (`compact`) keeps, in the closed segments, only the latest record of each key:

1. Map every key to the offset of its latest record, over the whole log (the active
   segment included: a key written there supersedes the closed segments' copies).
2. Walk the closed segments in groups whose total size fits in segment.bytes (Kafka's
   groupSegmentsBySize), so that segments shrunk by earlier passes merge. In each batch
   keep a record when it has a key, is the latest for that key, and is not a tombstone
   (null value) whose timestamp is more than delete.retention.ms old.
   A batch that keeps all its records is copied byte for byte; one that keeps some is
   rebuilt with the same base offset, lastOffsetDelta, producer fields, codec and
   timestamp type (Kafka keeps the first and last offset and sequence of a cleaned batch so
   that the producer state survives); one that keeps none is dropped, unless it is its
   producer's last batch in the log, which stays as an empty batch for the same reason.
   Control batches (transaction markers) are copied unchanged.
3. Write a group's output to `<first base>.log.cleaned`, fsync it, rename it to
   `.log.swap`, delete the group's other segments, rename the swap to `<first base>.log`
   (replacing the first segment's file). A crash before the `.swap` rename leaves a
   `.cleaned` file that Log.open deletes; a crash after it leaves a `.swap` that Log.open
   finishes. Readers holding the old files keep reading them.

Differences from Kafka: Kafka cleans only the "dirty" part of the log after a cleaner
checkpoint and only when min.cleanable.dirty.ratio is reached; we map the whole log on
every pass, so the broker decides how often to call `compact`. Kafka times tombstone
removal from the pass that first saw the tombstone (a delete horizon kept in the batch,
KIP-534); we use the tombstone's own timestamp, which needs no extra state and does not
depend on which segments were merged (a producer's CreateTime far in the past lets its
tombstones go at the next pass). Records without a key are dropped (Kafka refuses them
when they are produced to a compacted topic; the broker should do the same, which means
decoding records on produce).

Transactions, as Kafka's cleaner treats them: only segments wholly below the last stable
offset are cleaned (an open transaction may still abort, so nothing at or after its first
offset may decide which record of a key stays), records of aborted transactions (the
log's .txnindex) never count as a key's latest record and are removed, and markers are
kept (Kafka removes a marker once its transaction's data is gone and delete.retention.ms
has passed; keeping it costs a few bytes and keeps the aborted-transaction index simple).

A pass runs on the log's own thread (it changes the segment list).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import NamedTuple

from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader, Record, build_batch, decode_records
from storage.layout import CLEANED_SUFFIX, SWAP_SUFFIX, segment_path
from storage.log import Log
from storage.segment import Segment, fsync_directory, write_all
from storage.txn_index import AbortedTxn

__all__ = ["CompactionReport", "compact"]

_INT32_MAX = 2**31 - 1


class CompactionReport(NamedTuple):
    segments_cleaned: int = 0  # closed segments read (and rewritten where anything changed)
    segments_after: int = 0  # what they became
    bytes_before: int = 0
    bytes_after: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0


def compact(log: Log, now_wall_ms: int) -> CompactionReport:
    """Run one compaction pass over the log's closed segments (see the module docstring).

    Raises:
        KafkaError: KAFKA_STORAGE_ERROR when a file cannot be read or written; the log is
            unchanged for the group being cleaned.
    """
    if not log.config.compacts or len(log.segments) < 2:
        return CompactionReport()
    try:
        return _compact(log, now_wall_ms)
    except OSError as e:
        raise KafkaError(
            ErrorCode.KAFKA_STORAGE_ERROR, f"{log.path.name}: compaction failed: {e}"
        ) from e


def _compact(log: Log, now_wall_ms: int) -> CompactionReport:
    stable = log.transactions.last_stable_offset(log.high_watermark)
    aborted = _Aborted(log.transactions.aborted_transactions(log.log_start_offset, stable))
    latest: dict[bytes, int] = {}
    last_batch_of_producer: dict[int, int] = {}
    for segment in log.segments:
        for position, header in segment.iter_batches():
            if header.producer_id >= 0:
                last_batch_of_producer[header.producer_id] = header.base_offset
            if header.is_control or header.last_offset >= stable or aborted.holds(header):
                continue
            for record in decode_records(segment.read(position, header.size)):
                if record.key is not None:
                    latest[record.key] = record.offset
    cleanable = []
    for segment in log.segments[:-1]:
        if segment.next_offset > stable:
            break
        cleanable.append(segment)

    stats = _Stats()
    tombstone_horizon = now_wall_ms - log.config.delete_retention_ms
    for group in _groups(cleanable, log.config.segment_bytes):
        stats.segments_cleaned += len(group)
        stats.bytes_before += sum(s.size for s in group)
        new = _clean_group(
            log, group, latest, last_batch_of_producer, aborted, tombstone_horizon, stats
        )
        stats.segments_after += 1
        stats.bytes_after += new.size if new is not None else sum(s.size for s in group)
    return CompactionReport(
        stats.segments_cleaned,
        stats.segments_after,
        stats.bytes_before,
        stats.bytes_after,
        stats.records_removed,
        stats.tombstones_removed,
    )


class _Aborted:
    """Which transactional batches belong to aborted transactions (from AbortedTxn entries:
    the producer's batches from the transaction's first offset to its marker)."""

    def __init__(self, entries: list[AbortedTxn]) -> None:
        self._by_producer: dict[int, list[tuple[int, int]]] = {}
        for entry in entries:
            self._by_producer.setdefault(entry.producer_id, []).append(
                (entry.first_offset, entry.last_offset)
            )

    def holds(self, header: BatchHeader) -> bool:
        if not header.is_transactional or header.is_control:
            return False
        return any(
            first <= header.base_offset <= last
            for first, last in self._by_producer.get(header.producer_id, ())
        )


@dataclass
class _Stats:
    segments_cleaned: int = 0
    segments_after: int = 0
    bytes_before: int = 0
    bytes_after: int = 0
    records_removed: int = 0
    tombstones_removed: int = 0


def _groups(segments: list[Segment], segment_bytes: int) -> list[list[Segment]]:
    groups: list[list[Segment]] = []
    for segment in segments:
        if groups:
            group = groups[-1]
            fits = sum(s.size for s in group) + segment.size <= segment_bytes
            if fits and segment.next_offset - 1 - group[0].base_offset <= _INT32_MAX:
                group.append(segment)
                continue
        groups.append([segment])
    return groups


def _clean_group(
    log: Log,
    group: list[Segment],
    latest: dict[bytes, int],
    last_batch_of_producer: dict[int, int],
    aborted: _Aborted,
    horizon: int,
    stats: _Stats,
) -> Segment | None:
    """Rewrite a group of closed segments into one; returns it, or None if nothing changed."""
    base_offset = group[0].base_offset
    cleaned_path = segment_path(log.path, base_offset, CLEANED_SUFFIX)
    changed = len(group) > 1
    finished = False
    fd = os.open(cleaned_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for segment in group:
            for position, header in segment.iter_batches():
                data = segment.read(position, header.size)
                out = _clean_batch(
                    header, data, latest, last_batch_of_producer, aborted, horizon, stats
                )
                if out is not data:
                    changed = True
                if out:
                    write_all(fd, [out])
        if changed:
            os.fsync(fd)
        finished = True
    finally:
        os.close(fd)
        if not (finished and changed):
            cleaned_path.unlink()
    if not changed:
        return None
    swap_path = segment_path(log.path, base_offset, SWAP_SUFFIX)
    os.replace(cleaned_path, swap_path)
    fsync_directory(log.path)
    for segment in group[1:]:
        segment.delete_files()
    os.replace(swap_path, segment_path(log.path, base_offset))
    fsync_directory(log.path)
    new = Segment.open(log.path, base_offset, index_interval_bytes=log.config.index_interval_bytes)
    new.recover(verify_crc=False, min_offset=base_offset)
    new.roll_base_ms = group[-1].roll_base_ms
    new.sync_index_files()
    log._replace_segments(group, new)
    return new


def _clean_batch(
    header: BatchHeader,
    data: bytes,
    latest: dict[bytes, int],
    last_batch_of_producer: dict[int, int],
    aborted: _Aborted,
    tombstone_horizon: int,
    stats: _Stats,
) -> bytes:
    """What remains of one batch: `data` itself when nothing goes, else a rebuilt batch,
    or b"" when the batch goes entirely."""
    if header.is_control:
        return data
    records = decode_records(data)
    if aborted.holds(header):
        latest_records = []  # an aborted transaction's records never stay
    else:
        latest_records = [r for r in records if r.key is not None and latest.get(r.key) == r.offset]
    kept = [r for r in latest_records if r.value is not None or r.timestamp > tombstone_horizon]
    stats.records_removed += len(records) - len(kept)
    stats.tombstones_removed += len(latest_records) - len(kept)
    if len(kept) == len(records):
        return data
    if kept or last_batch_of_producer.get(header.producer_id) == header.base_offset:
        return _rebuild(header, kept)
    return b""


def _rebuild(header: BatchHeader, kept: list[Record]) -> bytes:
    """The batch with only `kept` records, keeping everything Kafka's cleaner keeps."""
    return build_batch(
        [(r.key, r.value, r.headers, r.timestamp) for r in kept],
        base_offset=header.base_offset,
        compression=header.compression,
        timestamp_type=header.timestamp_type,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        is_transactional=header.is_transactional,
        partition_leader_epoch=header.partition_leader_epoch,
        offset_deltas=[r.offset - header.base_offset for r in kept],
        last_offset_delta=header.last_offset_delta,
        max_timestamp=header.max_timestamp if header.timestamp_type or not kept else None,
    )
