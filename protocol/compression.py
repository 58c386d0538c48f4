"""Record-batch compression codecs, as Kafka clients write them on the wire.

The codec id lives in bits 0-2 of a v2 batch's attributes; everything after the batch
header's record count is compressed as one stream. All four codecs go through `cramjam`
(one Rust-backed package), with Kafka's framing quirks handled here:

* 1 gzip: an RFC 1952 gzip member (Java's GZIPOutputStream).
* 2 snappy: the Java client writes *xerial* framing (SnappyOutputStream): a 16-byte header
  (0x82 "SNAPPY" 0x00, int32 version = 1, int32 compatible version = 1) followed by blocks of
  int32 length + raw snappy, each block holding at most 32 KiB of input. librdkafka, Sarama
  and others write raw (unframed) snappy. `decompress` accepts both; `compress` writes
  xerial framing like the Java client. The header's version fields are not checked, as in
  kafka-python: some producers write them little-endian.
* 3 lz4: the LZ4 *frame* format (not raw blocks). Java's KafkaLZ4BlockInputStream rejects
  dependent (linked) blocks, so `compress` writes independent blocks and no content
  checksum, which every Kafka client reads.
* 4 zstd: a zstd frame (several concatenated frames decompress to their concatenation).

Decompression is bounded: the output may not exceed `max_bytes` (default
MAX_DECOMPRESSED_BYTES), so that a small "zip bomb" batch cannot make the broker allocate
gigabytes. Kafka has no such cap (it decompresses record by record as it iterates); we
decompress a batch in one piece, so we need one. Exceeding it, or any corrupt input, is
KafkaError(CORRUPT_MESSAGE); an unknown codec id is KafkaError(UNSUPPORTED_COMPRESSION_TYPE).

cramjam (an extension module of ~5 MB) is imported by the first batch that is compressed or
decompressed, not with this module: `kmock serve` imports this module before it binds, and
a broker whose clients send no compressed batch never loads it (start-up time).
"""

from __future__ import annotations

import mmap
import struct
from enum import IntEnum
from types import ModuleType

from protocol.errors import ErrorCode, KafkaError

__all__ = [
    "MAX_DECOMPRESSED_BYTES",
    "BytesLike",
    "CompressionType",
    "compress",
    "decompress",
]

# What the codecs read without a copy (anything with the buffer protocol).
BytesLike = bytes | bytearray | memoryview | mmap.mmap

# Largest decompressed batch we accept (no Kafka equivalent; see the module docstring).
MAX_DECOMPRESSED_BYTES = 256 * 1024 * 1024

# Levels Kafka's Java producer uses by default (compression.gzip.level = 6 via Deflater's
# default, compression.zstd.level = 3). For lz4 we use the fast compressor (Kafka's
# default is the slower HC level 9; the frames are interchangeable).
_GZIP_LEVEL = 6
_ZSTD_LEVEL = 3

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = _XERIAL_MAGIC + struct.pack(">ii", 1, 1)
_XERIAL_BLOCK_BYTES = 32 * 1024  # SnappyOutputStream's default block size
_INT32 = struct.Struct(">i")


class CompressionType(IntEnum):
    """Codec ids of record-batch attributes bits 0-2 (Kafka's CompressionType)."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4


def compress(codec: int, data: BytesLike) -> bytes:
    """Compress `data` with the codec a v2 batch declares in its attributes."""
    if codec == CompressionType.NONE:
        return bytes(data)
    import cramjam

    if codec == CompressionType.GZIP:
        return bytes(cramjam.gzip.compress(data, level=_GZIP_LEVEL))
    if codec == CompressionType.SNAPPY:
        return _xerial_compress(memoryview(data))
    if codec == CompressionType.LZ4:
        compressor = cramjam.lz4.Compressor(block_linked=False, content_checksum=False)
        compressor.compress(data if isinstance(data, bytes) else bytes(data))  # takes only bytes
        return bytes(compressor.finish())
    if codec == CompressionType.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=_ZSTD_LEVEL))
    raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"compression codec {codec}")


def decompress(codec: int, data: BytesLike, *, max_bytes: int = MAX_DECOMPRESSED_BYTES) -> bytes:
    """Decompress a batch's records section.

    Raises:
        KafkaError: UNSUPPORTED_COMPRESSION_TYPE for an unknown codec id; CORRUPT_MESSAGE
            for corrupt input or output larger than `max_bytes`.
    """
    if codec == CompressionType.NONE:
        return bytes(data)
    import cramjam

    try:
        if codec == CompressionType.SNAPPY:
            return _snappy_decompress(memoryview(data), max_bytes)
        if codec == CompressionType.GZIP:
            return _bounded(cramjam.gzip, data, max_bytes)
        if codec == CompressionType.LZ4:
            return _bounded(cramjam.lz4, data, max_bytes)
        if codec == CompressionType.ZSTD:
            return _bounded(cramjam.zstd, data, max_bytes)
    except cramjam.DecompressionError as e:
        # cramjam says "failed to write whole buffer" when the output outgrew max_bytes.
        name = CompressionType(codec).name.lower()
        message = str(e) if str(e).startswith(name) else f"{name}: {e}"
        raise KafkaError(
            ErrorCode.CORRUPT_MESSAGE, f"{message} (output cap {max_bytes} bytes)"
        ) from None
    raise KafkaError(ErrorCode.UNSUPPORTED_COMPRESSION_TYPE, f"compression codec {codec}")


def _bounded(module: ModuleType, data: BytesLike, max_bytes: int) -> bytes:
    import cramjam

    # An anonymous mapping costs nothing until written, so a cap of 256 MiB does not
    # allocate 256 MiB: only the pages the decompressor fills are faulted in. The one
    # spare byte tells "exactly max_bytes" from "more than max_bytes".
    with mmap.mmap(-1, max_bytes + 1) as out:
        with memoryview(out) as view:
            n = module.decompress_into(data, view)
        if n > max_bytes:
            raise cramjam.DecompressionError("failed to write whole buffer")
        return out[:n]


def _xerial_compress(data: memoryview) -> bytes:
    import cramjam

    parts = [_XERIAL_HEADER]
    # Empty input still gets one (empty) block: readers that look for the xerial header
    # only in inputs longer than it (kafka-python) would take a bare header for raw snappy.
    for start in range(0, max(len(data), 1), _XERIAL_BLOCK_BYTES):
        block = bytes(cramjam.snappy.compress_raw(data[start : start + _XERIAL_BLOCK_BYTES]))
        parts.append(_INT32.pack(len(block)))
        parts.append(block)
    return b"".join(parts)


def _snappy_decompress(data: memoryview, max_bytes: int) -> bytes:
    import cramjam

    if len(data) >= len(_XERIAL_HEADER) and data[:8] == _XERIAL_MAGIC:
        blocks = []
        total = 0
        pos = len(_XERIAL_HEADER)
        while pos < len(data):
            if pos + 4 > len(data):
                raise cramjam.DecompressionError("xerial: truncated block length")
            (length,) = _INT32.unpack_from(data, pos)
            pos += 4
            if length < 0 or pos + length > len(data):
                raise cramjam.DecompressionError(f"xerial: block length {length} past the end")
            block = data[pos : pos + length]
            pos += length
            # Raw snappy starts with its uncompressed length: check it before allocating.
            total += cramjam.snappy.decompress_raw_len(block)
            if total > max_bytes:
                raise cramjam.DecompressionError("failed to write whole buffer")
            blocks.append(bytes(cramjam.snappy.decompress_raw(block)))
        return b"".join(blocks)
    if cramjam.snappy.decompress_raw_len(data) > max_bytes:
        raise cramjam.DecompressionError("failed to write whole buffer")
    return bytes(cramjam.snappy.decompress_raw(data))
