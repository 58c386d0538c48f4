"""Message formats v0 and v1 (magic 0 and 1): the MessageSets of Produce v0-2 and Fetch v0-3.

A MessageSet is a run of messages, each

    offset int64 | message_size int32 | crc uint32 | magic int8 | attributes int8
    | timestamp int64 (v1 only) | key bytes (int32 length, -1 null) | value bytes (same)

with a CRC32 (not CRC32C) over magic..value, attributes bits 0-2 the codec and, in v1, bit 3
the timestamp type. A compressed message (a "wrapper") has a null key and, as its value,
the compressed MessageSet of the inner messages; in v1 the inner offsets are relative
(0, 1, ...) and the wrapper carries the last one's absolute offset, in v0 they are absolute
(Kafka's AbstractLegacyRecordBatch, MemoryRecordsBuilder). gzip and snappy (xerial framing)
are as in v2 batches; lz4 is a frame, but in v0 with Kafka 0.8's wrong header checksum,
computed over the frame magic too (KafkaLZ4BlockOutputStream's useBrokenFlagDescriptorChecksum;
readers ignore it for magic 0). zstd does not exist before v2.

kmock stores only RecordBatch v2: Produce v0-2 sets are converted up on append and v2
batches converted down for Fetch v0-3, as a Kafka 3.x broker does (broker.handlers.produce
and fetch).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable
from typing import NamedTuple

from protocol.compression import BytesLike, CompressionType, compress, decompress
from protocol.errors import ErrorCode, KafkaError

__all__ = [
    "LegacyRecord",
    "MessageSet",
    "build_message_set",
    "message_set_magic",
    "read_message_set",
]

_PREFIX = struct.Struct(">qiIbb")  # offset, message_size, crc, magic, attributes
_TIMESTAMP = struct.Struct(">q")
_INT32 = struct.Struct(">i")
_LOG_OVERHEAD = 12  # offset + message_size
_MAGIC_AT = 16  # offset + message_size + crc
_CODEC_MASK = 0x07
_TIMESTAMP_TYPE_BIT = 0x08
NO_TIMESTAMP = -1
_MAX_NESTING = 1  # a wrapper's inner messages are never compressed again


class LegacyRecord(NamedTuple):
    offset: int  # absolute, as the set gives it (inner offsets resolved)
    timestamp: int  # -1 in v0
    key: bytes | None
    value: bytes | None


class MessageSet(NamedTuple):
    magic: int
    compression: int  # of the wrappers; NONE if none is compressed
    timestamp_type: int  # 0 CreateTime, 1 LogAppendTime (v1 attributes bit 3)
    records: list[LegacyRecord]


def _corrupt(detail: str) -> KafkaError:
    return KafkaError(ErrorCode.CORRUPT_MESSAGE, detail)


def message_set_magic(buf: BytesLike) -> int | None:
    """The magic byte of the first message or batch in `buf` (None if too short)."""
    return buf[_MAGIC_AT] if len(buf) > _MAGIC_AT else None


def read_message_set(buf: BytesLike, *, max_bytes: int | None = None) -> MessageSet:
    """Validate and decode a Produce v0-2 MessageSet: every CRC, length and codec checked,
    compressed wrappers opened, offsets resolved.

    All messages must share one magic (0 or 1), and a wrapper one codec, as one client
    writes them. Kafka's LogValidator checks each message the same way (ensureValid).

    Raises:
        KafkaError: CORRUPT_MESSAGE for a bad CRC, length or a cut-off message, nested
            compression or an empty set; UNSUPPORTED_COMPRESSION_TYPE for zstd (v2 only)
            or an unknown codec; INVALID_RECORD for a magic 2 batch among v0/v1 messages.
    """
    view = memoryview(buf)
    records: list[LegacyRecord] = []
    magics: set[int] = set()
    codecs: set[int] = set()
    timestamp_type = 0
    for offset, magic, attributes, timestamp, key, value in _messages(view):
        magics.add(magic)
        codec = attributes & _CODEC_MASK
        if magic == 1 and attributes & _TIMESTAMP_TYPE_BIT:
            timestamp_type = 1
        if codec == CompressionType.NONE:
            records.append(LegacyRecord(offset, timestamp, key, value))
            continue
        codecs.add(codec)
        records.extend(_open_wrapper(offset, magic, codec, value, max_bytes))
    if not records and not magics:
        raise _corrupt("empty message set")
    if len(magics) != 1:
        raise _corrupt(f"messages of magics {sorted(magics)} in one set")
    if len(codecs) > 1:
        raise _corrupt(f"wrappers of codecs {sorted(codecs)} in one set")
    (magic,) = magics
    return MessageSet(magic, codecs.pop() if codecs else 0, timestamp_type, records)


def _messages(
    view: memoryview,
) -> Iterable[tuple[int, int, int, int, bytes | None, bytes | None]]:
    pos, end = 0, len(view)
    while pos < end:
        if end - pos < _PREFIX.size:
            raise _corrupt(f"message at {pos}: {end - pos} bytes, shorter than a header")
        offset, size, crc, magic, attributes = _PREFIX.unpack_from(view, pos)
        if magic not in (0, 1):
            raise KafkaError(
                ErrorCode.INVALID_RECORD, f"message at {pos}: magic {magic} in a v0/v1 set"
            )
        header = _PREFIX.size + (_TIMESTAMP.size if magic == 1 else 0)
        stop = pos + _LOG_OVERHEAD + size
        if size < header - _LOG_OVERHEAD + 8 or stop > end:
            raise _corrupt(f"message at {pos}: size {size} in {end - pos} bytes")
        if zlib.crc32(view[pos + _MAGIC_AT : stop]) != crc:
            raise _corrupt(f"message at offset {offset}: CRC32 mismatch")
        timestamp = _TIMESTAMP.unpack_from(view, pos + _PREFIX.size)[0] if magic else NO_TIMESTAMP
        key, at = _read_bytes(view, pos + header, stop)
        value, at = _read_bytes(view, at, stop)
        if at != stop:
            raise _corrupt(f"message at offset {offset}: {stop - at} bytes after the value")
        if attributes & _CODEC_MASK > CompressionType.LZ4:
            codec = attributes & _CODEC_MASK
            raise KafkaError(
                ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"codec {codec} in a magic {magic} message"
            )
        yield offset, magic, attributes, timestamp, key, value
        pos = stop


def _read_bytes(view: memoryview, pos: int, stop: int) -> tuple[bytes | None, int]:
    if pos + 4 > stop:
        raise _corrupt("length past the message's end")
    (n,) = _INT32.unpack_from(view, pos)
    pos += 4
    if n < 0:
        return None, pos
    if pos + n > stop:
        raise _corrupt(f"{n} bytes past the message's end")
    return bytes(view[pos : pos + n]), pos + n


def _open_wrapper(
    offset: int, magic: int, codec: int, value: bytes | None, max_bytes: int | None
) -> list[LegacyRecord]:
    if value is None:
        raise _corrupt(f"compressed message at offset {offset} has a null value")
    if codec == CompressionType.LZ4 and magic == 0:
        value = _lz4_fix_header_checksum(value)
    kwargs = {} if max_bytes is None else {"max_bytes": max_bytes}
    inner = []
    for inner_offset, inner_magic, attributes, timestamp, key, v in _messages(
        memoryview(decompress(codec, value, **kwargs))
    ):
        if attributes & _CODEC_MASK:
            raise _corrupt(f"compressed message at offset {offset} is compressed twice")
        if inner_magic != magic:
            raise _corrupt(f"magic {inner_magic} message inside a magic {magic} wrapper")
        inner.append(LegacyRecord(inner_offset, timestamp, key, v))
    if not inner:
        raise _corrupt(f"compressed message at offset {offset} holds no message")
    if magic == 1:
        # Relative inner offsets: the wrapper holds the last one's absolute offset.
        shift = offset - inner[-1].offset
        inner = [r._replace(offset=r.offset + shift) for r in inner]
    return inner


def build_message_set(
    records: Iterable[LegacyRecord],
    *,
    magic: int,
    compression: int = CompressionType.NONE,
    timestamp_type: int = 0,
    log_append_time: int = NO_TIMESTAMP,
) -> bytes:
    """Encode `records` (absolute offsets) as a magic 0 or 1 MessageSet, as Kafka's
    MemoryRecordsBuilder writes one: compressed, one wrapper holding them all, with the last
    offset and (v1) the largest timestamp, or the log append time for LogAppendTime.
    v0 drops timestamps; LogAppendTime records carry `log_append_time`.
    """
    if magic not in (0, 1):
        raise ValueError(f"magic {magic}")
    if compression == CompressionType.ZSTD:
        raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"zstd in a magic {magic} set")
    records = list(records)
    type_bit = _TIMESTAMP_TYPE_BIT if magic == 1 and timestamp_type == 1 else 0

    def stamp(r: LegacyRecord) -> int:
        return log_append_time if type_bit else r.timestamp

    if compression == CompressionType.NONE:
        return b"".join(
            _message(r.offset, magic, type_bit, stamp(r), r.key, r.value) for r in records
        )
    if not records:
        return b""
    base = records[0].offset
    inner = b"".join(
        _message(
            r.offset - base if magic == 1 else r.offset, magic, type_bit, stamp(r), r.key, r.value
        )
        for r in records
    )
    payload = compress(compression, inner)
    if compression == CompressionType.LZ4 and magic == 0:
        payload = _lz4_break_header_checksum(payload)
    wrapper_time = log_append_time if type_bit else max(r.timestamp for r in records)
    return _message(records[-1].offset, magic, compression | type_bit, wrapper_time, None, payload)


def _message(
    offset: int, magic: int, attributes: int, timestamp: int, key: bytes | None, value: bytes | None
) -> bytes:
    body = bytearray(struct.pack(">bb", magic, attributes))
    if magic == 1:
        body += _TIMESTAMP.pack(timestamp)
    for field in (key, value):
        if field is None:
            body += _INT32.pack(-1)
        else:
            body += _INT32.pack(len(field))
            body += field
    crc = zlib.crc32(body)
    return struct.pack(">qiI", offset, len(body) + 4, crc) + bytes(body)


# --- LZ4 frame header checksum (magic 0) ---

_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_CONTENT_SIZE_BIT = 0x08


def _lz4_descriptor_end(frame: bytes) -> int:
    """Index of the header checksum byte (after FLG, BD and the optional content size)."""
    if len(frame) < 7 or frame[:4] != _LZ4_MAGIC:
        raise _corrupt("lz4: not a frame")
    return 6 + (8 if frame[4] & _LZ4_CONTENT_SIZE_BIT else 0)


def _lz4_fix_header_checksum(frame: bytes) -> bytes:
    hc = _lz4_descriptor_end(frame)
    if hc >= len(frame):
        raise _corrupt("lz4: cut-off frame header")
    return frame[:hc] + bytes([(xxh32(frame[4:hc]) >> 8) & 0xFF]) + frame[hc + 1 :]


def _lz4_break_header_checksum(frame: bytes) -> bytes:
    hc = _lz4_descriptor_end(frame)
    return frame[:hc] + bytes([(xxh32(frame[:hc]) >> 8) & 0xFF]) + frame[hc + 1 :]


_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes (a frame descriptor): the short-input path only."""
    if len(data) >= 16:
        raise ValueError("xxh32 here hashes frame descriptors, under 16 bytes")
    h = (seed + _P5 + len(data)) & _M32
    pos = 0
    while pos + 4 <= len(data):
        (word,) = struct.unpack_from("<I", data, pos)
        h = (_rotl((h + word * _P3) & _M32, 17) * _P4) & _M32
        pos += 4
    for byte in data[pos:]:
        h = (_rotl((h + byte * _P5) & _M32, 11) * _P1) & _M32
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h
