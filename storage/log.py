"""One partition's log: a directory of segments, with recovery, appends, reads, retention.

Layout (Kafka's): `<topic>-<partition>/` holds `<20-digit base offset>.log` segments with
their `.index` and `.timeindex` (see segment.py), `.txnindex` files for aborted transactions
(see transactions.py), and `log-start-offset-checkpoint`.

Recovery (`Log.open`) is storage/recovery.py: leftovers of compaction, a torn tail cut,
later segments dropped, indexes rebuilt; everything dropped is listed in `recovery_report`
for the broker to log. Then the partition's transactions are rebuilt from the segments
(`PartitionTransactions.recover`), which rewrites `.txnindex` files that disagree.

Appends: `append` (one batch: every Produce) and `append_batches` (any number, all or
none) share the checks and the header stamping of storage/append.py and one `_write` (roll,
write, producer state, transactions, flush); `append_stamped` writes a batch the broker
built already stamped (the group coordinator's of one record: every commit of one
partition) through the same `_write`.

Transactions (storage/transactions.py): every append is shown to `self.transactions`, which
tracks open transactions (the last stable offset) and writes the aborted-transaction index;
retention, DeleteRecords and truncation keep it in step.

Durability (`LogConfig.flush_mode`): "none" leaves flushing to the OS (Kafka's default;
a crash of the machine loses what the page cache had not written back, typically up to 30
s); "interval" asks the broker (broker.durability) to run `flush_logs` within
`flush_interval_ms` of a write (Kafka's flush.ms); "always" fsyncs inside `append`. Whatever
the mode, an append that leaves `flush_messages` messages unflushed fsyncs before it returns
(Kafka's flush.messages), and the broker's strict mode fsyncs, before answering, every write
a client waits for. In every mode a segment is fsynced when it rolls (as Kafka does), so
only the active segment can hold unflushed data, and a crash of the process alone (not the
machine) loses nothing.

Threads: a Log belongs to one thread (the broker's trio thread). The only calls another
thread may make are `flush()` (alias `sync()`) and `flush_logs`, concurrently with that
thread's appends.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from bisect import bisect_right
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from protocol.compression import BytesLike
from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader, decode_records, parse_batch_header
from storage.append import AppendInfo, check_batch, duplicate_info, stamp
from storage.log_config import LogConfig
from storage.producer_state import ProducerAppend, ProducerStateManager
from storage.recovery import (
    LOG_START_OFFSET_CHECKPOINT,
    RecoveryEvent,
    recover_segments,
    write_checkpoint,
)
from storage.segment import (
    EMPTY_SLICE,
    FileHandle,
    FileSlice,
    Segment,
    fsync_directory,
    syncfs,
)
from storage.transactions import PartitionTransactions

__all__ = ["AppendInfo", "Log", "LogConfig", "RecoveryEvent", "apply_retention", "flush_logs"]

_INT32_MAX = 2**31 - 1


# AppendInfo(...) without the Python-level __new__ that NamedTuple generates (one per append).
_new_info = tuple.__new__


class Log:
    """A partition's log. Use `Log.open`."""

    def __init__(self, path: Path, config: LogConfig) -> None:
        self.path = path
        self.config = config
        self.producer_state = ProducerStateManager()
        self.transactions = PartitionTransactions(path)
        self.recovery_report: list[RecoveryEvent] = []
        self._segments: list[Segment] = []
        self._bases: list[int] = []  # base offsets of _segments, for bisect
        self._log_start_offset = 0
        self._flushed_offset = 0
        self._failure: str | None = None
        self._closed = False

    # --- open and recover --------------------------------------------------------------

    @classmethod
    def open(
        cls, path: str | os.PathLike[str], config: LogConfig | None = None, *, now_wall_ms: int
    ) -> Log:
        """Open (or create) the log in directory `path`, recovering it after a crash.

        Raises:
            KafkaError: KAFKA_STORAGE_ERROR when the directory cannot be read or repaired.
        """
        log = cls(Path(path), config or LogConfig())
        try:
            log._recover(now_wall_ms)
        except OSError as e:
            log._drop_handles()
            log.transactions.close()
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"{path}: cannot open log: {e}") from e
        return log

    def _recover(self, now_wall_ms: int) -> None:
        recovered = recover_segments(
            self.path,
            self._segments,
            index_interval_bytes=self.config.index_interval_bytes,
            now_wall_ms=now_wall_ms,
            report=self.recovery_report,
        )
        self.producer_state = recovered.producer_state
        self._log_start_offset = recovered.log_start_offset
        self._bases = [s.base_offset for s in self._segments]
        # What survived recovery is what the disk holds: treat it as flushed.
        self._flushed_offset = self.log_end_offset
        self._recover_transactions()

    def _recover_transactions(self) -> None:
        for what in self.transactions.recover(self._segments):
            self.recovery_report.append(RecoveryEvent(self.path, "index rebuilt", 0, what))
        self.transactions.tracker.evict_below(self._log_start_offset)

    def _write_checkpoint(self) -> None:
        write_checkpoint(self.path, self._log_start_offset)

    # --- properties --------------------------------------------------------------------

    @property
    def log_start_offset(self) -> int:
        return self._log_start_offset

    @property
    def log_end_offset(self) -> int:
        """The offset the next record will get."""
        return self._segments[-1].next_offset

    @property
    def high_watermark(self) -> int:
        """Equal to the log end offset: a single broker has no followers to wait for."""
        return self._segments[-1].next_offset

    @property
    def flushed_offset(self) -> int:
        """Every offset below this is on disk (fsynced, or recovered at open)."""
        return self._flushed_offset

    @property
    def has_unflushed(self) -> bool:
        return self._flushed_offset < self.log_end_offset

    @property
    def size_bytes(self) -> int:
        return sum(s.size for s in self._segments)

    @property
    def segments(self) -> tuple[Segment, ...]:
        """The segments, oldest first; the last is the active one. Read-only use."""
        return tuple(self._segments)

    # --- append ------------------------------------------------------------------------

    def append(
        self,
        batch: BytesLike,
        *,
        wall_ms: int,
        partition_leader_epoch: int | None = None,
        header: BatchHeader | None = None,
    ) -> AppendInfo:
        """Append one validated v2 batch (see `append_batches`); `header` is its header when
        the caller has parsed it (Produce, from `split_batches`), not to parse it again.

        Every Produce comes here (and the batches `append_stamped` passes on):
        `append_batches`' steps for one batch, without its lists and loops."""
        if self._closed or self._failure is not None:
            self._check_writable()
        view = memoryview(batch)
        if header is None:
            header = parse_batch_header(view)
        config = self.config
        size = check_batch(view, header, config.max_message_bytes)
        producers = None
        if header.producer_id >= 0:
            producers = self.producer_state.begin_append()
            original = producers.check(header)
            if original is not None:
                return duplicate_info(original, self._log_start_offset)
        base_offset = self._segments[-1].next_offset  # log_end_offset
        append_time = wall_ms if config.message_timestamp_type == "LogAppendTime" else -1
        head, rest, stored = stamp(view, header, base_offset, partition_leader_epoch, append_time)
        if producers is not None:
            producers.add(stored)
        last_offset = base_offset + header.last_offset_delta
        written = ((stored, view),) if stored.is_transactional else None
        self._write([head, rest], [stored], size, last_offset + 1, wall_ms, producers, written)
        info = (base_offset, last_offset, append_time, self._log_start_offset, False)
        return _new_info(AppendInfo, info)

    def append_stamped(self, batch: bytes, header: BatchHeader, *, wall_ms: int) -> None:
        """Append a batch the broker built for this log itself (the group coordinator's,
        broker/coordinator_batch.py), `header` its own. When it is already what `append`
        would store (at the log end offset, no producer id, CreateTime, within
        max.message.bytes) it is written as it is, without `append`'s checks of what a
        client sent and its stamp; otherwise (a closed log too) `append` takes it."""
        config = self.config
        size = len(batch)
        if (
            header.base_offset != self._segments[-1].next_offset
            or header.producer_id >= 0
            or size > config.max_message_bytes
            or config.message_timestamp_type == "LogAppendTime"
            or self._closed
            or self._failure is not None
        ):
            self.append(batch, wall_ms=wall_ms, header=header)
            return
        next_offset = header.base_offset + header.last_offset_delta + 1
        self._write([batch], [header], size, next_offset, wall_ms, None, None)

    def append_batches(
        self,
        batches: Iterable[BytesLike],
        *,
        wall_ms: int,
        partition_leader_epoch: int | None = None,
    ) -> list[AppendInfo]:
        """Assign offsets to batches and append them, all or none, to the active segment.

        The batches must have passed `protocol.records.split_batches` (CRC and header
        checks); storage only re-checks what the file format depends on (magic, length).
        Each is written as received except for the fields the log assigns (baseOffset;
        partitionLeaderEpoch when given; maxTimestamp, timestamp type and CRC for
        LogAppendTime), see storage/append.py: the records are written from the caller's
        buffer, uncopied.

        Returns:
            One AppendInfo per batch, in order. A producer retry of a batch already in the
            log is not written again and gets its original offsets (duplicate=True).

        Raises:
            KafkaError: MESSAGE_TOO_LARGE (a batch over max_message_bytes),
                RECORD_LIST_TOO_LARGE (all together over segment_bytes), CORRUPT_MESSAGE,
                INVALID_PRODUCER_EPOCH, OUT_OF_ORDER_SEQUENCE_NUMBER, KAFKA_STORAGE_ERROR
                (the write failed: nothing of this call is in the log, which stays usable
                unless it could not be restored, when every later append fails too).
        """
        self._check_writable()
        config = self.config
        views = []
        for batch in batches:
            view = memoryview(batch)
            header = parse_batch_header(view)
            check_batch(view, header, config.max_message_bytes)
            views.append((view, header))
        append_time = wall_ms if config.message_timestamp_type == "LogAppendTime" else -1
        # A batch without a producer id (-1: not idempotent) has no producer state to check
        # or change: an append of only such batches never starts a ProducerAppend.
        producers = None
        infos: list[AppendInfo] = []
        parts: list[bytes | bytearray | memoryview] = []
        headers: list[BatchHeader] = []
        written: list[tuple[BatchHeader, memoryview]] = []
        next_offset = self._segments[-1].next_offset  # log_end_offset
        total = 0
        for view, header in views:
            if header.producer_id >= 0:
                if producers is None:
                    producers = self.producer_state.begin_append()
                original = producers.check(header)
                if original is not None:
                    infos.append(duplicate_info(original, self._log_start_offset))
                    continue
            head, rest, stored = stamp(
                view, header, next_offset, partition_leader_epoch, append_time
            )
            if producers is not None:
                producers.add(stored)
            parts += (head, rest)
            headers.append(stored)
            total += 12 + stored.batch_length
            if stored.is_transactional:
                written.append((stored, view))
            last_offset = next_offset + stored.last_offset_delta
            info = (next_offset, last_offset, append_time, self._log_start_offset, False)
            infos.append(_new_info(AppendInfo, info))
            next_offset = last_offset + 1
        if not headers:
            return infos
        self._write(parts, headers, total, next_offset, wall_ms, producers, written)
        return infos

    def _write(
        self,
        parts: list[bytes | bytearray | memoryview],
        headers: list[BatchHeader],
        size: int,
        next_offset: int,
        wall_ms: int,
        producers: ProducerAppend | None,
        written: Sequence[tuple[BatchHeader, memoryview]] | None,
    ) -> None:
        """Write stamped batches (`size` bytes, `headers` as stored, up to `next_offset`)
        to the active segment, rolling first when it must; then
        commit the producer state, show transactional batches (`written`) to the
        transactions, and flush if due."""
        config = self.config
        if size > config.segment_bytes:
            raise KafkaError(
                ErrorCode.RECORD_LIST_TOO_LARGE,
                f"{size} bytes of batches exceed segment.bytes {config.segment_bytes}",
            )
        try:
            active = self._segments[-1]
            # Roll when the segment is older than segment.ms, or the batches would pass
            # segment.bytes or relative offsets' int32 range (Kafka's LogSegment.shouldRoll;
            # but an empty segment never rolls: what it cannot take, none can).
            if active.size and (
                wall_ms - active.roll_base_ms >= config.segment_ms
                or active.size + size > config.segment_bytes
                or next_offset - 1 - active.base_offset > _INT32_MAX
            ):
                self._roll(wall_ms)
                active = self._segments[-1]
            active.append(parts, headers, wall_ms=wall_ms, size=size)
        except OSError as e:
            if self._segments[-1].broken:
                self._failure = f"could not undo a failed write: {e}"
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: append failed: {e}"
            ) from e
        if producers is not None:
            producers.commit()
        if written:
            # On OSError the batches are in the log and the tracker (the LSO) is up to date;
            # only the .txnindex file missed an entry, and the next recovery rewrites it.
            # Failing the produce now would only make the client retry a written batch.
            with contextlib.suppress(OSError):
                self.transactions.on_append(active.base_offset, written)
        if (
            config.flush_mode == "always"
            or next_offset - self._flushed_offset >= config.flush_messages
        ):
            self.flush()

    def _check_writable(self) -> None:
        if self._closed:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: log is closed")
        if self._failure is not None:
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: log is offline: {self._failure}"
            )

    def _roll(self, wall_ms: int) -> None:
        """Close the active segment (fsync it, write its indexes) and start a new one."""
        old = self._segments[-1]
        old.release_reserved()
        old.flush()
        old.sync_index_files()
        self.transactions.index(old.base_offset).flush()
        self._flushed_offset = max(self._flushed_offset, old.next_offset)
        new = Segment.create(
            self.path,
            old.next_offset,
            index_interval_bytes=self.config.index_interval_bytes,
            wall_ms=wall_ms,
        )
        try:
            fsync_directory(self.path)
        except OSError:
            # Undo the half-made roll: left in place, the new segment's file would make
            # every later roll fail (it is created exclusively), wedging the partition
            # after the disk recovered.
            new.delete_files()
            raise
        self._segments.append(new)
        self._bases.append(new.base_offset)

    def roll(self, *, wall_ms: int) -> None:
        """Start a new segment now (unless the active one is empty)."""
        self._check_writable()
        if self._segments[-1].size:
            try:
                self._roll(wall_ms)
            except OSError as e:
                raise KafkaError(
                    ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: roll failed: {e}"
                ) from e

    # --- durability --------------------------------------------------------------------

    def flush(self) -> int:
        """fdatasync what was appended before the call; return the offset below which
        everything is now durable.

        Safe in a worker thread while the log's thread appends, rolls or deletes segments:
        the log end offset is read first, so everything below it was written already; then
        the active segment's handle is taken (the reference keeps its descriptor open). If
        a roll came in between, the older segment holding part of that data was fsynced by
        the roll before the new segment became active. Concurrent updates of
        `flushed_offset` can only lose a raise, never claim too much.

        Raises:
            KafkaError: KAFKA_STORAGE_ERROR. After a failed fsync the kernel may have
                dropped the dirty pages, so nothing unflushed can be trusted: the log goes
                offline (appends fail) until it is reopened, and recovery then finds out
                what reached the disk.
        """
        offset = self.log_end_offset
        handle = self._segments[-1].handle
        if handle is None:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: log is closed")
        if offset <= self._flushed_offset:
            return self._flushed_offset
        try:
            os.fdatasync(handle.fd)
        except OSError as e:
            raise self._go_offline(f"fdatasync failed: {e}") from e
        if offset > self._flushed_offset:
            self._flushed_offset = offset
        return offset

    sync = flush  # the broker's name for it

    def _go_offline(self, failure: str) -> KafkaError:
        """Take the log offline (appends fail until it is reopened); returns the error to raise."""
        self._failure = failure
        return KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: {failure}")

    # --- read --------------------------------------------------------------------------

    def read(
        self, offset: int, max_bytes: int, *, max_offset: int | None = None, min_one: bool = True
    ) -> FileSlice:
        """Whole batches from the one holding `offset`, from a single segment.

        At most `max_bytes`, except that with `min_one` (KIP-74, Fetch v3+) the first batch
        is returned even when it is larger. Batches starting at or after `max_offset`
        (exclusive; the high watermark or last stable offset) are not returned. The first
        batch may start before `offset` (a batch is never split); consumers skip the
        records below the offset they asked for, as with Kafka. Unlike Kafka, which may cut
        the last batch of a fetch short, a slice always ends on a batch boundary.

        Raises:
            KafkaError: OFFSET_OUT_OF_RANGE outside [log_start_offset, log_end_offset].
        """
        self._check_readable()
        log_end_offset = self.log_end_offset
        if offset < self._log_start_offset or offset > log_end_offset:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"{self.path.name}: offset {offset} outside "
                f"[{self._log_start_offset}, {log_end_offset}]",
            )
        end_offset = log_end_offset if max_offset is None else min(max_offset, log_end_offset)
        if offset >= end_offset:
            return EMPTY_SLICE
        for segment in self._segments[self._segment_index(offset) :]:
            found = segment.slice_from(offset, max_bytes, end_offset, min_one=min_one)
            if found is not None:
                return found
        return EMPTY_SLICE

    def read_bytes(
        self, offset: int, max_bytes: int, *, max_offset: int | None = None, min_one: bool = True
    ) -> bytes:
        """`read`, as bytes."""
        return self.read(offset, max_bytes, max_offset=max_offset, min_one=min_one).read_bytes()

    def _segment_index(self, offset: int) -> int:
        return max(bisect_right(self._bases, offset) - 1, 0)

    def offset_for_timestamp(self, timestamp: int) -> tuple[int, int] | None:
        """ListOffsets by timestamp: the first record (offset, timestamp) with a timestamp
        >= `timestamp` at or after the log start offset, or None if there is none.

        Segments whose largest timestamp is smaller are skipped; in the first other one the
        time index gives where to start walking batch headers, and only the first batch
        whose maxTimestamp is large enough is decoded.
        """
        self._check_readable()
        for segment in self._segments:
            if segment.max_timestamp < timestamp:
                continue
            for position, header in segment.iter_batches(segment.position_for_timestamp(timestamp)):
                if header.max_timestamp < timestamp or header.last_offset < self._log_start_offset:
                    continue
                for record in decode_records(segment.read(position, header.size)):
                    if record.timestamp >= timestamp and record.offset >= self._log_start_offset:
                        return record.offset, record.timestamp
        return None

    def max_timestamp_offset(self) -> tuple[int, int] | None:
        """ListOffsets MAX_TIMESTAMP (-3, KIP-734): (offset, timestamp) of the first record
        holding the largest timestamp in the log, or None when no batch has one."""
        self._check_readable()
        best = None
        for segment in self._segments:
            if segment.max_timestamp >= 0 and (
                best is None or segment.max_timestamp > best.max_timestamp
            ):
                best = segment
        if best is None:
            return None
        header = best.header_at(best.position_of_max_timestamp)
        for record in decode_records(best.read(best.position_of_max_timestamp, header.size)):
            if record.timestamp == header.max_timestamp:
                return record.offset, record.timestamp
        return header.last_offset, header.max_timestamp  # emptied by compaction

    # --- retention, DeleteRecords, truncation -------------------------------------------

    def apply_retention(self, now_wall_ms: int) -> int:
        """Delete the oldest segments past retention.ms or retention.bytes (when the cleanup
        policy includes "delete"), and any segment wholly below the log start offset.

        As in Kafka, a segment goes when its largest timestamp is more than retention.ms
        old, or when the log minus that segment is still at least retention.bytes; deletion
        stops at the first segment that may stay. When every segment may go, the log rolls
        first so that it keeps an (empty) active segment at the log end offset.

        Returns:
            The number of segments deleted.
        """
        self._check_writable()
        deleted = 0
        if self.config.deletes and self.config.retention_ms >= 0:
            limit = self.config.retention_ms
            deleted += self._delete_oldest(
                lambda segment: now_wall_ms - segment.largest_timestamp_ms() > limit, now_wall_ms
            )
        if self.config.deletes and self.config.retention_bytes >= 0:
            excess = self.size_bytes - self.config.retention_bytes

            def over_size(segment: Segment) -> bool:
                nonlocal excess
                if excess - segment.size < 0:
                    return False
                excess -= segment.size
                return True

            deleted += self._delete_oldest(over_size, now_wall_ms)
        deleted += self._delete_below_start()
        return deleted

    def _delete_oldest(self, expired: Callable[[Segment], bool], now_wall_ms: int) -> int:
        count = 0
        for segment in self._segments:
            if (segment is self._segments[-1] and segment.size == 0) or not expired(segment):
                break
            count += 1
        if count == 0:
            return 0
        try:
            if count == len(self._segments):
                self._roll(now_wall_ms)
            self._remove_segments(count)
        except OSError as e:
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: retention failed: {e}"
            ) from e
        return count

    def _delete_below_start(self) -> int:
        count = 0
        while (
            count + 1 < len(self._segments)
            and self._segments[count + 1].base_offset <= self._log_start_offset
        ):
            count += 1
        if count:
            try:
                self._remove_segments(count)
            except OSError as e:
                raise KafkaError(
                    ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: retention failed: {e}"
                ) from e
        return count

    def _remove_segments(self, count: int) -> None:
        """Delete the `count` oldest segments (never the active one) and move the start."""
        assert count < len(self._segments)
        removed, self._segments = self._segments[:count], self._segments[count:]
        self._bases = self._bases[count:]
        for segment in removed:
            segment.delete_files()
        if self._segments[0].base_offset > self._log_start_offset:
            self._log_start_offset = self._segments[0].base_offset
            self._write_checkpoint()
        self.producer_state.evict_below(self._log_start_offset)
        self.transactions.remove_segments([s.base_offset for s in removed], self._log_start_offset)

    def advance_log_start_offset(self, offset: int) -> int:
        """DeleteRecords: make `offset` the log start offset (never moving it back), persist
        it, and delete the segments wholly below it. Returns the log start offset.

        Raises:
            KafkaError: OFFSET_OUT_OF_RANGE beyond the log end offset; KAFKA_STORAGE_ERROR.
        """
        self._check_writable()
        if offset > self.log_end_offset:
            raise KafkaError(
                ErrorCode.OFFSET_OUT_OF_RANGE,
                f"{self.path.name}: {offset} is past the log end {self.log_end_offset}",
            )
        if offset > self._log_start_offset:
            self._log_start_offset = offset
            try:
                self._write_checkpoint()  # before acknowledging, and before deleting
            except OSError as e:
                raise self._go_offline(f"cannot write {LOG_START_OFFSET_CHECKPOINT}: {e}") from e
            self._delete_below_start()
            self.producer_state.evict_below(offset)
            self.transactions.tracker.evict_below(offset)
        return self._log_start_offset

    def truncate_to(self, offset: int, *, wall_ms: int) -> None:
        """Remove every batch holding an offset >= `offset`.

        A batch is never split: one that straddles `offset` goes entirely, so the log end
        offset may end up below `offset` (Kafka truncates the same way). Truncating to at or
        below the log start offset empties the log and restarts it at `offset`.
        """
        self._check_writable()
        if offset >= self.log_end_offset:
            return
        try:
            if offset <= self._log_start_offset:
                for segment in self._segments:
                    segment.delete_files()
                self._segments = [
                    Segment.create(
                        self.path,
                        offset,
                        index_interval_bytes=self.config.index_interval_bytes,
                        wall_ms=wall_ms,
                    )
                ]
                self._log_start_offset = offset
                self._write_checkpoint()
            else:
                while len(self._segments) > 1 and self._segments[-1].base_offset >= offset:
                    self._segments.pop().delete_files()
                active = self._segments[-1]
                found = active.find_batch(offset)
                if found is not None:
                    active.truncate(found[0])
                active.sync_index_files()
            self._bases = [s.base_offset for s in self._segments]
            self.producer_state = ProducerStateManager()
            for segment in self._segments:
                for _, header in segment.iter_batches():
                    self.producer_state.replay(header)
            self.producer_state.evict_below(self._log_start_offset)
            # A cut may reopen a transaction whose marker went: rebuild from the segments.
            self._recover_transactions()
        except OSError as e:
            raise self._go_offline(f"truncation failed: {e}") from e
        self._flushed_offset = min(self._flushed_offset, self.log_end_offset)

    # --- compaction support (storage.compaction) -----------------------------------------

    def _replace_segments(self, old: list[Segment], new: Segment | None) -> None:
        """Put `new` in place of the consecutive segments `old` (after their files were
        swapped on disk by compaction)."""
        first = self._segments.index(old[0])
        assert self._segments[first : first + len(old)] == old
        assert first + len(old) < len(self._segments), "the active segment is never replaced"
        self._segments[first : first + len(old)] = [new] if new is not None else []
        self._bases = [s.base_offset for s in self._segments]
        # Merged segments keep their markers but change base offsets: the .txnindex files
        # follow (rebuilt from the segments, as recovery does).
        self._recover_transactions()

    # --- lifecycle -----------------------------------------------------------------------

    def close(self) -> None:
        """Flush (whatever the flush mode: a clean shutdown loses nothing), write the
        index files, and let go of the files."""
        if self._closed:
            return
        try:
            if self._failure is None:
                self._segments[-1].release_reserved()
                self.flush()
                self._segments[-1].sync_index_files()
                self.transactions.flush()
        except OSError as e:
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: close failed: {e}"
            ) from e
        finally:
            self._closed = True
            self._drop_handles()
            self.transactions.close()

    def delete(self) -> None:
        """Remove the log and its directory (DeleteTopics)."""
        self._closed = True
        self._drop_handles()
        self.transactions.close()
        shutil.rmtree(self.path, ignore_errors=True)

    def _drop_handles(self) -> None:
        # Descriptors close when the last FileSlice or FlushTicket using them is gone.
        for segment in self._segments:
            segment.handle = None

    def _check_readable(self) -> None:
        if self._closed:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"{self.path.name}: log is closed")


def apply_retention(log: Log, now_wall_ms: int) -> int:
    """`Log.apply_retention` as a function, the way the broker calls it beside `compact`."""
    return log.apply_retention(now_wall_ms)


def flush_logs(logs: Iterable[Log]) -> dict[Log, KafkaError]:
    """`flush()` many logs at once: one syncfs per filesystem instead of an fdatasync per
    log (see `storage.segment.syncfs`), the broker's group commit across partitions. Where
    there is no syncfs, each log is fdatasynced in turn.

    Safe in a worker thread, as `flush()` is: each log's end offset is read before the sync,
    so what is marked durable was written before it began.

    Returns the logs whose flush failed, with the error; those logs are offline, as after a
    failed `flush()`. A failed syncfs cannot say which file it could not write, so it takes
    every log of that filesystem offline: their unflushed data cannot be trusted.
    """
    by_device: dict[int, list[tuple[Log, int, FileHandle]]] = {}
    for plog in logs:
        handle = plog._segments[-1].handle
        offset = plog.log_end_offset
        if handle is not None and offset > plog._flushed_offset and plog._failure is None:
            by_device.setdefault(os.fstat(handle.fd).st_dev, []).append((plog, offset, handle))
    failed: dict[Log, KafkaError] = {}
    for pending in by_device.values():
        try:
            synced = syncfs(pending[0][2].fd)
        except OSError as e:
            for plog, _, _ in pending:
                failed[plog] = plog._go_offline(f"syncfs failed: {e}")
            continue
        for plog, offset, handle in pending:
            if not synced:
                try:
                    os.fdatasync(handle.fd)
                except OSError as e:
                    failed[plog] = plog._go_offline(f"fdatasync failed: {e}")
                    continue
            if offset > plog._flushed_offset:
                plog._flushed_offset = offset
    return failed
