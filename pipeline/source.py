"""The Spark data source "kmock-log": kmock's segment files as rows, with no broker running.

    spark.read.format("kmock-log").option("path", "./data").load()
    spark.read.format("kmock-log").load(["./data/orders-0", "./data/orders-1"])

Options (all optional but the path):

    path / paths     a data dir, a partition dir, or several (load(list) sets `paths`;
                     `path` may also hold a comma-separated list)
    topics           comma-separated topic names to read (default: all; with
                     decode=consumer_offsets: __consumer_offsets)
    partitions       comma-separated partition numbers to read
    start_offset     first offset to read (inclusive)
    end_offset       offset to stop before (exclusive)
    mode             records (default): one row per record, RECORDS
                     batches: one row per record batch, from its header alone, BATCHES
                     segments: one row per segment file, with what was skipped, SEGMENTS
    decode           consumer_offsets (mode=records only): typed __consumer_offsets rows,
                     pipeline.offsets.SCHEMA
    check            crc (default): skip batches that fail magic, length or CRC-32C checks;
                     none: skip only what cannot be framed; records (mode=segments): also
                     decode every record, and report the batches that do not decode

Files are pruned by the topic, partition and offset options while planning, before any is
opened (a segment holds [its base offset, the next segment's base offset)); the offset
range also trims records inside the batches at its edges. There is no filter pushdown:
Spark 4.3.0's `pushFilters` for Python data sources returns wrong results when one
DataFrame feeds two scans with different filters (PYSPARK-NOTES §2), so filters on the
DataFrame are applied by Spark after reading, and pruning is asked for with options.

One input partition per segment file (empty files are left out; mode=segments, which only
reads headers and CRCs, packs segments into tasks of up to 256 MiB). `read()` maps the
file (only the bytes it had when planned) and yields Arrow record batches of about 64k
rows. Damaged bytes never fail a
read: they are skipped, logged by the executor, and listed by mode=segments, which is what
the jobs report from. A planned file that cannot be opened does fail the read
(segments.UnreadableSegments), because a report without it would look complete and be wrong.

Runs wherever the files are visible at the same path to the driver (planning opens
directories, and makes the paths absolute) and to the executors (reading opens segments): a
local disk in local mode, a shared mount on a cluster.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

from pipeline import offsets
from pipeline.segments import (
    Columns,
    Segment,
    SegmentScan,
    Skipped,
    UnreadableSegments,
    iter_columns,
    open_segment,
    plan,
    scan,
    scan_segment,
)
from protocol.compression import CompressionType
from storage.layout import OFFSETS_TOPIC

__all__ = [
    "BATCHES",
    "CONSUMER_OFFSETS_TOPIC",
    "RECORDS",
    "SEGMENTS",
    "KmockLogDataSource",
    "ReadOptions",
    "ddl",
    "ddl_type",
    "records_batch",
]

log = logging.getLogger(__name__)

CONSUMER_OFFSETS_TOPIC = OFFSETS_TOPIC
ROWS_PER_BATCH = 65536  # Arrow batch size: PYSPARK-NOTES §2 measured ~64k rows as the sweet spot
# mode=segments reads batch headers and CRCs only, so one task takes many segments: empty
# ones (most of __consumer_offsets' 50 partitions) and small ones would each cost a task.
SEGMENTS_TASK_BYTES = 256 * 1024 * 1024
TIMESTAMP = pa.timestamp("us", tz="UTC")
HEADER = pa.struct([("key", pa.string()), ("value", pa.binary())])

RECORDS = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", TIMESTAMP),
        ("timestamp_type", pa.int32()),  # 0 CreateTime, 1 LogAppendTime
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("headers", pa.list_(HEADER)),
        ("producer_id", pa.int64()),
        ("producer_epoch", pa.int16()),
        ("is_transactional", pa.bool_()),
        ("is_control", pa.bool_()),
    ]
)

BATCHES = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("segment", pa.int64()),  # the segment file's base offset
        ("position", pa.int64()),  # byte position of the batch in the segment file
        ("base_offset", pa.int64()),
        ("last_offset", pa.int64()),  # baseOffset + lastOffsetDelta
        ("records_count", pa.int32()),
        ("size_bytes", pa.int32()),
        ("partition_leader_epoch", pa.int32()),
        ("base_timestamp", TIMESTAMP),
        ("max_timestamp", TIMESTAMP),
        ("timestamp_type", pa.int32()),
        ("compression", pa.string()),  # none, gzip, snappy, lz4, zstd
        ("producer_id", pa.int64()),
        ("producer_epoch", pa.int16()),
        ("base_sequence", pa.int32()),
        ("is_transactional", pa.bool_()),
        ("is_control", pa.bool_()),
    ]
)

SKIPPED = pa.struct([("position", pa.int64()), ("length", pa.int64()), ("reason", pa.string())])

SEGMENTS = pa.schema(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("segment", pa.int64()),  # base offset
        ("path", pa.string()),
        ("size_bytes", pa.int64()),  # as planned
        ("batches", pa.int64()),  # valid batches
        ("records", pa.int64()),  # their recordsCount, summed
        ("first_offset", pa.int64()),  # first valid batch's base offset; null if none
        ("log_end_offset", pa.int64()),  # last valid batch's last offset + 1, else the base offset
        ("max_timestamp", TIMESTAMP),
        ("skipped_bytes", pa.int64()),
        ("skipped", pa.list_(SKIPPED)),
    ]
)

_MODES = ("records", "batches", "segments")
_CHECKS = ("crc", "none", "records")


def ddl(schema: pa.Schema) -> str:
    """The Spark DDL string of an Arrow schema (data sources take DDL; PYSPARK-NOTES §1.5)."""
    return ", ".join(f"`{f.name}` {ddl_type(f.type)}" for f in schema)


def ddl_type(t: pa.DataType) -> str:
    if pa.types.is_struct(t):
        return (
            "struct<"
            + ", ".join(
                f"`{t.field(i).name}`: {ddl_type(t.field(i).type)}" for i in range(t.num_fields)
            )
            + ">"
        )
    if pa.types.is_list(t):
        return f"array<{ddl_type(t.value_type)}>"
    simple = {
        pa.string(): "string",
        pa.binary(): "binary",
        pa.bool_(): "boolean",
        pa.int16(): "smallint",
        pa.int32(): "int",
        pa.int64(): "bigint",
        TIMESTAMP: "timestamp",
    }
    return simple[t]


class ReadOptions:
    """The data source options, parsed and checked (ValueError names a bad one)."""

    def __init__(self, options: dict[str, str]) -> None:
        o = {k.lower(): v for k, v in options.items()}
        paths: list[str] = []
        if o.get("paths"):
            paths += json.loads(o["paths"])
        if o.get("path"):
            paths += [p for p in o["path"].split(",") if p]
        if not paths:
            raise ValueError("kmock-log: give a path (a data dir or partition dirs)")
        self.paths = paths
        self.mode = o.get("mode", "records")
        if self.mode not in _MODES:
            raise ValueError(
                f"kmock-log: mode must be one of {', '.join(_MODES)}, not {self.mode!r}"
            )
        self.decode = o.get("decode") or None
        if self.decode not in (None, "consumer_offsets"):
            raise ValueError(f"kmock-log: decode must be consumer_offsets, not {self.decode!r}")
        if self.decode and self.mode != "records":
            raise ValueError("kmock-log: decode=consumer_offsets needs mode=records")
        self.check = o.get("check", "crc")
        if self.check not in _CHECKS or (self.check == "records" and self.mode != "segments"):
            raise ValueError(
                "kmock-log: check must be crc or none (or records with mode=segments), "
                f"not {self.check!r}"
            )
        topics = o.get("topics")
        self.topics = [t for t in topics.split(",") if t] if topics else None
        if self.topics is None and self.decode:
            self.topics = [CONSUMER_OFFSETS_TOPIC]
        parts = o.get("partitions")
        self.partitions = (
            [_int("partitions", p) for p in parts.split(",") if p.strip()] if parts else None
        )
        self.start_offset = (
            _int("start_offset", o["start_offset"]) if o.get("start_offset") else None
        )
        self.end_offset = _int("end_offset", o["end_offset"]) if o.get("end_offset") else None

    @property
    def schema(self) -> pa.Schema:
        if self.decode:
            return offsets.SCHEMA
        return {"records": RECORDS, "batches": BATCHES, "segments": SEGMENTS}[self.mode]


def _int(name: str, text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ValueError(f"kmock-log: {name} must be an integer, not {text!r}") from None


class KmockLogDataSource(DataSource):
    """kmock's on-disk logs as a Spark data source named "kmock-log" (see the module docstring)."""

    @classmethod
    def name(cls) -> str:
        return "kmock-log"

    def schema(self) -> str:
        return ddl(ReadOptions(dict(self.options)).schema)

    def reader(self, schema: Any) -> DataSourceReader:
        return KmockLogReader(ReadOptions(dict(self.options)))


class KmockLogReader(DataSourceReader):
    def __init__(self, options: ReadOptions) -> None:
        self.options = options

    def partitions(self) -> list[InputPartition]:
        o = self.options
        segments = plan(
            o.paths,
            topics=o.topics,
            partitions=o.partitions,
            start_offset=o.start_offset,
            end_offset=o.end_offset,
        )
        if o.mode == "segments":
            return [InputPartition(tuple(group)) for group in _pack(segments, SEGMENTS_TASK_BYTES)]
        return [InputPartition(s) for s in segments if s.size_bytes > 0]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        o = self.options
        if partition is None or partition.value is None:
            return  # planning found nothing: Spark still runs one task, with no partition
        if o.mode == "segments":
            yield segment_batch(_scan_all(partition.value, o.check))
            return
        segment: Segment = partition.value
        skipped: list[Skipped] = []
        if o.mode == "batches":
            yield from read_batches(
                segment, o.start_offset, o.end_offset, o.check != "none", skipped
            )
        else:
            columns = iter_columns(
                segment,
                start_offset=o.start_offset,
                end_offset=o.end_offset,
                check_crc=o.check != "none",
                rows=ROWS_PER_BATCH,
                skipped=skipped,
            )
            if o.decode:
                yield from offsets.iter_record_batches(
                    segment.partition, columns, rows=ROWS_PER_BATCH
                )
            else:
                for c in columns:
                    yield records_batch(segment.topic, segment.partition, c)
        if skipped:
            log.warning(
                "%s: skipped %d bytes: %s",
                segment.path,
                sum(s.length for s in skipped),
                "; ".join(f"{s.length} bytes at {s.position} ({s.reason})" for s in skipped),
            )


def _scan_all(segments: tuple[Segment, ...], check: str) -> list[SegmentScan]:
    """Scan every segment of a task; if some cannot be opened, one error naming them all."""
    scans: list[SegmentScan] = []
    failures: list[tuple[str, str]] = []
    for s in segments:
        try:
            scans.append(scan_segment(s, check=check))
        except UnreadableSegments as e:
            failures += e.failures
    if failures:
        raise UnreadableSegments(failures)
    return scans


def _pack(segments: list[Segment], budget: int) -> list[list[Segment]]:
    """Consecutive segments in groups of about `budget` bytes (an empty file weighs nothing)."""
    groups: list[list[Segment]] = []
    size = 0
    for s in segments:
        if not groups or (size > 0 and size + s.size_bytes > budget):
            groups.append([])
            size = 0
        groups[-1].append(s)
        size += s.size_bytes
    return groups


def _timestamps(ms: list[int]) -> pa.Array:
    """Epoch milliseconds as UTC microsecond timestamps, Kafka's -1 ("none") as null."""
    a = pa.array(ms, pa.int64())
    a = pc.if_else(pc.equal(a, -1), pa.scalar(None, pa.int64()), a)
    return pc.multiply(a, 1000).cast(TIMESTAMP)


def records_batch(topic: str, partition: int, c: Columns) -> pa.RecordBatch:
    """Decoded records of one partition as an Arrow batch of `RECORDS`."""
    n = len(c)
    headers = pa.ListArray.from_arrays(
        pa.array(c.header_offsets, pa.int32()),
        pa.StructArray.from_arrays(
            [pa.array(c.header_keys, pa.string()), pa.array(c.header_values, pa.binary())],
            fields=list(HEADER),
        ),
    )
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(topic, pa.string()), n),
            pa.repeat(pa.scalar(partition, pa.int32()), n),
            pa.array(c.offset, pa.int64()),
            _timestamps(c.timestamp),
            pa.array(c.timestamp_type, pa.int32()),
            pa.array(c.key, pa.binary()),
            pa.array(c.value, pa.binary()),
            headers,
            pa.array(c.producer_id, pa.int64()),
            pa.array(c.producer_epoch, pa.int16()),
            pa.array(c.is_transactional, pa.bool_()),
            pa.array(c.is_control, pa.bool_()),
        ],
        schema=RECORDS,
    )


def read_batches(
    segment: Segment,
    start_offset: int | None,
    end_offset: int | None,
    check_crc: bool,
    skipped: list[Skipped],
) -> Iterator[pa.RecordBatch]:
    """One row per valid batch header of `segment` meeting [start, end), as `BATCHES`."""
    rows: list[tuple[int, Any]] = []
    with open_segment(segment, skipped) as buf:
        for pos, h in scan(
            buf, base_offset=segment.base_offset, check_crc=check_crc, skipped=skipped
        ):
            if (start_offset is not None and h.next_offset <= start_offset) or (
                end_offset is not None and h.base_offset >= end_offset
            ):
                continue
            rows.append((pos, h))
            if len(rows) >= ROWS_PER_BATCH:
                yield _batches_batch(segment, rows)
                rows = []
    if rows:
        yield _batches_batch(segment, rows)


def _codec_name(codec: int) -> str:
    try:
        return CompressionType(codec).name.lower()
    except ValueError:
        return str(codec)


def _batches_batch(segment: Segment, rows: list[tuple[int, Any]]) -> pa.RecordBatch:
    n = len(rows)
    hs = [h for _, h in rows]
    return pa.RecordBatch.from_arrays(
        [
            pa.repeat(pa.scalar(segment.topic, pa.string()), n),
            pa.repeat(pa.scalar(segment.partition, pa.int32()), n),
            pa.repeat(pa.scalar(segment.base_offset, pa.int64()), n),
            pa.array([p for p, _ in rows], pa.int64()),
            pa.array([h.base_offset for h in hs], pa.int64()),
            pa.array([h.last_offset for h in hs], pa.int64()),
            pa.array([h.records_count for h in hs], pa.int32()),
            pa.array([h.size for h in hs], pa.int32()),
            pa.array([h.partition_leader_epoch for h in hs], pa.int32()),
            _timestamps([h.base_timestamp for h in hs]),
            _timestamps([h.max_timestamp for h in hs]),
            pa.array([h.timestamp_type for h in hs], pa.int32()),
            pa.array([_codec_name(h.compression) for h in hs], pa.string()),
            pa.array([h.producer_id for h in hs], pa.int64()),
            pa.array([h.producer_epoch for h in hs], pa.int16()),
            pa.array([h.base_sequence for h in hs], pa.int32()),
            pa.array([h.is_transactional for h in hs], pa.bool_()),
            pa.array([h.is_control for h in hs], pa.bool_()),
        ],
        schema=BATCHES,
    )


def segment_batch(scans: list[Any]) -> pa.RecordBatch:
    """`segments.SegmentScan` results as an Arrow batch of `SEGMENTS`."""
    return pa.RecordBatch.from_pylist(
        [
            {
                "topic": s.segment.topic,
                "partition": s.segment.partition,
                "segment": s.segment.base_offset,
                "path": s.segment.path,
                "size_bytes": s.segment.size_bytes,
                "batches": s.batches,
                "records": s.records,
                "first_offset": s.first_offset,
                "log_end_offset": s.log_end_offset,
                "max_timestamp": None if s.max_timestamp == -1 else s.max_timestamp * 1000,
                "skipped_bytes": s.skipped_bytes,
                "skipped": [k._asdict() for k in s.skipped],
            }
            for s in scans
        ],
        schema=SEGMENTS,
    )
