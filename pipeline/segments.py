"""Planning and scanning kmock's log segments: the half of the data source that needs no Spark.

Layout (DESIGN.md, "Storage layout"):

    <data dir>/<topic>-<partition>/<20-digit base offset>.log   v2 record batches, back to back

Planning (`partition_dirs`, `plan`) lists partition directories and their segments, and
prunes them by topic, partition and offset range before anything is read. A segment covers
the offsets from its base offset up to the next segment's base offset, so a range prunes
whole files. Each planned `Segment` records the file's absolute path (resolved where the
plan is made, on the driver: an executor's working directory is its own) and its size at
planning time: a segment the broker is still appending to is read as the snapshot it was then.

Every planned file is read or the read fails: a file that cannot be opened raises
`UnreadableSegments`, naming it. On a cluster that means the executor does not see the data
dir at the driver's path, and a report without those files would be wrong, not partial.
Bytes that are there but damaged are a different matter (below): they are skipped.

Scanning (`scan`) walks a segment batch by batch, using protocol.records' header parser and
validation (magic, length, CRC-32C: what the broker's recovery checks). It never raises on
bad bytes; it records what it skipped as a `Skipped(position, length, reason)` and goes on:

* a torn tail (the last batch cut short, as a crash leaves it) ends the scan;
* a corrupt batch (bad magic, impossible length, CRC mismatch) is skipped, and the scan
  resynchronises at the next position where a whole batch with a valid CRC starts. Kafka's
  recovery truncates the log there instead; a reader loses less by reading on.

Decoding (`decode_columns`) turns batches into column lists, the shape Arrow wants. The
common record shape (no record headers) goes through a column-oriented fast path built on
protocol.records' varint reader; everything else, and every malformed batch, goes through
protocol.records.decode_records, the one authority on what a valid record is. Both give the
same rows (tests/pipeline/test_segments.py checks that).
"""

from __future__ import annotations

import logging
import mmap
import os
import re
import socket
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from protocol.compression import decompress
from protocol.errors import KafkaError
from protocol.records import (
    BATCH_HEADER_SIZE,
    BatchHeader,
    decode_records,
    parse_batch_header,
    read_varint,
    validate_batch,
)
from storage.layout import parse_partition_dir, parse_segment_name

__all__ = [
    "Columns",
    "Segment",
    "SegmentScan",
    "Skipped",
    "UnreadableSegments",
    "decode_columns",
    "iter_columns",
    "open_segment",
    "partition_dirs",
    "plan",
    "scan",
    "scan_segment",
]

log = logging.getLogger(__name__)

_MAGIC_AT = 16  # the magic byte's position in every message format
_MAGIC = b"\x02"
# Offsets within one segment are relative int32s in its .index (Kafka's LogSegment rule),
# which bounds where a resynchronised batch's base offset may lie.
_MAX_RELATIVE_OFFSET = 2**31 - 1


@dataclass(frozen=True, slots=True)
class Segment:
    """One segment file as planned: where it is and what it may hold."""

    topic: str
    partition: int
    base_offset: int
    path: str
    size_bytes: int  # the file's size when planned; bytes appended later are not read
    next_base_offset: int | None  # the next segment's base offset; None for the last one


class Skipped(NamedTuple):
    """A byte range of a segment that was not read, and why."""

    position: int
    length: int
    reason: str


class UnreadableSegments(Exception):
    """Planned segment files that this process cannot open.

    On a cluster: the executor does not see the data dir at the path the driver planned
    with. The message names the host, the files and the remedy, and is one line that
    starts with `MARKER`, because it reaches the driver only as text inside Spark's error
    (`message_in` finds it there).
    """

    MARKER = "kmock-log: "
    _LISTED = 5  # files named in the message; the rest are counted

    def __init__(self, failures: list[tuple[str, str]]) -> None:
        self.failures = failures
        names = "; ".join(f"{path} ({why})" for path, why in failures[: self._LISTED])
        more = len(failures) - self._LISTED
        super().__init__(
            f"{self.MARKER}host {socket.gethostname()} could not open {len(failures)} planned "
            f"segment file{'s' if len(failures) != 1 else ''}: {names}"
            + (f"; and {more} more" if more > 0 else "")
            + ". The data directory must be visible to every worker at the same path "
            "(a shared mount), as the driver sees it."
        )

    @classmethod
    def message_in(cls, text: str) -> str | None:
        """This error's message, if `text` (a Spark job's error, say) carries one."""
        m = re.search(re.escape(cls.MARKER) + r"host .*? as the driver sees it\.", text)
        return None if m is None else m[0]


def partition_dirs(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[str, int, Path]]:
    """The (topic, partition, directory) of every partition under `paths`, sorted.

    Each path is a data dir (its `<topic>-<partition>` subdirectories are partitions) or a
    partition dir itself: a directory named `<topic>-<partition>` with no partition
    directories inside. Topic names may contain '-': the partition is the last field.
    Directories such as Kafka's `<topic>-<n>.<uuid>-delete` do not match and are ignored.
    The data dir of several brokers (`kmock.brokers` > 1) holds one log dir per broker,
    `broker-<id>/` with its own meta.properties: their partitions are read, each once (kmock
    keeps one log per partition; where copies of a partition are found in several broker
    dirs, the one with the most log bytes).

    Raises:
        FileNotFoundError: a path that is not a directory.
    """
    found: dict[Path, tuple[str, int, Path]] = {}
    for path in map(Path, paths):
        if not path.is_dir():
            raise FileNotFoundError(f"{path}: not a directory")
        children = _partition_children(path)
        if parse_partition_dir(path.name) and not children:
            children = [path]
        for child in children:
            parsed = parse_partition_dir(child.name)
            assert parsed is not None
            found.setdefault(child.resolve(), (*parsed, child))
    return sorted(found.values(), key=lambda t: (t[0], t[1]))


def _partition_children(path: Path) -> list[Path]:
    """The partition directories in data dir `path`, through its broker dirs if any."""
    children = [c for c in sorted(path.iterdir()) if c.is_dir() and parse_partition_dir(c.name)]
    brokers = [c for c in children if (c / "meta.properties").is_file()]
    if not brokers:
        return children
    copies: dict[tuple[str, int], list[Path]] = {}
    for broker in brokers:
        for c in sorted(broker.iterdir()):
            parsed = parse_partition_dir(c.name)
            if c.is_dir() and parsed is not None:
                copies.setdefault(parsed, []).append(c)
    chosen = [dirs[0] if len(dirs) == 1 else max(dirs, key=_log_bytes) for dirs in copies.values()]
    return [c for c in children if c not in brokers] + chosen


def _log_bytes(directory: Path) -> int:
    return sum(f.stat().st_size for f in directory.glob("*.log"))


def plan(
    paths: Iterable[str | os.PathLike[str]],
    *,
    topics: Iterable[str] | None = None,
    partitions: Iterable[int] | None = None,
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> list[Segment]:
    """The segments to read, pruned by topic, partition and offset range [start, end).

    A segment is kept when the offsets it can hold, [base offset, next segment's base
    offset), meet the range. Empty files are kept: they carry a partition's log end offset
    when retention left nothing else.
    """
    topic_set = None if topics is None else set(topics)
    partition_set = None if partitions is None else set(partitions)
    segments = []
    for topic, partition, directory in partition_dirs(paths):
        if topic_set is not None and topic not in topic_set:
            continue
        if partition_set is not None and partition not in partition_set:
            continue
        files = sorted(
            (base, entry)
            for entry in os.scandir(directory)
            if (base := parse_segment_name(entry.name)) is not None and entry.is_file()
        )
        for i, (base, entry) in enumerate(files):
            next_base = files[i + 1][0] if i + 1 < len(files) else None
            if end_offset is not None and base >= end_offset:
                break
            if start_offset is not None and next_base is not None and next_base <= start_offset:
                continue
            path = os.path.abspath(entry.path)
            segments.append(Segment(topic, partition, base, path, entry.stat().st_size, next_base))
    return segments


@contextmanager
def open_segment(segment: Segment, skipped: list[Skipped]) -> Iterator[mmap.mmap | bytes]:
    """`with open_segment(segment, skipped) as buf:` maps the planned bytes read-only.

    `buf` supports len, slicing, find and the buffer protocol (an mmap, or b"" when there
    is nothing to map). Bytes past `segment.size_bytes` are not mapped. A file shortened
    since planning (a broker's recovery) is not an error: what is gone is recorded in
    `skipped`.

    Raises:
        UnreadableSegments: the file cannot be opened (missing here, or not readable).
            Retention may delete a segment after planning, but a file missing here is far
            more often a data dir this host does not see, and reading on would report a
            wrong answer as a complete one.
    """
    if segment.size_bytes == 0:
        yield b""
        return
    try:
        f = open(segment.path, "rb")  # noqa: SIM115 (closed below, after the map)
    except OSError as e:
        raise UnreadableSegments([(segment.path, e.strerror or type(e).__name__)]) from e
    with f:
        size = min(segment.size_bytes, os.fstat(f.fileno()).st_size)
        if size < segment.size_bytes:
            skipped.append(
                Skipped(size, segment.size_bytes - size, "gone: the file shrank after planning")
            )
        if size == 0:
            yield b""
            return
        with mmap.mmap(f.fileno(), size, access=mmap.ACCESS_READ) as buf:
            yield buf


def scan(
    buf: mmap.mmap | bytes,
    *,
    base_offset: int = 0,
    check_crc: bool = True,
    skipped: list[Skipped],
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each valid batch; append what is not valid to `skipped`.

    `base_offset` is the segment's: a resynchronised batch must lie in its offset range.
    """
    size = len(buf)
    pos = 0
    while pos < size:
        try:
            header = validate_batch(buf, pos, check_crc=check_crc)
        except KafkaError as e:
            resume = _resync(buf, pos + 1, base_offset)
            if resume == size and _looks_torn(buf, pos):
                skipped.append(Skipped(pos, size - pos, f"truncated: {e.detail}"))
            else:
                skipped.append(Skipped(pos, resume - pos, f"corrupt: {e.detail}"))
            pos = resume
            continue
        yield pos, header
        pos += header.size


def _looks_torn(buf: mmap.mmap | bytes, pos: int) -> bool:
    """True when the bytes at `pos` are the start of a batch that the file cuts short."""
    if len(buf) - pos < BATCH_HEADER_SIZE:
        return True
    header = parse_batch_header(buf, pos)
    return (
        header.magic == 2
        and header.batch_length >= BATCH_HEADER_SIZE - 12
        and pos + header.size > len(buf)
    )


def _resync(buf: mmap.mmap | bytes, start: int, base_offset: int) -> int:
    """The first position from `start` where a whole batch with a valid CRC starts (or the end).

    Candidates are found by their magic byte, then must have a plausible base offset and
    length before the CRC is computed, so garbage costs about one `find` per 0x02 byte.
    """
    size = len(buf)
    at = start + _MAGIC_AT
    while True:
        i = buf.find(_MAGIC, at)
        if i < 0 or i - _MAGIC_AT + BATCH_HEADER_SIZE > size:
            return size
        candidate = i - _MAGIC_AT
        at = i + 1
        header = parse_batch_header(buf, candidate)
        if not base_offset <= header.base_offset <= base_offset + _MAX_RELATIVE_OFFSET:
            continue
        if header.batch_length < BATCH_HEADER_SIZE - 12 or candidate + header.size > size:
            continue
        try:
            validate_batch(buf, candidate, check_crc=True)
        except KafkaError:
            continue
        return candidate


# --- decoding records into columns ------------------------------------------------------


@dataclass(slots=True)
class Columns:
    """Decoded records as parallel lists (one entry per record), ready for Arrow.

    `header_offsets` are Arrow list offsets into `header_keys`/`header_values` and hold
    one more entry than there are records.
    """

    offset: list[int] = field(default_factory=list)
    timestamp: list[int] = field(default_factory=list)  # ms since the epoch; -1 = none
    timestamp_type: list[int] = field(default_factory=list)
    key: list[bytes | None] = field(default_factory=list)
    value: list[bytes | None] = field(default_factory=list)
    header_offsets: list[int] = field(default_factory=lambda: [0])
    header_keys: list[str] = field(default_factory=list)
    header_values: list[bytes | None] = field(default_factory=list)
    producer_id: list[int] = field(default_factory=list)
    producer_epoch: list[int] = field(default_factory=list)
    is_transactional: list[bool] = field(default_factory=list)
    is_control: list[bool] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.offset)


class _Fallback(Exception):
    """The fast path met something it leaves to protocol.records.decode_records."""


def decode_columns(
    buf: mmap.mmap | bytes,
    pos: int,
    header: BatchHeader,
    out: Columns,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
) -> int:
    """Append the records of the batch at `pos` with offsets in [start, end) to `out`.

    Returns the number of records appended.

    Raises:
        KafkaError: CORRUPT_MESSAGE or UNSUPPORTED_COMPRESSION_TYPE for a batch whose
            records cannot be decoded (nothing is appended then).
    """
    whole = (start_offset is None or header.base_offset >= start_offset) and (
        end_offset is None or header.last_offset < end_offset
    )
    if whole and header.compression <= 4:
        with memoryview(buf) as view:
            section = view[pos + BATCH_HEADER_SIZE : pos + header.size]
            body = decompress(header.compression, section) if header.compression else bytes(section)
        try:
            offsets, timestamps, keys, values = _decode_plain(body, header)
        except (_Fallback, IndexError):
            pass
        else:
            n = len(offsets)
            out.offset += offsets
            out.timestamp += [header.max_timestamp] * n if header.timestamp_type else timestamps
            out.key += keys
            out.value += values
            out.header_offsets += [out.header_offsets[-1]] * n
            _append_batch_fields(out, header, n)
            return n
    with memoryview(buf) as view:
        records = decode_records(view[pos : pos + header.size])
    n = 0
    for r in records:
        if (start_offset is not None and r.offset < start_offset) or (
            end_offset is not None and r.offset >= end_offset
        ):
            continue
        out.offset.append(r.offset)
        out.timestamp.append(r.timestamp)
        out.key.append(r.key)
        out.value.append(r.value)
        for k, v in r.headers:
            out.header_keys.append(k)
            out.header_values.append(v)
        out.header_offsets.append(len(out.header_keys))
        n += 1
    _append_batch_fields(out, header, n)
    return n


def _append_batch_fields(out: Columns, header: BatchHeader, n: int) -> None:
    out.timestamp_type += [header.timestamp_type] * n
    out.producer_id += [header.producer_id] * n
    out.producer_epoch += [header.producer_epoch] * n
    out.is_transactional += [header.is_transactional] * n
    out.is_control += [header.is_control] * n


def _decode_plain(
    body: bytes, header: BatchHeader
) -> tuple[list[int], list[int], list[bytes | None], list[bytes | None]]:
    """Decode records that carry no headers, column-wise; `_Fallback` for anything else.

    Grammar in protocol/records.py. Each varint is read inline when it fits one or two
    bytes (values up to 8191 after zigzag: every length, delta and count of ordinary
    records) and by protocol.records' reader otherwise; this code is the pipeline's hot
    loop, and a call per field would double its cost. Anything unexpected, a record
    header, a negative length other than -1, a field running past its record, a record
    whose fields do not fill it, bytes left over, raises `_Fallback`, and decode_records
    redoes the batch and names the problem.
    """
    if header.records_count < 0:
        raise _Fallback
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    offsets: list[int] = []
    timestamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    p = 0
    for _ in range(header.records_count):
        # length
        b = body[p]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            p += 1
        elif body[p + 1] < 0x80:
            v = (b & 0x7F) | (body[p + 1] << 7)
            n = (v >> 1) ^ -(v & 1)
            p += 2
        else:
            n, p = read_varint(body, p)
        end = p + n
        p += 1  # attributes (unused)
        # timestampDelta
        b = body[p]
        if b < 0x80:
            timestamp_delta = (b >> 1) ^ -(b & 1)
            p += 1
        elif body[p + 1] < 0x80:
            v = (b & 0x7F) | (body[p + 1] << 7)
            timestamp_delta = (v >> 1) ^ -(v & 1)
            p += 2
        else:
            timestamp_delta, p = read_varint(body, p)
        # offsetDelta
        b = body[p]
        if b < 0x80:
            offset_delta = (b >> 1) ^ -(b & 1)
            p += 1
        elif body[p + 1] < 0x80:
            v = (b & 0x7F) | (body[p + 1] << 7)
            offset_delta = (v >> 1) ^ -(v & 1)
            p += 2
        else:
            offset_delta, p = read_varint(body, p)
        # keyLength, key
        b = body[p]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            p += 1
        elif body[p + 1] < 0x80:
            v = (b & 0x7F) | (body[p + 1] << 7)
            n = (v >> 1) ^ -(v & 1)
            p += 2
        else:
            n, p = read_varint(body, p)
        if n >= 0:
            keys.append(body[p : p + n])
            p += n
        elif n == -1:
            keys.append(None)
        else:
            raise _Fallback
        # valueLength, value
        b = body[p]
        if b < 0x80:
            n = (b >> 1) ^ -(b & 1)
            p += 1
        elif body[p + 1] < 0x80:
            v = (b & 0x7F) | (body[p + 1] << 7)
            n = (v >> 1) ^ -(v & 1)
            p += 2
        else:
            n, p = read_varint(body, p)
        if n >= 0:
            values.append(body[p : p + n])
            p += n
        elif n == -1:
            values.append(None)
        else:
            raise _Fallback
        # headersCount: only 0 is decoded here
        if body[p] != 0 or p + 1 != end:
            raise _Fallback
        p = end
        offsets.append(base_offset + offset_delta)
        timestamps.append(base_timestamp + timestamp_delta)
    if p != len(body):
        raise _Fallback
    return offsets, timestamps, keys, values


# --- one segment, summarised ------------------------------------------------------------


@dataclass(slots=True)
class SegmentScan:
    """What a scan of one segment found: its batches in brief, and what it skipped."""

    segment: Segment
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    next_offset: int | None = None  # the last valid batch's baseOffset + lastOffsetDelta + 1
    max_timestamp: int = -1
    skipped: list[Skipped] = field(default_factory=list)

    @property
    def log_end_offset(self) -> int:
        """Where the next record would go: the last batch's next offset, or the base offset."""
        return self.segment.base_offset if self.next_offset is None else self.next_offset

    @property
    def skipped_bytes(self) -> int:
        return sum(s.length for s in self.skipped)


def scan_segment(segment: Segment, *, check: str = "crc") -> SegmentScan:
    """Scan one segment's batch headers (`check`: "none", "crc", or "records" to decode too)."""
    result = SegmentScan(segment)
    with open_segment(segment, result.skipped) as buf:
        for pos, header in scan(
            buf, base_offset=segment.base_offset, check_crc=check != "none", skipped=result.skipped
        ):
            if check == "records":
                try:
                    decode_columns(buf, pos, header, Columns())
                except KafkaError as e:
                    result.skipped.append(Skipped(pos, header.size, f"records: {e.detail}"))
                    continue
            result.batches += 1
            result.records += header.records_count
            if result.first_offset is None:
                result.first_offset = header.base_offset
            result.next_offset = header.next_offset
            result.max_timestamp = max(result.max_timestamp, header.max_timestamp)
    if result.skipped:
        log.warning(
            "%s: skipped %d bytes: %s",
            segment.path,
            result.skipped_bytes,
            "; ".join(f"{s.length} bytes at {s.position} ({s.reason})" for s in result.skipped),
        )
    return result


def iter_columns(
    segment: Segment,
    *,
    start_offset: int | None = None,
    end_offset: int | None = None,
    check_crc: bool = True,
    rows: int = 65536,
    skipped: list[Skipped],
) -> Iterator[Columns]:
    """Decode one segment's records with offsets in [start, end), in chunks of about `rows`.

    A batch whose records cannot be decoded is skipped whole and recorded in `skipped`.
    """
    chunk = Columns()
    with open_segment(segment, skipped) as buf:
        for pos, header in scan(
            buf, base_offset=segment.base_offset, check_crc=check_crc, skipped=skipped
        ):
            if (start_offset is not None and header.next_offset <= start_offset) or (
                end_offset is not None and header.base_offset >= end_offset
            ):
                continue
            try:
                decode_columns(
                    buf, pos, header, chunk, start_offset=start_offset, end_offset=end_offset
                )
            except KafkaError as e:
                skipped.append(Skipped(pos, header.size, f"records: {e.detail}"))
                continue
            if len(chunk) >= rows:
                yield chunk
                chunk = Columns()
    if len(chunk):
        yield chunk
