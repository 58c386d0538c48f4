"""One log segment in Kafka's on-disk layout.

    <20-digit base offset>.log        v2 record batches, verbatim as received except for the
                                      baseOffset (and partitionLeaderEpoch) the log assigned
    <20-digit base offset>.index      sparse offset index: 8-byte entries
                                      (int32 lastOffset - baseOffset, int32 file position)
    <20-digit base offset>.timeindex  sparse time index: 12-byte entries
                                      (int64 largest timestamp so far, int32 relative offset)

Index entries follow Kafka's LogSegment.append (3.6+, one decision per batch): when more
than `index.interval.bytes` have been appended since the last entry, the next batch gets an
offset entry (its last offset, its position) and the time index gets (largest timestamp
so far, last offset of the batch that holds it) if that timestamp grew. An index is
therefore a pure function of the batches in the segment and the interval, which recovery
uses: it recomputes the index while walking the batches and rewrites the files when they
differ. The index files are written when a segment rolls or the log closes, not on each
append; after a crash they are simply recomputed (they are derived data, never trusted).

The segment keeps its indexes in memory (two `array`s each), plus the aggregates the log
needs without reading the file: size, next offset, largest timestamp and where it is.

The active segment's file grows into space reserved ahead of it: once a segment holds
PREALLOCATE_MIN_BYTES, an append that passes the reserved end reserves as much again as the
segment holds (at most PREALLOCATE_MAX_BYTES) past its end, with fallocate(2) and
FALLOC_FL_KEEP_SIZE. The file's size, and so its content as any reader or Kafka tool sees it,
stays exactly the batches written; only the filesystem's blocks are taken early. A write into
reserved blocks skips ext4's per-block delayed-allocation bookkeeping: 1 MB appends here cost
a quarter to a half less CPU (bench/README.md, round 5). The blocks past the end are given
back (ftruncate to the size, which frees them) when the segment rolls, when its log closes,
and by recovery after a crash. Kafka's file.preallocate (FileRecords.openChannel) reserves a
whole segment.bytes up front by growing the file, which its recovery then cuts back; here the
size never changes.

A segment's file descriptor lives in a `FileHandle` that is closed when the last holder
lets go of it. Reads hand out `FileSlice`s that hold the handle, so retention, compaction
or shutdown never close a descriptor under a sendfile in progress: an unlinked file stays
readable through an open descriptor (Kafka gets the same effect by deleting segment files
asynchronously, file.delete.delay.ms later).
"""

from __future__ import annotations

import mmap
import os
import struct
import sys
from array import array
from bisect import bisect_right
from collections.abc import Callable, Iterator
from pathlib import Path

from protocol.errors import KafkaError
from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    iter_batches,
    parse_batch_header,
    validate_batch,
)
from storage.layout import INDEX_SUFFIX, LOG_SUFFIX, TIMEINDEX_SUFFIX, segment_path

__all__ = [
    "EMPTY_SLICE",
    "IOV_MAX",
    "FileHandle",
    "FileSlice",
    "Segment",
    "file_mismatch",
    "fsync_directory",
    "last_offset_in_file",
    "replace_file",
    "reserve_blocks",
    "syncfs",
    "write_all",
]

PREALLOCATE_MIN_BYTES = 1 << 20  # a segment smaller than this reserves nothing ahead
PREALLOCATE_MAX_BYTES = 16 << 20  # the most reserved past the end at a time
_FALLOC_FL_KEEP_SIZE = 1  # linux/falloc.h
# Recovery gives back what a crash left reserved when the file holds more than this beyond
# its size (an extent tree's own blocks are counted in st_blocks too).
_RESERVED_SLACK_BYTES = 64 * 1024
_TIME_ENTRY = struct.Struct(">qi")


def _iov_max() -> int:
    """Buffers one writev may take (sysconf answers -1 where there is no fixed limit)."""
    limit = os.sysconf("SC_IOV_MAX") if hasattr(os, "sysconf") else -1
    return limit if limit > 0 else 1024


IOV_MAX = _iov_max()


class FileHandle:
    """An open descriptor, closed when the last reference to it goes away."""

    __slots__ = ("fd",)

    def __init__(self, fd: int) -> None:
        self.fd = fd

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        _close(self.fd)


class FileSlice:
    """A run of whole batches in one segment file: what a Fetch sends (os.sendfile on `fd`).

    Holding the slice keeps the file open, so it stays readable even if the segment is
    deleted or replaced meanwhile. Its length is its size, so that it can stand as a
    chunk of a response among the bytes that encode the rest (Kafka's FileRecords, which
    its network layer writes with FileChannel.transferTo: broker.sendfile).
    """

    __slots__ = ("handle", "position", "size")

    def __init__(self, handle: FileHandle | None, position: int, size: int) -> None:
        self.handle = handle
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def __repr__(self) -> str:
        return f"FileSlice(position={self.position}, size={self.size})"

    @property
    def fd(self) -> int:
        assert self.handle is not None, "an empty slice has no file"
        return self.handle.fd

    def read_bytes(self) -> bytes:
        """The slice's bytes, read with pread (for callers that cannot sendfile)."""
        if self.handle is None or self.size == 0:
            return b""
        return _pread_exact(self.handle.fd, self.size, self.position)

    def after(self, n: int) -> FileSlice:
        """What is left of the slice after its first `n` bytes."""
        return FileSlice(self.handle, self.position + n, self.size - n)


EMPTY_SLICE = FileSlice(None, 0, 0)


def _pread_exact(fd: int, size: int, position: int) -> bytes:
    data = os.pread(fd, size, position)
    if len(data) == size:
        return data
    parts = [data]
    got = len(data)
    while got < size:
        more = os.pread(fd, size - got, position + got)
        if not more:
            raise OSError(f"read of {size} bytes at {position} ended after {got}")
        parts.append(more)
        got += len(more)
    return b"".join(parts)


def _load_syncfs() -> Callable[[int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        return ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None


_SYNCFS = _load_syncfs()


def _load_fallocate() -> Callable[[int, int, int, int], int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        fallocate = ctypes.CDLL(None, use_errno=True).fallocate64
    except (OSError, AttributeError):
        return None
    fallocate.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int64, ctypes.c_int64]
    fallocate.restype = ctypes.c_int
    return fallocate


_FALLOCATE = _load_fallocate()


def _give_back_reserved(fd: int, size: int) -> None:
    """Free the blocks past `size`, the file's size: ext4 and xfs free them on an ftruncate
    that does not change the size. The modification time is put back as it was, since
    retention falls back on it (Segment.largest_timestamp_ms)."""
    stat = os.fstat(fd)
    os.ftruncate(fd, size)
    os.utime(fd, ns=(stat.st_atime_ns, stat.st_mtime_ns))


def reserve_blocks(fd: int, position: int, length: int) -> bool:
    """Reserve the file's blocks for [position, position + length) without changing its
    size (Linux fallocate(2), FALLOC_FL_KEEP_SIZE). Returns False where that cannot be done
    (no fallocate, a filesystem without it, no space left): the writes then allocate their
    blocks as usual, so this never fails an append."""
    if _FALLOCATE is None:
        return False
    return _FALLOCATE(fd, _FALLOC_FL_KEEP_SIZE, position, length) == 0


def syncfs(fd: int) -> bool:
    """Linux syncfs(2): make every file of the filesystem holding `fd` durable, with one
    journal commit. For many small dirty files it costs about one fdatasync (50 files:
    0.5 ms, against 7.6 ms for 50 fdatasyncs one after the other, PERF-NOTES' disk). Since
    Linux 5.8 it reports write-back errors of the filesystem like fdatasync does for a file.

    Returns False, doing nothing, where there is no syncfs (the caller fdatasyncs instead).

    Raises:
      OSError: the filesystem could not be synced.
    """
    if _SYNCFS is None:
        return False
    if _SYNCFS(fd) != 0:
        import ctypes

        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return True


def fsync_directory(path: Path) -> None:
    """Make file creations, renames and deletions in `path` durable."""
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def file_mismatch(path: Path, expected: bytes) -> str | None:
    """Why the file at `path` does not hold `expected` ("missing", "behind the log" or
    "inconsistent (...)"), or None if it does: for index files checked against the log."""
    try:
        current = path.read_bytes()
    except FileNotFoundError:
        return "missing"
    if current == expected:
        return None
    if len(expected) > len(current) and expected.startswith(current):
        return "behind the log"
    return f"inconsistent ({len(current)} bytes on disk, {len(expected)} expected)"


def replace_file(path: Path, data: bytes) -> None:
    """Write `data` to `<path>.tmp`, then rename it over `path`: a crash leaves the old file
    or the new one, never half of one (recovery deletes a leftover .tmp)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)


def write_all(
    fd: int, parts: list[bytes | bytearray | memoryview], total: int = -1, written: int = 0
) -> None:
    """Write every part, in order, with as few writev calls as the kernel allows.

    `total` is the parts' length together, when the caller knows it; `written`, how many
    of their bytes a writev of the caller's already wrote (the rest is written here).

    Raises OSError; some prefix of the data may have been written (the caller truncates
    the file back).
    """
    if not written and len(parts) <= IOV_MAX:
        # The usual case: one writev takes it all (empty parts are harmless to writev).
        if total < 0:
            total = sum(map(len, parts))
        if not total:
            return
        written = os.writev(fd, parts)
        if written == total:
            return
    views = [memoryview(p) for p in parts if len(p)]
    while views:
        if not written:
            written = os.writev(fd, views[:IOV_MAX])
            if written == 0:
                raise OSError("writev wrote nothing")
        while written:
            if written >= len(views[0]):
                written -= len(views[0])
                views.pop(0)
            else:
                views[0] = views[0][written:]
                written = 0


def last_offset_in_file(path: Path) -> tuple[int, int]:
    """(size, last offset of the last whole batch) of a segment-format file; -1 if none.

    Walks headers only; stops at the first batch that is cut short or malformed.
    """
    with open(path, "rb") as file:
        size = os.fstat(file.fileno()).st_size
        if size == 0:
            return 0, -1
        last_offset = -1
        with mmap.mmap(file.fileno(), size, access=mmap.ACCESS_READ) as buf:
            try:
                for _, header in iter_batches(buf):
                    last_offset = header.last_offset
            except KafkaError:
                pass  # Log.open's walk cuts the segment there
        return size, last_offset


class Segment:
    """A segment file, its in-memory indexes, and the aggregates the log reads from it.

    Attributes:
        base_offset: from the file name; every batch in the file has offsets >= it.
        size: bytes of whole, trusted batches (the file is never longer after recovery).
        next_offset: last offset in the segment + 1, or base_offset when it is empty.
        max_timestamp: largest batch maxTimestamp, -1 when there is none.
        offset_of_max_timestamp / position_of_max_timestamp: the first batch holding it.
        roll_base_ms: wall time the segment's age is counted from, for segment.ms.
    """

    def __init__(
        self, directory: Path, base_offset: int, handle: FileHandle, *, index_interval_bytes: int
    ) -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.path = segment_path(directory, base_offset)
        self.handle: FileHandle | None = handle  # None once the log is closed
        self.index_interval_bytes = index_interval_bytes
        self.roll_base_ms = -1
        self.broken = False
        self._reset()

    @property
    def fd(self) -> int:
        assert self.handle is not None, f"{self.path.name}: used after its log closed"
        return self.handle.fd

    def _reset(self) -> None:
        self.size = 0
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = -1
        self.position_of_max_timestamp = -1
        self._index_offsets = array("i")
        self._index_positions = array("i")
        self._time_timestamps = array("q")
        self._time_offsets = array("i")
        self._bytes_since_index_entry = 0
        self._reserved_end = 0  # blocks up to here are reserved (PREALLOCATE_*)

    # --- opening -----------------------------------------------------------------------

    @classmethod
    def create(
        cls, directory: Path, base_offset: int, *, index_interval_bytes: int, wall_ms: int
    ) -> Segment:
        """Create an empty segment file (it must not exist yet)."""
        fd = os.open(
            segment_path(directory, base_offset),
            os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_EXCL,
            0o644,
        )
        segment = cls(
            directory, base_offset, FileHandle(fd), index_interval_bytes=index_interval_bytes
        )
        segment.roll_base_ms = wall_ms
        return segment

    @classmethod
    def open(cls, directory: Path, base_offset: int, *, index_interval_bytes: int) -> Segment:
        """Open an existing segment file. Call `recover` before using it."""
        fd = os.open(segment_path(directory, base_offset), os.O_RDWR | os.O_APPEND)
        return cls(
            directory, base_offset, FileHandle(fd), index_interval_bytes=index_interval_bytes
        )

    def recover(
        self,
        *,
        verify_crc: bool,
        min_offset: int,
        on_batch: Callable[[BatchHeader], None] | None = None,
    ) -> tuple[int, str] | None:
        """Walk every batch, rebuild the in-memory indexes, and cut the file at the first
        batch that cannot be trusted.

        A batch is trusted when, in this order:
          * its 61-byte header is all there, and the whole batch is: a crash cut a write
            short (or the file size reached disk before the data did);
          * its magic is 2 and its length covers its own header: otherwise these are bytes
            that were never a batch, typically zero-filled blocks that a crash left behind
            a size update;
          * its CRC matches (when `verify_crc`): Kafka's "nonsense block ADDED to the file"
            case, where the inode says the file grew but the blocks hold stale data;
          * its base offset is >= `min_offset` (the segment's base offset, and past the
            previous batch) and its lastOffsetDelta is not negative: a well-formed batch
            with offsets going backwards is stale data from an earlier use of the blocks.
        Everything from the first untrusted batch on is truncated: later batches cannot be
        reached without it (the format is a chain of lengths), and the offsets after a gap
        would not be the ones that were acknowledged anyway.

        `on_batch` sees each trusted batch header in order (producer state is rebuilt from it).

        Returns:
            (bytes truncated, reason) when the file was cut, else None.
        """
        self._reset()
        min_offset = max(min_offset, self.base_offset)
        stat = os.fstat(self.fd)
        file_size = stat.st_size
        reason = ""
        pos = 0
        if file_size:
            with mmap.mmap(self.fd, file_size, access=mmap.ACCESS_READ) as buf:
                while pos < file_size:
                    try:
                        header = validate_batch(buf, pos, check_crc=verify_crc)
                    except KafkaError as e:
                        reason = e.detail
                        break
                    if header.base_offset < min_offset or header.last_offset_delta < 0:
                        reason = (
                            f"batch at {pos} has offsets "
                            f"{header.base_offset}..{header.last_offset}, "
                            f"expected a base offset from {min_offset}"
                        )
                        break
                    self._add_batch(pos, header)
                    if on_batch is not None:
                        on_batch(header)
                    min_offset = header.next_offset
                    pos += header.size
        if self.size > 0 and self.roll_base_ms < 0:
            first = parse_batch_header(os.pread(self.fd, BATCH_HEADER_SIZE, 0))
            self.roll_base_ms = first.max_timestamp
        if pos < file_size:
            os.ftruncate(self.fd, pos)  # which also frees blocks reserved past the end
            return file_size - pos, reason
        if stat.st_blocks * 512 > file_size + _RESERVED_SLACK_BYTES:
            _give_back_reserved(self.fd, file_size)  # reserved before a crash
        return None

    # --- writing -----------------------------------------------------------------------

    def append(
        self,
        parts: list[bytes | bytearray | memoryview],
        headers: list[BatchHeader],
        *,
        wall_ms: int,
        size: int,
    ) -> None:
        """Append batches (given as byte parts) and index them.

        `headers` are the batches' final headers (offsets assigned), in order; their sizes,
        and the parts' lengths, add up to `size`. On OSError the file is truncated back to
        where it was and the error re-raised; if even that fails, `broken` is set: the file
        may end in a partial batch, and nothing more may be appended to it.
        """
        fd = self.handle.fd  # type: ignore[union-attr]  # the log checks it is open
        start = self.size
        end = start + size
        if end > self._reserved_end and end >= PREALLOCATE_MIN_BYTES:
            ahead = min(end, PREALLOCATE_MAX_BYTES)
            reserve_blocks(fd, start, end - start + ahead)
            self._reserved_end = end + ahead  # on failure too: retried one step later
        try:
            # One writev, the usual case; write_all finishes a short one or many parts.
            written = os.writev(fd, parts) if len(parts) <= IOV_MAX else 0
            if written != size:
                write_all(fd, parts, size, written)
        except OSError:
            self._reserved_end = 0  # the ftruncate frees them
            try:
                os.ftruncate(fd, start)
            except OSError:
                self.broken = True
            raise
        if start == 0:
            self.roll_base_ms = wall_ms
        for header in headers:
            self._add_batch(self.size, header)  # which moves self.size past the batch

    def _add_batch(self, pos: int, header: BatchHeader) -> None:
        # Kafka's LogSegment.append, one batch at a time (see the module docstring).
        # header.last_offset and header.size inline, without the properties' calls.
        last_offset = header.base_offset + header.last_offset_delta
        if header.max_timestamp > self.max_timestamp:
            self.max_timestamp = header.max_timestamp
            self.offset_of_max_timestamp = last_offset
            self.position_of_max_timestamp = pos
        if self._bytes_since_index_entry > self.index_interval_bytes:
            self._index_offsets.append(last_offset - self.base_offset)
            self._index_positions.append(pos)
            last_indexed_ts = self._time_timestamps[-1] if self._time_timestamps else -1
            if self.max_timestamp > last_indexed_ts:
                self._time_timestamps.append(self.max_timestamp)
                self._time_offsets.append(self.offset_of_max_timestamp - self.base_offset)
            self._bytes_since_index_entry = 0
        size = 12 + header.batch_length
        self._bytes_since_index_entry += size
        self.size = pos + size
        self.next_offset = last_offset + 1

    def truncate(self, position: int) -> None:
        """Cut the file at a batch boundary and recompute the indexes."""
        os.ftruncate(self.fd, position)
        self.recover(verify_crc=False, min_offset=self.base_offset)

    def flush(self) -> None:
        os.fdatasync(self.fd)

    def release_reserved(self) -> None:
        """Give back the blocks reserved past the end of the file (see the module
        docstring): an ftruncate to the size it has frees them."""
        if self._reserved_end > self.size:
            _give_back_reserved(self.fd, self.size)
        self._reserved_end = 0

    # --- index files -------------------------------------------------------------------

    def index_bytes(self) -> bytes:
        flat = array("i", [0]) * (2 * len(self._index_offsets))
        flat[0::2] = self._index_offsets
        flat[1::2] = self._index_positions
        if sys.byteorder == "little":
            flat.byteswap()
        return flat.tobytes()

    def time_index_bytes(self) -> bytes:
        pairs = zip(self._time_timestamps, self._time_offsets, strict=True)
        return b"".join(_TIME_ENTRY.pack(t, o) for t, o in pairs)

    def sync_index_files(self) -> list[str]:
        """Make the .index/.timeindex files equal to the in-memory indexes.

        Returns what had to be rewritten and why, e.g. ["index: missing"]; files already
        right are left alone.
        """
        rewritten = []
        for suffix, expected in (
            (INDEX_SUFFIX, self.index_bytes()),
            (TIMEINDEX_SUFFIX, self.time_index_bytes()),
        ):
            path = segment_path(self.directory, self.base_offset, suffix)
            why = file_mismatch(path, expected)
            if why is not None:
                rewritten.append(f"{suffix[1:]}: {why}")
                replace_file(path, expected)
        return rewritten

    # --- reading -----------------------------------------------------------------------

    def header_at(self, position: int) -> BatchHeader:
        return parse_batch_header(os.pread(self.fd, BATCH_HEADER_SIZE, position))

    def iter_batches(self, position: int = 0) -> Iterator[tuple[int, BatchHeader]]:
        """(position, header) of each batch from `position` (a batch boundary) to the end."""
        end = self.size
        while position < end:
            header = self.header_at(position)
            yield position, header
            position += header.size

    def read(self, position: int, size: int) -> bytes:
        return _pread_exact(self.fd, size, position)

    def position_for_offset(self, offset: int) -> int:
        """A batch boundary at or before the batch holding `offset` (offset index lookup)."""
        i = bisect_right(self._index_offsets, offset - self.base_offset) - 1
        return self._index_positions[i] if i >= 0 else 0

    def position_for_timestamp(self, timestamp: int) -> int:
        """A batch boundary before any batch whose maxTimestamp may be >= `timestamp`."""
        i = bisect_right(self._time_timestamps, timestamp) - 1
        if i < 0:
            return 0
        return self.position_for_offset(self.base_offset + self._time_offsets[i])

    def find_batch(self, offset: int) -> tuple[int, BatchHeader] | None:
        """The first batch whose last offset is >= `offset`, if the segment has one."""
        if offset >= self.next_offset:
            return None
        for position, header in self.iter_batches(self.position_for_offset(offset)):
            if header.last_offset >= offset:
                return position, header
        return None

    def slice_from(
        self, offset: int, max_bytes: int, end_offset: int, *, min_one: bool
    ) -> FileSlice | None:
        """Whole batches from the one holding `offset`: at most `max_bytes` (but at least
        the first batch when `min_one`), none starting at or after `end_offset`.

        Returns None when the segment has no batch at or after `offset`, and an empty
        slice when there is one but none may be returned.
        """
        found = self.find_batch(offset)
        if found is None:
            return None
        position, header = found
        if header.base_offset >= end_offset or (header.size > max_bytes and not min_one):
            return EMPTY_SLICE
        limit = position + max_bytes
        end = position + header.size
        if end_offset >= self.next_offset:
            # Only bytes limit the run: jump to the last indexed batch start within the limit
            # (every batch before it fits), then walk the few batches after it.
            i = bisect_right(self._index_positions, limit) - 1
            if i >= 0 and self._index_positions[i] > end:
                end = self._index_positions[i]
        for batch_position, batch in self.iter_batches(end):
            if batch_position + batch.size > limit or batch.base_offset >= end_offset:
                break
            end = batch_position + batch.size
        return FileSlice(self.handle, position, end - position)

    # --- lifecycle ---------------------------------------------------------------------

    def largest_timestamp_ms(self) -> int:
        """The segment's largest timestamp, or the file's mtime when no batch has one
        (Kafka's LogSegment.largestTimestamp), for time-based retention."""
        if self.max_timestamp >= 0:
            return self.max_timestamp
        return int(os.fstat(self.fd).st_mtime * 1000)

    def delete_files(self) -> None:
        """Unlink the segment's files. Open slices keep reading the old data."""
        for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX):
            segment_path(self.directory, self.base_offset, suffix).unlink(missing_ok=True)
