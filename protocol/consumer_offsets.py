"""The __consumer_offsets record formats: what the group coordinator writes and replays.

Spec: coordinator-records/OffsetCommitKey.json, OffsetCommitValue.json, GroupMetadataKey.json,
GroupMetadataValue.json (Kafka's "data" schemas, declared here with the message schema layer).

A record's key and value (the Kafka record's own key and value) are:

    key   = key_version:int16 key_struct
    value = value_version:int16 value_struct  |  null (a tombstone: offset or group deleted)

    key_version 0, 1   OffsetCommitKey(group, topic, partition)   -> OffsetCommitValue v0-4
    key_version 2      GroupMetadataKey(group)                    -> GroupMetadataValue v0-4
    the KIP-848 consumer group; each key ConsumerGroup<X>Key goes with ConsumerGroup<X>Value v0:
    key_version 3      ConsumerGroupMetadataKey(group_id): the group epoch
    key_version 4      ConsumerGroupPartitionMetadataKey(group_id): subscribed topics
    key_version 5      ConsumerGroupMemberMetadataKey(group_id, member_id): subscription
    key_version 6      ConsumerGroupTargetAssignmentMetadataKey(group_id): assignment epoch
    key_version 7      ConsumerGroupTargetAssignmentMemberKey(group_id, member_id)
    key_version 8      ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id)
    key_version 16     ConsumerGroupRegularExpressionKey(group_id, regular_expression)
    other versions     share and streams groups, share state: UnknownRecordKey

The key version is the record type (Kafka's GroupCoordinatorRecordSerde; since 4.0 the
JSON calls it the record's apiKey), and a key's fields exist only at that version. Kafka
writes OffsetCommitKey with version 1 (0 is identical on the wire) and GroupMetadataKey with
2. It skips record types it does not know while loading, so `decode_record` returns them as
`UnknownRecordKey` for replay to skip, without decoding the value.

The consumer-group layouts are those of coordinator-records/ConsumerGroup*.json, plus two
things of Kafka 4.1 that file set predates: ConsumerGroupMetadataValue's tagged
metadata_hash (tag 0, KIP-1101) and the ConsumerGroupRegularExpression record (type 16,
a regex subscription's resolved topics). The TopicPartitions struct of the current
assignment and the TopicPartition struct of the target assignment have one layout and are
one class here.

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
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from protocol.primitives import DecodeError
from protocol.schema import (
    Array,
    Bytes,
    Int8,
    Int32,
    Int64,
    String,
    Struct,
    Uuid,
    decode_versioned,
    encode_versioned,
    wire,
)

__all__ = [
    "ClassicMemberMetadata",
    "ClassicProtocol",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupPartitionMetadataValue",
    "ConsumerGroupRegularExpressionKey",
    "ConsumerGroupRegularExpressionValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetCommitKey",
    "OffsetCommitValue",
    "PartitionMetadata",
    "RecordKey",
    "RecordValue",
    "TopicMetadata",
    "TopicPartitions",
    "UnknownRecordKey",
    "decode_coordinator_record",
    "decode_record",
    "encode_key",
    "encode_value",
]


class _RecordKey(Struct):
    """A record key: never flexible, and its fields exist at every version it has (its last
    version is the one Kafka writes)."""

    VERSIONS: ClassVar[range]
    FLEXIBLE_FROM: ClassVar[int | None] = None


class _ConsumerGroupValue(Struct):
    """A KIP-848 consumer-group record value: version 0 only, flexible."""

    VERSIONS: ClassVar[range] = range(0, 1)
    FLEXIBLE_FROM: ClassVar[int | None] = 0


class OffsetCommitKey(_RecordKey):
    VERSIONS = range(0, 2)
    group: str = wire(String)
    topic: str = wire(String)
    partition: int = wire(Int32)


class OffsetCommitValue(Struct):
    VERSIONS: ClassVar[range] = range(0, 5)
    FLEXIBLE_FROM: ClassVar[int | None] = 4
    offset: int = wire(Int64)
    leader_epoch: int = wire(Int32, since=3, default=-1)
    metadata: str = wire(String)
    commit_timestamp: int = wire(Int64)
    expire_timestamp: int = wire(Int64, since=1, until=1, default=-1)


class GroupMetadataKey(_RecordKey):
    VERSIONS = range(2, 3)
    group: str = wire(String)


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


# --- the KIP-848 consumer group records --------------------------------------------------


class ConsumerGroupMetadataKey(_RecordKey):
    VERSIONS = range(3, 4)
    group_id: str = wire(String)


class ConsumerGroupMetadataValue(_ConsumerGroupValue):
    epoch: int = wire(Int32)
    metadata_hash: int = wire(Int64, tag=0)


class ConsumerGroupPartitionMetadataKey(_RecordKey):
    VERSIONS = range(4, 5)
    group_id: str = wire(String)


class PartitionMetadata(Struct):
    partition: int = wire(Int32)
    racks: list[str] = wire(Array(String))


class TopicMetadata(Struct):
    topic_id: uuid.UUID = wire(Uuid)
    topic_name: str = wire(String)
    num_partitions: int = wire(Int32)
    partition_metadata: list[PartitionMetadata] = wire(Array(PartitionMetadata))


class ConsumerGroupPartitionMetadataValue(_ConsumerGroupValue):
    topics: list[TopicMetadata] = wire(Array(TopicMetadata))


class ConsumerGroupMemberMetadataKey(_RecordKey):
    VERSIONS = range(5, 6)
    group_id: str = wire(String)
    member_id: str = wire(String)


class ClassicProtocol(Struct):
    name: str = wire(String)
    metadata: bytes = wire(Bytes)


class ClassicMemberMetadata(Struct):
    session_timeout_ms: int = wire(Int32)
    supported_protocols: list[ClassicProtocol] = wire(Array(ClassicProtocol))


class ConsumerGroupMemberMetadataValue(_ConsumerGroupValue):
    instance_id: str | None = wire(String, nullable=0, default=None)
    rack_id: str | None = wire(String, nullable=0, default=None)
    client_id: str = wire(String)
    client_host: str = wire(String)
    subscribed_topic_names: list[str] = wire(Array(String))
    subscribed_topic_regex: str | None = wire(String, nullable=0, default=None)
    rebalance_timeout_ms: int = wire(Int32, default=-1)
    server_assignor: str | None = wire(String, nullable=0, default=None)
    # Set for a classic-protocol member of a consumer group (migration); null otherwise.
    classic_member_metadata: ClassicMemberMetadata | None = wire(
        ClassicMemberMetadata, nullable=0, tag=0, default=None
    )


class ConsumerGroupTargetAssignmentMetadataKey(_RecordKey):
    VERSIONS = range(6, 7)
    group_id: str = wire(String)


class ConsumerGroupTargetAssignmentMetadataValue(_ConsumerGroupValue):
    assignment_epoch: int = wire(Int32)


class TopicPartitions(Struct):
    topic_id: uuid.UUID = wire(Uuid)
    partitions: list[int] = wire(Array(Int32))


class ConsumerGroupTargetAssignmentMemberKey(_RecordKey):
    VERSIONS = range(7, 8)
    group_id: str = wire(String)
    member_id: str = wire(String)


class ConsumerGroupTargetAssignmentMemberValue(_ConsumerGroupValue):
    topic_partitions: list[TopicPartitions] = wire(Array(TopicPartitions))


class ConsumerGroupCurrentMemberAssignmentKey(_RecordKey):
    VERSIONS = range(8, 9)
    group_id: str = wire(String)
    member_id: str = wire(String)


class ConsumerGroupCurrentMemberAssignmentValue(_ConsumerGroupValue):
    member_epoch: int = wire(Int32)
    previous_member_epoch: int = wire(Int32)
    state: int = wire(Int8)  # MemberState: 0 STABLE, 1 UNREVOKED_PARTITIONS, 2 UNRELEASED_...
    assigned_partitions: list[TopicPartitions] = wire(Array(TopicPartitions))
    partitions_pending_revocation: list[TopicPartitions] = wire(Array(TopicPartitions))


class ConsumerGroupRegularExpressionKey(_RecordKey):
    VERSIONS = range(16, 17)
    group_id: str = wire(String)
    regular_expression: str = wire(String)


class ConsumerGroupRegularExpressionValue(_ConsumerGroupValue):
    topics: list[str] = wire(Array(String))
    version: int = wire(Int64)  # the topic metadata version it was resolved against
    timestamp: int = wire(Int64)  # wall-clock ms of the resolution


@dataclass(frozen=True, slots=True)
class UnknownRecordKey:
    """A record type (key version) we do not decode; `raw` is the whole key as read."""

    version: int
    raw: bytes


ConsumerGroupRecordKey = (
    ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
    | ConsumerGroupRegularExpressionKey
)
ConsumerGroupRecordValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
    | ConsumerGroupRegularExpressionValue
)
RecordKey = OffsetCommitKey | GroupMetadataKey | ConsumerGroupRecordKey | UnknownRecordKey
RecordValue = OffsetCommitValue | GroupMetadataValue | ConsumerGroupRecordValue

# Value type stored under each key type.
_VALUE_FOR_KEY: dict[type[_RecordKey], type[Struct]] = {
    OffsetCommitKey: OffsetCommitValue,
    GroupMetadataKey: GroupMetadataValue,
    ConsumerGroupMetadataKey: ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey: ConsumerGroupPartitionMetadataValue,
    ConsumerGroupMemberMetadataKey: ConsumerGroupMemberMetadataValue,
    ConsumerGroupTargetAssignmentMetadataKey: ConsumerGroupTargetAssignmentMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey: ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupCurrentMemberAssignmentKey: ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupRegularExpressionKey: ConsumerGroupRegularExpressionValue,
}
# Key and value types of each key version that we decode.
_TYPES: dict[int, tuple[type[Struct], type[Struct]]] = {
    version: (key_cls, value_cls)
    for key_cls, value_cls in _VALUE_FOR_KEY.items()
    for version in key_cls.VERSIONS
}


def encode_key(key: OffsetCommitKey | GroupMetadataKey | ConsumerGroupRecordKey) -> bytes:
    """The record key, with the key version Kafka writes (1 for offsets, 2 for groups, the
    record type for the consumer-group records)."""
    return encode_versioned(key, key.VERSIONS[-1])


def encode_value(value: RecordValue, version: int) -> bytes:
    """The record value at `version` (0-4; 0 for the consumer-group values). A tombstone is a
    null value, not encoded here."""
    return encode_versioned(value, version)


def decode_record(
    key: bytes | memoryview, value: bytes | memoryview | None
) -> tuple[RecordKey, RecordValue | None]:
    """Decode one __consumer_offsets record; a null value (tombstone) decodes to None.

    Returns:
      (key, value). For a key version other than 0-8 and 16 the key is `UnknownRecordKey`
      and the value is not decoded (None).

    Raises:
      DecodeError: a key or value that is short, has bytes left over, or is invalid.
    """
    return decode_coordinator_record(key, value, _TYPES, "record key")


def decode_coordinator_record(
    key: bytes | memoryview,
    value: bytes | memoryview | None,
    types: Mapping[int, tuple[type[Struct], type[Struct]]],
    what: str,
) -> tuple[Any, Any]:
    """Decode a coordinator record whose key version is its record type (Kafka's
    CoordinatorRecordSerde.deserialize): `types` maps each record type we decode to its
    key and value classes; any other type gives `UnknownRecordKey` and no value.

    Raises:
      DecodeError: a key or value that is short, has bytes left over, or is invalid; `what`
        names the key in the message.
    """
    if len(key) < 2:
        raise DecodeError(f"{what} of {len(key)} bytes has no version")
    (version,) = struct.unpack_from(">h", key, 0)
    if version not in types:
        return UnknownRecordKey(version, bytes(key)), None
    key_cls, value_cls = types[version]
    decoded_key = decode_versioned(key_cls, key)
    if value is None:
        return decoded_key, None
    return decoded_key, decode_versioned(value_cls, value)
