import os
import struct

import cramjam
import lz4.frame
import pytest
from kafka import codec as kafka_codec

from protocol.compression import MAX_DECOMPRESSED_BYTES, CompressionType, compress, decompress
from protocol.errors import ErrorCode, KafkaError

CODECS = [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD]
PAYLOADS = [
    b"",
    b"x",
    b"kmock " * 2000,
    os.urandom(100_000),
]  # 100 KB spans several xerial/lz4 blocks

# kafka-python's own encoders and decoders, as the Java-compatible reference.
KAFKA_PYTHON = {
    CompressionType.GZIP: (kafka_codec.gzip_encode, kafka_codec.gzip_decode),
    CompressionType.SNAPPY: (kafka_codec.snappy_encode, kafka_codec.snappy_decode),
    CompressionType.LZ4: (kafka_codec.lz4_encode, kafka_codec.lz4_decode),
    CompressionType.ZSTD: (kafka_codec.zstd_encode, kafka_codec.zstd_decode),
}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("payload", PAYLOADS, ids=["empty", "one", "text", "random"])
def test_round_trip(codec, payload):
    assert decompress(codec, compress(codec, payload)) == payload


@pytest.mark.parametrize("codec", CODECS)
def test_accepts_bytearray_and_memoryview(codec):
    payload = b"abc" * 1000
    assert decompress(codec, memoryview(compress(codec, bytearray(payload)))) == payload
    assert decompress(codec, bytearray(compress(codec, memoryview(payload)))) == payload


@pytest.mark.parametrize("codec", CODECS)
def test_reads_what_kafka_python_writes(codec):
    encode, _ = KAFKA_PYTHON[codec]
    payload = b"record bytes " * 5000
    assert decompress(codec, encode(payload)) == payload


@pytest.mark.parametrize("codec", CODECS)
def test_kafka_python_reads_what_we_write(codec):
    _, decode = KAFKA_PYTHON[codec]
    payload = b"record bytes " * 5000
    assert decode(compress(codec, payload)) == payload


def test_snappy_writes_xerial_framing_like_the_java_client():
    payload = bytes(range(256)) * 300  # 76,800 bytes: three 32 KiB blocks
    data = compress(CompressionType.SNAPPY, payload)
    assert data[:16] == b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
    pos, blocks = 16, []
    while pos < len(data):
        (length,) = struct.unpack_from(">i", data, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(data[pos + 4 : pos + 4 + length])))
        pos += 4 + length
    assert [len(b) for b in blocks] == [32768, 32768, 11264]
    assert b"".join(blocks) == payload


def test_snappy_reads_raw_snappy_as_librdkafka_writes_it():
    payload = b"librdkafka " * 1000
    assert (
        decompress(CompressionType.SNAPPY, bytes(cramjam.snappy.compress_raw(payload))) == payload
    )


def test_snappy_xerial_with_little_endian_version_fields_is_read():
    payload = b"some producers get the header byte order wrong " * 10
    block = bytes(cramjam.snappy.compress_raw(payload))
    data = b"\x82SNAPPY\x00" + struct.pack("<ii", 1, 1) + struct.pack(">i", len(block)) + block
    assert decompress(CompressionType.SNAPPY, data) == payload


def test_lz4_frames_use_independent_blocks_which_java_requires():
    data = compress(CompressionType.LZ4, b"x" * 200_000)
    flg = data[4]
    assert data[:4] == b"\x04\x22\x4d\x18"
    assert flg >> 6 == 1  # frame version 01
    assert flg & 0x20  # block independence
    assert not flg & 0x04  # no content checksum
    assert lz4.frame.decompress(data) == b"x" * 200_000


@pytest.mark.parametrize("codec", [5, 6, 7])
def test_unknown_codec_is_unsupported_compression_type(codec):
    for call in (compress, decompress):
        with pytest.raises(KafkaError) as raised:
            call(codec, b"data")
        assert raised.value.code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


@pytest.mark.parametrize("codec", CODECS)
def test_corrupt_input_is_corrupt_message(codec):
    good = compress(codec, b"payload " * 1000)
    for bad in (good[: len(good) // 2], b"\x00" * 40, good[:8] + b"\xff" * 32 + good[40:]):
        with pytest.raises(KafkaError) as raised:
            decompress(codec, bad)
        assert raised.value.code == ErrorCode.CORRUPT_MESSAGE


@pytest.mark.parametrize("codec", CODECS)
def test_output_larger_than_the_cap_is_refused(codec):
    bomb = compress(codec, bytes(4 * 1024 * 1024))
    with pytest.raises(KafkaError) as raised:
        decompress(codec, bomb, max_bytes=1024 * 1024)
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE
    assert "cap" in raised.value.detail


@pytest.mark.parametrize("codec", CODECS)
def test_output_exactly_at_the_cap_is_accepted(codec):
    payload = bytes(64 * 1024)
    assert decompress(codec, compress(codec, payload), max_bytes=len(payload)) == payload


def test_default_cap_is_256_mib():
    assert MAX_DECOMPRESSED_BYTES == 256 * 1024 * 1024


def test_codec_none_passes_data_through():
    assert compress(CompressionType.NONE, memoryview(b"abc")) == b"abc"
    assert decompress(CompressionType.NONE, bytearray(b"abc")) == b"abc"
