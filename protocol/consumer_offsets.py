"""The __consumer_offsets record formats: what the group coordinator writes and replays.

Spec: coordinator-records/OffsetCommitKey.json, OffsetCommitValue.json, GroupMetadataKey.json,
GroupMetadataValue.json (Kafka's "data" schemas, declared here with the message schema layer).

A record's key and value (the Kafka record's own key and value) are:

    key   = key_version:int16 key_struct
    value = value_version:int16 value_struct  |  null (a tombstone: offset or group deleted)

    key_version 0, 1   OffsetCommitKey(group, topic, partition)   -> OffsetCommitValue v0-4
    key_version 2      GroupMetadataKey(group)                    -> GroupMetadataValue v0-4
    key_version 3+     the KIP-848 consumer-group and share-group records: UnknownRecordKey

The key version is the record type (Kafka's GroupCoordinatorRecordSerde). Kafka writes
OffsetCommitKey with version 1 (0 is identical on the wire) and GroupMetadataKey with 2. It
skips record types it does not know while loading, so `decode_record` returns them as
`UnknownRecordKey` for replay to skip, without decoding the value.

Value versions, flexible from 4 (KIP-915: later versions only add tagged fields, so a value
newer than 4 is read with the version-4 layout and its unknown tags skipped, as Kafka does):
  OffsetCommitValue   v1: expire_timestamp (v1 only); v2: removed; v3: leader_epoch;
                      v4: flexible.
  GroupMetadataValue  v1: MemberMetadata.rebalance_timeout; v2: current_state_timestamp;
                      v3: MemberMetadata.group_instance_id; v4: flexible.

Pure: stdlib and `protocol` only (the PySpark pipeline imports this module).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, ClassVar

from protocol.primitives import DecodeError
from protocol.schema import (
    Array,
    Bytes,
    Int32,
    Int64,
    String,
    Struct,
    decode_versioned,
    encode_versioned,
    wire,
)

__all__ = [
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "RecordKey",
    "RecordValue",
    "UnknownRecordKey",
    "decode_record",
    "encode_key",
    "encode_value",
]


class OffsetCommitKey(Struct):
    VERSIONS: ClassVar[range] = range(0, 2)
    FLEXIBLE_FROM: ClassVar[int | None] = None
    group: str = wire(String, until=1)
    topic: str = wire(String, until=1)
    partition: int = wire(Int32, until=1)


class OffsetCommitValue(Struct):
    VERSIONS: ClassVar[range] = range(0, 5)
    FLEXIBLE_FROM: ClassVar[int | None] = 4
    offset: int = wire(Int64)
    leader_epoch: int = wire(Int32, since=3, default=-1)
    metadata: str = wire(String)
    commit_timestamp: int = wire(Int64)
    expire_timestamp: int = wire(Int64, since=1, until=1, default=-1)


class GroupMetadataKey(Struct):
    VERSIONS: ClassVar[range] = range(2, 3)
    FLEXIBLE_FROM: ClassVar[int | None] = None
    group: str = wire(String, since=2, until=2)


class MemberMetadata(Struct):
    member_id: str = wire(String)
    group_instance_id: str | None = wire(String, since=3, nullable=3, default=None)
    client_id: str = wire(String)
    client_host: str = wire(String)
    rebalance_timeout: int = wire(Int32, since=1, default=-1)
    session_timeout: int = wire(Int32)
    subscription: bytes = wire(Bytes)
    assignment: bytes = wire(Bytes)


class GroupMetadataValue(Struct):
    VERSIONS: ClassVar[range] = range(0, 5)
    FLEXIBLE_FROM: ClassVar[int | None] = 4
    protocol_type: str = wire(String)
    generation: int = wire(Int32)
    protocol: str | None = wire(String, nullable=0)
    leader: str | None = wire(String, nullable=0)
    current_state_timestamp: int = wire(Int64, since=2, default=-1)
    members: list[MemberMetadata] = wire(Array(MemberMetadata))


@dataclass(frozen=True, slots=True)
class UnknownRecordKey:
    """A record type (key version) we do not decode; `raw` is the whole key as read."""

    version: int
    raw: bytes


RecordKey = OffsetCommitKey | GroupMetadataKey | UnknownRecordKey
RecordValue = OffsetCommitValue | GroupMetadataValue

# Key version Kafka writes for each key type.
_KEY_VERSION: dict[type[Struct], int] = {OffsetCommitKey: 1, GroupMetadataKey: 2}
# Value type stored under each key type.
_VALUE_FOR_KEY: dict[type[Struct], type[Struct]] = {
    OffsetCommitKey: OffsetCommitValue,
    GroupMetadataKey: GroupMetadataValue,
}


def encode_key(key: OffsetCommitKey | GroupMetadataKey) -> bytes:
    """The record key, with the key version Kafka writes (1 for offsets, 2 for groups)."""
    return encode_versioned(key, _KEY_VERSION[type(key)])


def encode_value(value: RecordValue, version: int) -> bytes:
    """The record value at `version` (0-4). A tombstone is a null value, not encoded here."""
    return encode_versioned(value, version)


def decode_record(
    key: bytes | memoryview, value: bytes | memoryview | None
) -> tuple[RecordKey, RecordValue | None]:
    """Decode one __consumer_offsets record; a null value (tombstone) decodes to None.

    Returns:
      (key, value). For a key version other than 0-2 the key is `UnknownRecordKey` and the
      value is not decoded (None).

    Raises:
      DecodeError: a key or value that is short, has bytes left over, or is invalid.
    """
    if len(key) < 2:
        raise DecodeError(f"record key of {len(key)} bytes has no version")
    (version,) = struct.unpack_from(">h", key, 0)
    if version in (0, 1):
        key_cls: Any = OffsetCommitKey
    elif version == 2:
        key_cls = GroupMetadataKey
    else:
        return UnknownRecordKey(version, bytes(key)), None
    decoded_key = decode_versioned(key_cls, key)
    if value is None:
        return decoded_key, None
    return decoded_key, decode_versioned(_VALUE_FOR_KEY[key_cls], value)
