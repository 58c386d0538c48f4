"""Transaction markers: the COMMIT/ABORT control batches that end a transaction in a partition.

Format (Kafka's docs/implementation.html, "Control Batches"; ControlRecordType.java,
EndTransactionMarker.java):

    batch attributes   bit 4 isTransactional = 1, bit 5 isControlBatch = 1, no compression
    batch              producerId/producerEpoch of the transaction, baseSequence -1,
                       exactly one record
    record key         version:int16 (0)  type:int16 (0 ABORT, 1 COMMIT)
    record value       version:int16 (0)  coordinatorEpoch:int32

A control batch is never returned to applications: consumers skip it and use it to end the
producer's transaction (read_committed drops the aborted records before it).

Kafka reads keys and values of a newer version than 0 with the version-0 layout, ignoring
what follows (ControlRecordType.parse, EndTransactionMarker.deserializeValue); so do we. A
negative version, or fewer bytes than version 0 needs, is a corrupt record.

`build_control_batch` and `ControlRecordType` live in `protocol.records` beside the batch
codec; this module reads markers back.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from protocol.compression import BytesLike
from protocol.errors import ErrorCode, KafkaError
from protocol.records import (
    BatchHeader,
    ControlRecordType,
    build_control_batch,
    decode_records,
    parse_batch_header,
)

__all__ = [
    "ControlRecordType",
    "EndTxnMarker",
    "build_control_batch",
    "decode_control_key",
    "decode_end_txn_marker_value",
    "encode_control_key",
    "encode_end_txn_marker_value",
    "is_txn_marker",
    "read_txn_marker",
]

# ControlRecordType.CURRENT_CONTROL_RECORD_KEY_VERSION, EndTransactionMarker's value version.
CONTROL_RECORD_KEY_VERSION = 0
END_TXN_MARKER_VALUE_VERSION = 0

_KEY = struct.Struct(">hh")
_VALUE = struct.Struct(">hi")


class EndTxnMarker(NamedTuple):
    """A COMMIT or ABORT marker as read from a partition."""

    control_type: ControlRecordType
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    offset: int  # the marker's own offset in the partition

    @property
    def is_commit(self) -> bool:
        return self.control_type is ControlRecordType.COMMIT


def _corrupt(detail: str) -> KafkaError:
    return KafkaError(ErrorCode.CORRUPT_MESSAGE, detail)


def encode_control_key(control_type: ControlRecordType) -> bytes:
    return _KEY.pack(CONTROL_RECORD_KEY_VERSION, control_type)


def decode_control_key(key: bytes | None) -> int:
    """The control record type in `key` (a ControlRecordType value for markers; Kafka has
    others, LEADER_CHANGE and the KRaft snapshot types, that never appear in topic data).

    Raises:
        KafkaError: CORRUPT_MESSAGE for a null or short key or a negative version.
    """
    return _after_version(_KEY, key, "control record key")


def encode_end_txn_marker_value(coordinator_epoch: int) -> bytes:
    return _VALUE.pack(END_TXN_MARKER_VALUE_VERSION, coordinator_epoch)


def decode_end_txn_marker_value(value: bytes | None) -> int:
    """The coordinator epoch in an EndTransactionMarker value.

    Raises:
        KafkaError: CORRUPT_MESSAGE for a null or short value or a negative version.
    """
    return _after_version(_VALUE, value, "end transaction marker")


def _after_version(layout: struct.Struct, data: bytes | None, what: str) -> int:
    """The field that follows the int16 version in `data`, laid out as `layout`; bytes
    after it are ignored.

    Raises:
        KafkaError: CORRUPT_MESSAGE for null or short data or a negative version.
    """
    if data is None or len(data) < layout.size:
        raise _corrupt(f"{what} of {0 if data is None else len(data)} bytes")
    version, field = layout.unpack_from(data)
    if version < 0:
        raise _corrupt(f"{what} version {version}")
    return int(field)


def is_txn_marker(header: BatchHeader) -> bool:
    """A control batch of a transaction (Kafka's `isControlBatch && isTransactional`)."""
    return header.is_control and header.is_transactional


def read_txn_marker(batch: BytesLike) -> EndTxnMarker:
    """Decode the marker of the control batch at the start of `batch`.

    Raises:
        KafkaError: CORRUPT_MESSAGE when the batch is not a transactional control batch with
            exactly one COMMIT or ABORT record, or its record is malformed.
    """
    header = parse_batch_header(batch)
    if not is_txn_marker(header):
        raise _corrupt(f"batch at offset {header.base_offset} is not a transaction marker")
    records = decode_records(batch)
    if len(records) != 1:
        raise _corrupt(f"control batch at offset {header.base_offset} has {len(records)} records")
    (record,) = records
    control_type = decode_control_key(record.key)
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise _corrupt(f"control record type {control_type} is not a transaction marker")
    return EndTxnMarker(
        ControlRecordType(control_type),
        header.producer_id,
        header.producer_epoch,
        decode_end_txn_marker_value(record.value),
        record.offset,
    )
