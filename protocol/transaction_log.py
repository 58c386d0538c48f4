"""The __transaction_state record formats: what the transaction coordinator writes and replays.

Spec: transaction-records/TransactionLogKey.json and TransactionLogValue.json (Kafka's "data"
schemas, declared here with the message schema layer, as `protocol.consumer_offsets` does for
__consumer_offsets).

A record's key and value (the Kafka record's own key and value) are:

    key   = key_version:int16 TransactionLogKey(transactional_id)
    value = value_version:int16 TransactionLogValue  |  null (a tombstone: the id expired)

The key version is the record type (Kafka's CoordinatorRecordType.TRANSACTION_LOG = 0);
Kafka skips other key versions while loading, so `decode_record` returns them as
`UnknownRecordKey`, leaving the value undecoded.

Value versions (TransactionLog.valueToBytes writes the version of the cluster's
transaction.version: 0 below transaction.version 2, 1 from it):
  v0: producer_id, producer_epoch, transaction_timeout_ms, transaction_status (the state's
      id, TransactionState.java), transaction_partitions (null for Empty),
      transaction_last_update_timestamp_ms, transaction_start_timestamp_ms.
  v1: flexible; tagged previous_producer_id (0), next_producer_id (1) and
      client_transaction_version (2). KIP-915: later versions only add tagged fields, so a
      newer value is read with the v1 layout and its unknown tags skipped.

Pure: stdlib and `protocol` only (the PySpark pipeline and `kmock dump-log` may import it).
"""

from __future__ import annotations

from typing import ClassVar

from protocol.consumer_offsets import UnknownRecordKey, decode_coordinator_record
from protocol.schema import (
    Array,
    Int8,
    Int16,
    Int32,
    Int64,
    String,
    Struct,
    encode_versioned,
    wire,
)

__all__ = [
    "TRANSACTION_LOG_KEY_VERSION",
    "PartitionsSchema",
    "TransactionLogKey",
    "TransactionLogValue",
    "UnknownRecordKey",
    "decode_record",
    "encode_key",
    "encode_value",
]

# CoordinatorRecordType.TRANSACTION_LOG: the only record type of __transaction_state.
TRANSACTION_LOG_KEY_VERSION = 0


class TransactionLogKey(Struct):
    VERSIONS: ClassVar[range] = range(0, 1)
    FLEXIBLE_FROM: ClassVar[int | None] = None
    transactional_id: str = wire(String)


class PartitionsSchema(Struct):
    topic: str = wire(String)
    partition_ids: list[int] = wire(Array(Int32))


class TransactionLogValue(Struct):
    VERSIONS: ClassVar[range] = range(0, 2)
    FLEXIBLE_FROM: ClassVar[int | None] = 1
    producer_id: int = wire(Int64)
    previous_producer_id: int = wire(Int64, since=1, tag=0, default=-1)
    next_producer_id: int = wire(Int64, since=1, tag=1, default=-1)
    producer_epoch: int = wire(Int16)
    transaction_timeout_ms: int = wire(Int32)
    transaction_status: int = wire(Int8)
    transaction_partitions: list[PartitionsSchema] | None = wire(
        Array(PartitionsSchema), nullable=0, default=None
    )
    transaction_last_update_timestamp_ms: int = wire(Int64)
    transaction_start_timestamp_ms: int = wire(Int64)
    client_transaction_version: int = wire(Int16, since=1, tag=2, default=0)


def encode_key(transactional_id: str) -> bytes:
    """The record key: key version 0 and the transactional id (TransactionLog.keyToBytes)."""
    return encode_versioned(TransactionLogKey(transactional_id=transactional_id), 0)


def encode_value(value: TransactionLogValue, version: int) -> bytes:
    """The record value at `version` (0 or 1). A tombstone is a null value, not encoded here."""
    return encode_versioned(value, version)


def decode_record(
    key: bytes | memoryview, value: bytes | memoryview | None
) -> tuple[TransactionLogKey | UnknownRecordKey, TransactionLogValue | None]:
    """Decode one __transaction_state record; a null value (tombstone) decodes to None.

    Returns:
      (key, value). For a key version other than 0 the key is `UnknownRecordKey` and the
      value is not decoded (None), as Kafka's TransactionLog.read returns UnknownKeyVersion.

    Raises:
      DecodeError: a key or value that is short, has bytes left over, or is invalid.
    """
    return decode_coordinator_record(
        key,
        value,
        {TRANSACTION_LOG_KEY_VERSION: (TransactionLogKey, TransactionLogValue)},
        "transaction log key",
    )
