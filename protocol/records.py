"""RecordBatch v2 (magic 2): header parsing, validation, offset assignment, record codec.

Grammar (big-endian; Kafka's docs/implementation.html, "Record Batch" and "Record"):

    RecordBatch =>
      baseOffset           int64    assigned by the broker: rewritten in place on append
      batchLength          int32    bytes after this field (so a batch is 12 + batchLength)
      partitionLeaderEpoch int32    assigned by the broker: rewritten in place on append
      magic                int8     = 2
      crc                  uint32   CRC-32C (Castagnoli) of attributes .. end of batch
      attributes           int16    bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd)
                                    bit 3 timestampType (0 CreateTime, 1 LogAppendTime)
                                    bit 4 isTransactional, bit 5 isControlBatch
                                    bit 6 hasDeleteHorizonMs (set by Kafka's cleaner; unused here)
      lastOffsetDelta      int32
      baseTimestamp        int64
      maxTimestamp         int64
      producerId           int64    -1 = not idempotent
      producerEpoch        int16
      baseSequence         int32    -1 = no sequence
      recordsCount         int32
      records              [Record] compressed as one stream when codec != 0

    Record =>
      length          varint    bytes after this field
      attributes      int8      unused
      timestampDelta  varlong   from baseTimestamp
      offsetDelta     varint    from baseOffset
      keyLength       varint    -1 = null key
      key             bytes
      valueLength     varint    -1 = null value (a tombstone)
      value           bytes
      headersCount    varint
      Header => headerKeyLength varint, headerKey utf-8, headerValueLength varint (-1 = null), value

    varint/varlong: zigzag-encoded, then protobuf base-128 (7 bits per byte, low bits first).

CRC coverage: attributes through the end of the batch. baseOffset, batchLength and
partitionLeaderEpoch lie before it, which is why the broker can assign offsets and the
leader epoch without recomputing the CRC. LogAppendTime is different: it rewrites
maxTimestamp and attributes, both covered, so `set_log_append_time` recomputes the CRC.

The header is parsed with one `struct.unpack_from` (PERF-NOTES §1: 0.15 us); records are
decoded with plain Python varint code only where a caller must see them (compaction,
`__consumer_offsets` replay, timestamp lookups). Produce never decodes records.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Sequence
from enum import IntEnum
from typing import NamedTuple

from protocol.compression import BytesLike, CompressionType, compress, decompress
from protocol.errors import ErrorCode, KafkaError

__all__ = [
    "BATCH_HEADER_SIZE",
    "MAGIC",
    "BatchHeader",
    "ControlRecordType",
    "Record",
    "build_batch",
    "build_control_batch",
    "control_record_type",
    "decode_records",
    "iter_batches",
    "parse_batch_header",
    "read_varint",
    "set_base_offset",
    "set_log_append_time",
    "set_partition_leader_epoch",
    "split_batches",
    "validate_batch",
]


def _load_crc32c() -> Callable[..., int]:
    """The crc32c package's C function, loaded without running the package's __init__.

    That __init__ only re-exports the extension, but it also looks up its own version with
    importlib.metadata, which imports email, zipfile, csv, datetime and ~20 more modules and
    scans sys.path: 30-40 ms of `kmock serve`'s start, for a string nobody reads. The
    extension module is found beside it and loaded as the package would load it (and
    registered under the same name, so a later `import crc32c` reuses it); if the package is
    laid out differently, the ordinary import is used.
    """
    import importlib.util
    import sys
    from importlib.machinery import PathFinder

    name = "crc32c._crc32c"
    module = sys.modules.get(name)
    if module is None:
        package = importlib.util.find_spec("crc32c")
        locations = package.submodule_search_locations if package is not None else None
        spec = PathFinder.find_spec(name, locations) if locations else None
        if spec is None or spec.loader is None:  # pragma: no cover - another crc32c layout
            from crc32c import crc32c

            return crc32c
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        sys.modules[name] = module
    return module.crc32c  # type: ignore[no-any-return]


crc32c = _load_crc32c()

MAGIC = 2
BATCH_HEADER_SIZE = 61
# batchLength of a batch with no records: the header minus baseOffset and batchLength.
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - 12

_HEADER = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qiibI")  # baseOffset .. crc
_TAIL = struct.Struct(">hiqqqhii")  # attributes .. recordsCount (the CRC-covered header part)
_INT64 = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_UINT32 = struct.Struct(">I")
_INT16 = struct.Struct(">h")
_CONTROL_KEY = struct.Struct(">hh")
_END_TXN_MARKER = struct.Struct(">hi")

_PARTITION_LEADER_EPOCH_AT = 12
_CRC_AT = 17
_ATTRIBUTES_AT = 21
_MAX_TIMESTAMP_AT = 35

_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
_TRANSACTIONAL_BIT = 0x10
_CONTROL_BIT = 0x20
_MAX_CODEC = CompressionType.ZSTD.value

_INT32_MAX = 2**31 - 1
# The smallest record: length, attributes, timestampDelta, offsetDelta, keyLength,
# valueLength, headersCount, one byte each. Bounds a declared record count.
_MIN_RECORD_SIZE = 7


class BatchHeader(NamedTuple):
    """The 61-byte v2 batch header, with Kafka's field names in snake_case."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def compression(self) -> int:
        return self.attributes & _CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime."""
        return (self.attributes & _TIMESTAMP_TYPE_BIT) >> 3

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & _TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & _CONTROL_BIT)

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def size(self) -> int:
        """Bytes the whole batch takes, header included."""
        return 12 + self.batch_length

    @property
    def last_sequence(self) -> int:
        """baseSequence + lastOffsetDelta, wrapping at int32 max as Kafka's sequences do."""
        if self.base_sequence < 0:
            return -1
        return (self.base_sequence + self.last_offset_delta) % (_INT32_MAX + 1)


# BatchHeader._make without its Python-level call and length check (the struct gives
# exactly the 13 fields): a header is parsed several times per request.
_new_header = tuple.__new__


class Record(NamedTuple):
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    attributes: int


class ControlRecordType(IntEnum):
    """The `type` in a control record's key (Kafka's ControlRecordType)."""

    ABORT = 0
    COMMIT = 1


def _corrupt(detail: str) -> KafkaError:
    return KafkaError(ErrorCode.CORRUPT_MESSAGE, detail)


def parse_batch_header(buf: BytesLike, pos: int = 0) -> BatchHeader:
    """Parse the 61-byte header at `pos`; nothing is checked but that the bytes are there.

    Raises:
        KafkaError: CORRUPT_MESSAGE when fewer than 61 bytes remain.
    """
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise _corrupt(
            f"batch header at {pos} cut short: {len(buf) - pos} of {BATCH_HEADER_SIZE} bytes"
        )
    return _new_header(BatchHeader, _HEADER.unpack_from(buf, pos))


def validate_batch(buf: BytesLike, pos: int = 0, *, check_crc: bool = True) -> BatchHeader:
    """Check that a whole, intact v2 batch starts at `pos`, and return its header.

    Checks, in the order that makes each one meaningful: the header is there; the magic
    byte (at offset 16 in every message format, so it can be read before trusting the
    rest); batchLength covers at least the header; the whole batch is there; the CRC.

    Raises:
        KafkaError: INVALID_RECORD for magic 0 or 1 (Kafka answers Produce v3+ that way:
            "only allowed to contain record batches with magic version 2"); CORRUPT_MESSAGE
            for everything else, including an unknown magic (Kafka's "Invalid magic found
            in record").
    """
    # parse_batch_header and the size property, inline: once per produced batch.
    if len(buf) - pos < BATCH_HEADER_SIZE:
        raise _corrupt(
            f"batch header at {pos} cut short: {len(buf) - pos} of {BATCH_HEADER_SIZE} bytes"
        )
    header = _new_header(BatchHeader, _HEADER.unpack_from(buf, pos))
    if header.magic != MAGIC:
        if header.magic in (0, 1):
            raise KafkaError(
                ErrorCode.INVALID_RECORD,
                f"batch at {pos} has magic {header.magic}; only v2 batches are accepted",
            )
        raise _corrupt(f"batch at {pos} has unknown magic {header.magic}")
    if header.batch_length < _MIN_BATCH_LENGTH:
        raise _corrupt(
            f"batch at {pos} declares length {header.batch_length}, less than its own header"
        )
    end = pos + 12 + header.batch_length
    if end > len(buf):
        raise _corrupt(f"batch at {pos} cut short: {len(buf) - pos} of {end - pos} bytes")
    if check_crc:
        if type(buf) is memoryview:  # Produce's records: no view of a view to release
            actual = crc32c(buf[pos + _ATTRIBUTES_AT : end])
        else:
            with memoryview(buf) as view:
                actual = crc32c(view[pos + _ATTRIBUTES_AT : end])
        if actual != header.crc:
            raise _corrupt(
                f"batch at {pos} fails its CRC: stored {header.crc:#010x}, computed {actual:#010x}"
            )
    return header


def iter_batches(buf: BytesLike, pos: int = 0) -> Iterator[tuple[int, BatchHeader]]:
    """Yield (position, header) for each whole batch in a run of concatenated batches.

    Stops quietly at a cut-off tail (a Fetch response or a segment may end inside a batch).
    CRCs are not checked.

    Raises:
        KafkaError: CORRUPT_MESSAGE for a header whose magic or length makes the rest of
            the buffer unreadable.
    """
    end = len(buf)
    while end - pos >= BATCH_HEADER_SIZE:
        header = _new_header(BatchHeader, _HEADER.unpack_from(buf, pos))
        if header.magic != MAGIC or header.batch_length < _MIN_BATCH_LENGTH:
            raise _corrupt(f"batch at {pos}: magic {header.magic}, length {header.batch_length}")
        if pos + header.size > end:
            return
        yield pos, header
        pos += header.size


def split_batches(records: BytesLike) -> list[tuple[int, BatchHeader]]:
    """Validate a Produce request's `records` for one partition; return (position, header)s.

    Applies the checks Kafka's LogValidator makes on a batch header. Records are not decoded
    (Kafka also checks each record's offset delta and timestamp; we do not, to keep Produce
    from decoding records: see DESIGN.md).

    Differences from Kafka, on purpose: Kafka (Produce v3+) answers INVALID_RECORD when the
    field holds more than one batch; we accept several, each validated. Kafka silently
    drops a cut-off trailing batch; we answer CORRUPT_MESSAGE rather than acknowledge part
    of what the client sent.

    Raises:
        KafkaError: INVALID_RECORD (no batch, magic 0/1, a control batch from a client, a
            count that disagrees with lastOffsetDelta, a producer id without a sequence),
            UNSUPPORTED_COMPRESSION_TYPE (codec id > 4), CORRUPT_MESSAGE (everything else).
    """
    if len(records) == 0:
        raise KafkaError(
            ErrorCode.INVALID_RECORD, "produce must carry at least one record batch per partition"
        )
    batches = []
    pos = 0
    end = len(records)
    while pos < end:
        header = validate_batch(records, pos)
        # The attribute bits and the size tested directly, not through BatchHeader's
        # properties: this runs for every produced batch.
        attributes = header.attributes
        if attributes & _CODEC_MASK > _MAX_CODEC:
            raise KafkaError(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE,
                f"batch at {pos}: compression codec {attributes & _CODEC_MASK}",
            )
        if attributes & _CONTROL_BIT:
            raise KafkaError(
                ErrorCode.INVALID_RECORD, f"batch at {pos}: clients may not write control batches"
            )
        count = header.records_count
        if count <= 0 or count != header.last_offset_delta + 1:
            raise KafkaError(
                ErrorCode.INVALID_RECORD,
                f"batch at {pos}: {count} records, lastOffsetDelta {header.last_offset_delta}",
            )
        if header.producer_id >= 0 and header.base_sequence < 0:
            raise KafkaError(
                ErrorCode.INVALID_RECORD,
                f"batch at {pos}: producer id {header.producer_id}, "
                f"sequence {header.base_sequence}",
            )
        batches.append((pos, header))
        pos += 12 + header.batch_length
    return batches


def set_base_offset(buf: bytearray | memoryview, pos: int, base_offset: int) -> None:
    """Assign the batch's base offset in place (outside the CRC)."""
    _INT64.pack_into(buf, pos, base_offset)


def set_partition_leader_epoch(
    buf: bytearray | memoryview, pos: int, partition_leader_epoch: int
) -> None:
    """Stamp the leader epoch in place (outside the CRC)."""
    _INT32.pack_into(buf, pos + _PARTITION_LEADER_EPOCH_AT, partition_leader_epoch)


def set_log_append_time(
    buf: bytearray | memoryview, pos: int, timestamp: int, *, body: BytesLike | None = None
) -> None:
    """Mark the batch LogAppendTime with `timestamp` as maxTimestamp, and recompute its CRC.

    This is what Kafka does for a topic with message.timestamp.type=LogAppendTime: the
    records keep their own timestamps, and readers use maxTimestamp for all of them.

    `buf[pos:pos + 61]` is the header. The records section is read from `buf` after it,
    or from `body` when the caller split the header off (storage patches a 61-byte copy
    of the header and writes the records section from the original buffer, uncopied).
    """
    attributes = _INT16.unpack_from(buf, pos + _ATTRIBUTES_AT)[0] | _TIMESTAMP_TYPE_BIT
    _INT16.pack_into(buf, pos + _ATTRIBUTES_AT, attributes)
    _INT64.pack_into(buf, pos + _MAX_TIMESTAMP_AT, timestamp)
    with memoryview(buf) as view:
        if body is None:
            batch_length = _INT32.unpack_from(buf, pos + 8)[0]
            crc = crc32c(view[pos + _ATTRIBUTES_AT : pos + 12 + batch_length])
        else:
            crc = crc32c(body, crc32c(view[pos + _ATTRIBUTES_AT : pos + BATCH_HEADER_SIZE]))
    _UINT32.pack_into(buf, pos + _CRC_AT, crc)


# --- records ---------------------------------------------------------------------------


def read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """Read a zigzag varint/varlong at `pos`; return (value, next position).

    Raises IndexError past the end of `buf` (decode_records turns it into CORRUPT_MESSAGE).
    """
    b = buf[pos]
    pos += 1
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos
    result = b & 0x7F
    shift = 7
    while True:
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise _corrupt("varint longer than 10 bytes")


def _write_varint(out: bytearray, value: int) -> None:
    if 0 <= value < 64:  # one byte: most deltas, counts and lengths
        out.append(value << 1)
        return
    v = (value << 1) ^ (value >> 63)  # zigzag over 64 bits
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)


_ONE_BYTE = [bytes((v << 1,)) for v in range(64)]  # the zigzag varints of 0-63


def _varint(value: int) -> bytearray:
    out = bytearray()
    _write_varint(out, value)
    return out


def decode_records(batch: BytesLike, *, max_bytes: int | None = None) -> list[Record]:
    """Decode every record of the v2 batch at the start of `batch` (decompressing it).

    Offsets and timestamps come out absolute. For a LogAppendTime batch every record's
    timestamp is the batch's maxTimestamp, as Kafka's readers report it. The CRC is not
    checked here: callers validated the batch when it arrived or was recovered.

    Raises:
        KafkaError: CORRUPT_MESSAGE when a length, count or varint runs past its bounds,
            a record's length disagrees with its fields, or bytes are left over;
            UNSUPPORTED_COMPRESSION_TYPE for an unknown codec id.
    """
    header = parse_batch_header(batch)
    if header.magic != MAGIC:
        raise _corrupt(f"cannot decode records of a magic {header.magic} batch")
    if header.size > len(batch) or header.batch_length < _MIN_BATCH_LENGTH:
        raise _corrupt(f"batch of {header.size} bytes in a buffer of {len(batch)}")
    with memoryview(batch) as view:
        section = view[BATCH_HEADER_SIZE : header.size]
        if header.compression:
            kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
            body = decompress(header.compression, section, **kwargs)
        else:
            body = bytes(section)
    count = header.records_count
    if count < 0 or count * _MIN_RECORD_SIZE > len(body):
        raise _corrupt(f"batch declares {count} records in {len(body)} bytes")
    log_append_time = header.max_timestamp if header.timestamp_type else None
    records = []
    pos = 0
    try:
        for _ in range(count):
            length, pos = read_varint(body, pos)
            end = pos + length
            if length < _MIN_RECORD_SIZE - 1 or end > len(body):
                raise _corrupt(f"record of length {length} at {pos} in {len(body)} bytes")
            attributes = body[pos]
            timestamp_delta, pos = read_varint(body, pos + 1)
            offset_delta, pos = read_varint(body, pos)
            key, pos = _read_nullable_bytes(body, pos, end)
            value, pos = _read_nullable_bytes(body, pos, end)
            header_count, pos = read_varint(body, pos)
            if header_count < 0 or header_count * 2 > end - pos:
                raise _corrupt(f"record declares {header_count} headers in {end - pos} bytes")
            headers = []
            for _ in range(header_count):
                header_key, pos = _read_nullable_bytes(body, pos, end)
                if header_key is None:
                    raise _corrupt("record header with a null key")
                header_value, pos = _read_nullable_bytes(body, pos, end)
                headers.append((header_key.decode("utf-8"), header_value))
            if pos != end:
                raise _corrupt(
                    f"record declares {length} bytes but its fields take {length + pos - end}"
                )
            timestamp = (
                header.base_timestamp + timestamp_delta
                if log_append_time is None
                else log_append_time
            )
            records.append(
                Record(
                    header.base_offset + offset_delta,
                    timestamp,
                    key,
                    value,
                    tuple(headers),
                    attributes,
                )
            )
    except IndexError:
        raise _corrupt(f"record {len(records)} runs past the end of the batch") from None
    except UnicodeDecodeError:
        raise _corrupt(f"record {len(records)} has a header key that is not UTF-8") from None
    if pos != len(body):
        raise _corrupt(f"{len(body) - pos} bytes left after {count} records")
    return records


def _read_nullable_bytes(buf: bytes, pos: int, end: int) -> tuple[bytes | None, int]:
    length, pos = read_varint(buf, pos)
    if length < 0:
        if length != -1:
            raise _corrupt(f"negative length {length}")
        return None, pos
    if pos + length > end:
        raise _corrupt(f"field of {length} bytes runs past its record")
    return buf[pos : pos + length], pos + length


def build_batch(
    records: Iterable[tuple[bytes | None, bytes | None, Sequence[tuple[str, bytes | None]], int]],
    *,
    base_offset: int = 0,
    compression: int = CompressionType.NONE,
    timestamp_type: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
    partition_leader_epoch: int = -1,
    offset_deltas: Sequence[int] | None = None,
    last_offset_delta: int | None = None,
    max_timestamp: int | None = None,
) -> bytes:
    """Encode a v2 batch from (key, value, headers, timestamp) items.

    baseTimestamp is the first record's timestamp and maxTimestamp the largest, as Kafka's
    MemoryRecordsBuilder writes them. Compaction rewrites a batch keeping its records'
    original offsets and its lastOffsetDelta (Kafka keeps both so that a producer's last
    sequence survives cleaning): pass `offset_deltas` (one per record, increasing) and
    `last_offset_delta`. With no records, `last_offset_delta` is required and both
    timestamps are `max_timestamp` (Kafka's empty batch header).
    """
    records = list(records)
    if offset_deltas is None:
        offset_deltas = range(len(records))
    elif len(offset_deltas) != len(records):
        raise ValueError(f"{len(offset_deltas)} offset deltas for {len(records)} records")
    if records:
        base_timestamp = records[0][3]
        if last_offset_delta is None:
            last_offset_delta = offset_deltas[-1]
    elif last_offset_delta is None:
        raise ValueError("an empty batch needs last_offset_delta")
    else:
        base_timestamp = -1 if max_timestamp is None else max_timestamp
    largest = base_timestamp
    out = bytearray()
    record = bytearray()
    # Varints of 0-63 (most deltas, counts and lengths) come from _ONE_BYTE, inline: the
    # coordinators build a batch of a record or two per request.
    for (key, value, headers, timestamp), offset_delta in zip(records, offset_deltas, strict=True):
        record.clear()
        record.append(0)  # attributes: unused
        delta = timestamp - base_timestamp
        record += _ONE_BYTE[delta] if 0 <= delta < 64 else _varint(delta)
        record += _ONE_BYTE[offset_delta] if 0 <= offset_delta < 64 else _varint(offset_delta)
        for data in (key, value):
            if data is None:
                record.append(0x01)  # zigzag(-1)
            else:
                n = len(data)
                record += _ONE_BYTE[n] if n < 64 else _varint(n)
                record += data
        n = len(headers)
        record += _ONE_BYTE[n] if n < 64 else _varint(n)
        for header_key, header_value in headers:
            _write_nullable_bytes(record, header_key.encode("utf-8"))
            _write_nullable_bytes(record, header_value)
        n = len(record)
        out += _ONE_BYTE[n] if n < 64 else _varint(n)
        out += record
        if timestamp > largest:
            largest = timestamp
    if max_timestamp is not None:
        largest = max_timestamp
    section = compress(compression, out) if compression else out
    attributes = (
        compression
        | (timestamp_type << 3)
        | (_TRANSACTIONAL_BIT if is_transactional else 0)
        | (_CONTROL_BIT if is_control else 0)
    )
    tail = _TAIL.pack(
        attributes,
        last_offset_delta,
        base_timestamp,
        largest,
        producer_id,
        producer_epoch,
        base_sequence,
        len(records),
    )
    crc = crc32c(section, crc32c(tail))
    prefix = _PREFIX.pack(
        base_offset, _MIN_BATCH_LENGTH + len(section), partition_leader_epoch, MAGIC, crc
    )
    return b"".join((prefix, tail, section))


def _write_nullable_bytes(out: bytearray, data: bytes | None) -> None:
    if data is None:
        out.append(0x01)  # zigzag(-1)
        return
    _write_varint(out, len(data))
    out += data


def build_control_batch(
    control_type: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker: one control record, key (version 0, type), value
    EndTxnMarker (version 0, coordinatorEpoch)."""
    key = _CONTROL_KEY.pack(0, control_type)
    value = _END_TXN_MARKER.pack(0, coordinator_epoch)
    return build_batch(
        [(key, value, (), timestamp)],
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        is_transactional=True,
        is_control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def control_record_type(key: bytes | None) -> int:
    """The type of a control record from its key (a ControlRecordType value for markers)."""
    if key is None or len(key) < _CONTROL_KEY.size:
        raise _corrupt("control record key shorter than 4 bytes")
    return int(_CONTROL_KEY.unpack_from(key)[1])
