"""Message formats v0/v1 against kafka-python's legacy record builder and reader (a real
Kafka client's implementation): bytes equal where nothing is compressed, each side reading
the other's compressed sets, and every corruption refused with Kafka's error code."""

from __future__ import annotations

import struct
import zlib

import lz4.frame
import pytest
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from protocol.compression import CompressionType, compress
from protocol.errors import ErrorCode, KafkaError
from protocol.legacy_records import (
    LegacyRecord,
    build_message_set,
    message_set_magic,
    read_message_set,
    xxh32,
)

ITEMS = [(None, b"v0"), (b"k1", b"v1"), (b"k2", None)]
# kafka-python writes magic-0 lz4 only with the optional xxhash package: we check that
# codec against the LZ4 frame rules instead (test_magic_0_lz4_...).
CODECS = [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4]


def kafka_python_set(magic: int, codec: int) -> bytes:
    builder = LegacyRecordBatchBuilder(magic, codec, 1 << 20)
    for i, (key, value) in enumerate(ITEMS):
        builder.append(i, 1000 + i if magic else None, key, value)
    return bytes(builder.build())


def kafka_python_reads(data: bytes) -> list[tuple]:
    records = MemoryRecords(data)
    out = []
    while (batch := records.next_batch()) is not None:
        out += [(r.offset, r.timestamp, r.key, r.value) for r in batch]
    return out


def ours(magic: int, codec: int = 0, base: int = 10) -> bytes:
    records = [
        LegacyRecord(base + i, 1000 + i if magic else -1, key, value)
        for i, (key, value) in enumerate(ITEMS)
    ]
    return build_message_set(records, magic=magic, compression=codec)


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_bytes_equal_kafka_pythons(magic):
    theirs = kafka_python_set(magic, 0)
    assert ours(magic, base=0) == theirs
    assert message_set_magic(theirs) == magic
    decoded = read_message_set(theirs)
    assert (decoded.magic, decoded.compression, decoded.timestamp_type) == (magic, 0, 0)
    ts = [1000, 1001, 1002] if magic else [-1, -1, -1]
    assert decoded.records == [
        LegacyRecord(i, ts[i], key, value) for i, (key, value) in enumerate(ITEMS)
    ]


@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", CODECS)
def test_compressed_sets_read_both_ways(magic, codec):
    if not (magic == 0 and codec == CompressionType.LZ4):
        decoded = read_message_set(kafka_python_set(magic, codec))
        assert (decoded.magic, decoded.compression) == (magic, codec)
        assert [(r.key, r.value) for r in decoded.records] == ITEMS
        # kafka-python's wrapper says offset 0: inner v1 offsets resolve to -2..0, as Kafka
        # resolves them; the broker assigns offsets anyway.
        assert [r.offset for r in decoded.records] == ([-2, -1, 0] if magic else [0, 1, 2])
    ts = [1000, 1001, 1002] if magic else [None] * 3
    expected = [(10 + i, ts[i], key, value) for i, (key, value) in enumerate(ITEMS)]
    if not (magic == 0 and codec == CompressionType.LZ4):
        assert kafka_python_reads(ours(magic, codec)) == expected
    again = read_message_set(ours(magic, codec))
    assert [(r.offset, r.key, r.value) for r in again.records] == [
        (o, k, v) for o, _, k, v in expected
    ]


def test_v1_wrapper_has_the_last_offset_and_the_largest_timestamp():
    data = ours(1, CompressionType.GZIP)
    offset, _, _, magic, attributes, timestamp = struct.unpack_from(">qiIbbq", data)
    assert (offset, magic, attributes, timestamp) == (12, 1, CompressionType.GZIP, 1002)


def test_log_append_time_sets_the_type_bit_and_the_time():
    records = [LegacyRecord(0, 5, None, b"a"), LegacyRecord(1, 6, None, b"b")]
    data = build_message_set(records, magic=1, compression=1, timestamp_type=1, log_append_time=99)
    assert struct.unpack_from(">qiIbbq", data)[4:] == (0x08 | 1, 99)
    decoded = read_message_set(data)
    assert decoded.timestamp_type == 1
    assert [r.timestamp for r in decoded.records] == [99, 99]


def test_xxh32_known_values_and_lz4_frame_header_checksum():
    assert [xxh32(b""), xxh32(b"a"), xxh32(b"abc")] == [0x02CC5D05, 0x550D7456, 0x32D153FF]
    for kw in ({}, {"store_size": True}):
        frame = lz4.frame.compress(b"abc" * 100, **kw)
        end = 6 + (8 if frame[4] & 0x08 else 0)
        assert frame[end] == (xxh32(frame[4:end]) >> 8) & 0xFF


def test_magic_0_lz4_carries_kafka_0_8s_header_checksum():
    data = ours(0, CompressionType.LZ4)
    # The wrapper's value: int32 key length -1, int32 value length, the frame.
    value_at = 12 + 4 + 2 + 4 + 4
    frame = data[value_at:]
    end = 6 + (8 if frame[4] & 0x08 else 0)
    broken = (xxh32(frame[:end]) >> 8) & 0xFF  # over the frame magic too
    assert frame[end] == broken
    assert broken != (xxh32(frame[4:end]) >> 8) & 0xFF
    with pytest.raises(RuntimeError):  # so a correct LZ4 reader refuses it
        lz4.frame.decompress(frame)
    assert [r.value for r in read_message_set(data).records] == [v for _, v in ITEMS]


def corrupt(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1 :]


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (corrupt(ours(1), 30), ErrorCode.CORRUPT_MESSAGE),  # a value byte: CRC32 mismatch
        (ours(1)[:-3], ErrorCode.CORRUPT_MESSAGE),  # cut off
        (b"", ErrorCode.CORRUPT_MESSAGE),
        (ours(1)[:10], ErrorCode.CORRUPT_MESSAGE),
        (ours(0) + ours(1), ErrorCode.CORRUPT_MESSAGE),  # mixed magics
    ],
)
def test_corrupt_sets_are_refused(data, code):
    with pytest.raises(KafkaError) as e:
        read_message_set(data)
    assert e.value.code == code


def message(magic: int, attributes: int, value: bytes) -> bytes:
    body = struct.pack(">bb", magic, attributes) + struct.pack(">i", -1)
    body += struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", 0, len(body) + 4, zlib.crc32(body)) + body


def test_zstd_and_unknown_codecs_are_unsupported():
    for codec in (4, 5):
        with pytest.raises(KafkaError) as e:
            read_message_set(message(0, codec, b"x"))
        assert e.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    with pytest.raises(KafkaError) as e:
        build_message_set([LegacyRecord(0, -1, None, b"x")], magic=1, compression=4)
    assert e.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


def test_double_compression_and_magic_2_are_refused():
    inner = ours(0, CompressionType.GZIP)
    nested = message(0, CompressionType.GZIP, compress(CompressionType.GZIP, inner))
    with pytest.raises(KafkaError) as e:
        read_message_set(nested)
    assert e.value.code == ErrorCode.CORRUPT_MESSAGE
    with pytest.raises(KafkaError) as e:
        read_message_set(message(2, 0, b"x"))
    assert e.value.code == ErrorCode.INVALID_RECORD
