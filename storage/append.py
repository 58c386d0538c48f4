"""What an append does to a batch before it reaches the segment file: the checks storage
makes, and the header fields the log assigns.

A batch is written as received except for the fields the log owns (Kafka's
LogValidator.assignOffsetsNonCompressed and UnifiedLog.append): baseOffset always;
partitionLeaderEpoch when the broker stamps it; for a LogAppendTime topic, the timestamp
type bit, maxTimestamp and so the CRC. baseOffset (bytes 0-7) and partitionLeaderEpoch
(12-15) lie before the CRC and outside what it covers (protocol/records.py's grammar), so
the usual append replaces only the first 8 or 16 bytes: the file gets a packed prefix and
then the received buffer from there on, uncopied (one writev). Only LogAppendTime patches
a 61-byte copy of the header, whose CRC covers the records.

`stamp` also returns the header as stored, built from the received one rather than parsed
again from the patched bytes (tests/storage/test_append.py checks both ways agree, byte
for byte and field for field).
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from protocol.errors import ErrorCode, KafkaError
from protocol.records import (
    BATCH_HEADER_SIZE,
    MAGIC,
    BatchHeader,
    parse_batch_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
)

__all__ = ["AppendInfo", "check_batch", "duplicate_info", "stamp"]

# The header's first fields (protocol/records.py): baseOffset; with batchLength and
# partitionLeaderEpoch, the 16 bytes before magic.
_BASE_OFFSET = struct.Struct(">q")
_BASE_OFFSET_TO_EPOCH = struct.Struct(">qii")
_EPOCH_END = _BASE_OFFSET_TO_EPOCH.size

# BatchHeader(...) without NamedTuple's Python-level __new__.
_new_header = tuple.__new__


class AppendInfo(NamedTuple):
    """Where one batch went: what a Produce partition response reports."""

    base_offset: int
    last_offset: int
    log_append_time: int  # -1 unless the log uses LogAppendTime (and for duplicates)
    log_start_offset: int
    duplicate: bool = False  # a producer retry acknowledged with its original offsets


# AppendInfo(...) without the Python-level __new__ that NamedTuple generates.
_new_info = tuple.__new__


def duplicate_info(original: tuple[int, int, int, int, int], log_start_offset: int) -> AppendInfo:
    """The AppendInfo of a producer retry of a batch already in the log: its original
    offsets (`original` is storage.producer_state's BatchMetadata)."""
    return _new_info(AppendInfo, (original[2], original[3], -1, log_start_offset, True))


def check_batch(view: memoryview, header: BatchHeader, max_message_bytes: int) -> int:
    """What the file format and max.message.bytes require of a batch that passed
    `protocol.records.split_batches`; returns its size.

    Raises:
        KafkaError: CORRUPT_MESSAGE (not magic 2, or a length other than the buffer's),
            MESSAGE_TOO_LARGE.
    """
    size = 12 + header.batch_length  # header.size, without the property's call
    if header.magic != MAGIC or size != len(view):
        raise KafkaError(
            ErrorCode.CORRUPT_MESSAGE,
            f"batch of {len(view)} bytes declares {size} bytes, magic {header.magic}",
        )
    if size > max_message_bytes:
        raise KafkaError(
            ErrorCode.MESSAGE_TOO_LARGE,
            f"batch of {size} bytes exceeds max.message.bytes {max_message_bytes}",
        )
    return size


def stamp(
    view: memoryview,
    header: BatchHeader,
    base_offset: int,
    partition_leader_epoch: int | None,
    log_append_ms: int,
) -> tuple[bytes | bytearray, memoryview, BatchHeader]:
    """The batch as the log stores it at `base_offset`: (head, rest, header as stored),
    where head + rest are its bytes. `header` is the received batch's; a leader epoch of
    None keeps the batch's own; `log_append_ms` < 0 keeps CreateTime.
    """
    if log_append_ms >= 0:
        head = bytearray(view[:BATCH_HEADER_SIZE])
        rest = view[BATCH_HEADER_SIZE:]
        set_base_offset(head, 0, base_offset)
        if partition_leader_epoch is not None:
            set_partition_leader_epoch(head, 0, partition_leader_epoch)
        set_log_append_time(head, 0, log_append_ms, body=rest)
        return head, rest, parse_batch_header(head)
    if partition_leader_epoch is None:
        fields = (base_offset, *header[1:])
        return _BASE_OFFSET.pack(base_offset), view[8:], _new_header(BatchHeader, fields)
    batch_length = header[1]
    fields = (base_offset, batch_length, partition_leader_epoch, *header[3:])
    return (
        _BASE_OFFSET_TO_EPOCH.pack(base_offset, batch_length, partition_leader_epoch),
        view[_EPOCH_END:],
        _new_header(BatchHeader, fields),
    )
