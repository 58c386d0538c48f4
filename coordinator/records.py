"""The coordinator's records in __consumer_offsets: what handlers produce and replay consumes.

The byte formats are Kafka's own (coordinator-records/*.json), declared and encoded in
`protocol.consumer_offsets`; this module decides what goes into them. An offset commit's
key and value, written for every commit, are packed here directly (OffsetCommitRecord),
to the same bytes.

    key                                       value
    OffsetCommitKey v1 (group, topic, part.)  OffsetCommitValue v3, or v1 when the commit
                                              carries an expire timestamp; null: tombstone
    GroupMetadataKey v2 (group)               GroupMetadataValue v3; null: tombstone

These are the versions Kafka 3.x and 4.x write (OffsetCommitValue v1 is the only one with
expireTimestamp, set by OffsetCommit v2-4 with a retention time; GroupMetadataValue v3 has
groupInstanceId). Replay reads every version 0-4.

What a GroupMetadataValue holds, and what is lost: protocol type, generation, the selected
protocol, the leader, the time of the last state change, and per member its ids, client id
and host, timeouts, its metadata for the selected protocol and its assignment. The other
protocols a member offered are not stored (Kafka stores the same), nor is the state: a
group read back is Stable when it has members and Empty when not.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping
from dataclasses import dataclass

from coordinator.classic.group import Group, OffsetAndMetadata
from protocol.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from protocol.kept import keep

__all__ = [
    "CoordinatorRecord",
    "OffsetCommitRecord",
    "group_metadata_record",
    "group_tombstone",
    "offset_commit_record",
    "offset_from_value",
    "offset_tombstone",
]

# Value versions Kafka writes (MetadataVersion 2.3+).
OFFSET_COMMIT_VALUE_VERSION = 3
OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_METADATA_VALUE_VERSION = 3


@dataclass(frozen=True, slots=True)
class CoordinatorRecord:
    """One __consumer_offsets record: a key and a value, or None for a tombstone."""

    key: OffsetCommitKey | GroupMetadataKey
    value: OffsetCommitValue | GroupMetadataValue | None
    value_version: int = -1  # the version `value` is written with (-1 for a tombstone)

    @property
    def group_id(self) -> str:
        """The group whose __consumer_offsets partition the record belongs to."""
        return self.key.group

    @property
    def is_offset_commit(self) -> bool:
        """An offset commit (or its tombstone), as opposed to group metadata."""
        return isinstance(self.key, OffsetCommitKey)

    def key_bytes(self) -> bytes:
        return encode_key(self.key)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        return encode_value(self.value, self.value_version)


# OffsetCommitKey v1 and OffsetCommitValue v3 / v1 as `protocol.consumer_offsets` encodes
# them (tests/coordinator/test_records.py checks the two agree), packed directly: the
# record of every commit, which the schema layer's generic encoder made one of the larger
# costs of an OffsetCommit. int16 string lengths: a string over 32,767 bytes fails as the
# generic encoder fails (struct.error).
_KEY_VERSION = struct.pack(">h", 1)
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_VALUE_HEAD = struct.Struct(">hqih")  # version 3, offset, leader epoch, metadata length
# OffsetCommitValue v3 of an offset without metadata or expire timestamp (almost every
# commit), as a struct format without its byte order: the head above (metadata length 0),
# then the commit timestamp. For writers that pack the value inside a larger struct:
# `OffsetCommitRecord.plain_value` gives its fields.
PLAIN_VALUE_FORMAT = _VALUE_HEAD.format.removeprefix(">") + "q"
PLAIN_VALUE_SIZE = struct.calcsize(">" + PLAIN_VALUE_FORMAT)
_VALUE_HEAD_V1 = struct.Struct(">hqh")  # version 1, offset, metadata length
_I64 = struct.Struct(">q")
_I64_PAIR = struct.Struct(">qq")
# Encoded keys by (group, topic, partition), emptied when full: a process-wide cache (the
# bytes depend on nothing else), at most ~10,000 keys of a few dozen bytes.
_KEYS: dict[tuple[str, str, int], bytes] = {}
_KEYS_KEPT = 10_000


class OffsetCommitRecord:
    """An offset commit's record, encoded straight from the committed offset; the same
    interface as CoordinatorRecord, whose `key`, `value` and `value_version` it builds
    only when read (replay tests, tools), not on the commit path."""

    __slots__ = ("group_id", "offset", "partition", "topic")
    is_offset_commit = True

    def __init__(
        self, group_id: str, topic: str, partition: int, offset: OffsetAndMetadata
    ) -> None:
        self.group_id = group_id
        self.topic = topic
        self.partition = partition
        self.offset = offset

    def __repr__(self) -> str:
        return f"OffsetCommitRecord({self.key!r}, {self.value!r}, {self.value_version})"

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OffsetCommitRecord | CoordinatorRecord):
            return (self.key, self.value, self.value_version) == (
                other.key,
                other.value,
                other.value_version,
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    @property
    def key(self) -> OffsetCommitKey:
        return OffsetCommitKey(group=self.group_id, topic=self.topic, partition=self.partition)

    @property
    def value_version(self) -> int:
        if self.offset.expire_timestamp_ms is None:
            return OFFSET_COMMIT_VALUE_VERSION
        return OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY

    @property
    def value(self) -> OffsetCommitValue:
        offset = self.offset
        expire = offset.expire_timestamp_ms
        return OffsetCommitValue(
            offset=offset.offset,
            leader_epoch=offset.leader_epoch,
            metadata=offset.metadata,
            commit_timestamp=offset.commit_timestamp_ms,
            expire_timestamp=-1 if expire is None else expire,
        )

    def key_bytes(self) -> bytes:
        # A group commits the same partitions again and again: their keys are kept.
        name = (self.group_id, self.topic, self.partition)
        key = _KEYS.get(name)
        if key is None:
            group = self.group_id.encode()
            topic = self.topic.encode()
            key = b"".join(
                (
                    _KEY_VERSION,
                    _I16.pack(len(group)),
                    group,
                    _I16.pack(len(topic)),
                    topic,
                    _I32.pack(self.partition),
                )
            )
            keep(_KEYS, name, key, _KEYS_KEPT)
        return key

    def plain_value(self) -> tuple[int, int, int, int, int] | None:
        """The fields of the value in PLAIN_VALUE_FORMAT, or None when the offset has
        metadata or an expire timestamp (then only `value_bytes` writes it)."""
        offset = self.offset
        if offset.metadata or offset.expire_timestamp_ms is not None:
            return None
        return (
            OFFSET_COMMIT_VALUE_VERSION,
            offset.offset,
            offset.leader_epoch,
            0,
            offset.commit_timestamp_ms,
        )

    def value_bytes(self) -> bytes:
        offset = self.offset
        metadata = offset.metadata.encode()
        expire = offset.expire_timestamp_ms
        if expire is None:
            head = _VALUE_HEAD.pack(
                OFFSET_COMMIT_VALUE_VERSION, offset.offset, offset.leader_epoch, len(metadata)
            )
            return b"".join((head, metadata, _I64.pack(offset.commit_timestamp_ms)))
        head = _VALUE_HEAD_V1.pack(
            OFFSET_COMMIT_VALUE_VERSION_WITH_EXPIRY, offset.offset, len(metadata)
        )
        return b"".join((head, metadata, _I64_PAIR.pack(offset.commit_timestamp_ms, expire)))


def offset_commit_record(
    group_id: str, topic: str, partition: int, offset: OffsetAndMetadata
) -> OffsetCommitRecord:
    return OffsetCommitRecord(group_id, topic, partition, offset)


def offset_tombstone(group_id: str, topic: str, partition: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        OffsetCommitKey(group=group_id, topic=topic, partition=partition), None
    )


def offset_from_value(value: OffsetCommitValue) -> OffsetAndMetadata:
    return OffsetAndMetadata(
        offset=value.offset,
        leader_epoch=value.leader_epoch,
        metadata=value.metadata,
        commit_timestamp_ms=value.commit_timestamp,
        expire_timestamp_ms=None if value.expire_timestamp == -1 else value.expire_timestamp,
    )


def group_metadata_record(
    group: Group, assignment: Mapping[str, bytes], current_state_timestamp: int
) -> CoordinatorRecord:
    """The group as Kafka's storeGroup writes it, with `assignment` for every member.

    `current_state_timestamp` is wall-clock ms, or -1 when unknown.
    """
    protocol = group.protocol_name
    members = []
    for m in group.members.values():
        assert protocol is not None, "a group with members has a protocol"
        members.append(
            MemberMetadata(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(protocol),
                assignment=assignment[m.member_id],
            )
        )
    return CoordinatorRecord(
        GroupMetadataKey(group=group.group_id),
        GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=protocol,
            leader=group.leader_id,
            current_state_timestamp=current_state_timestamp,
            members=members,
        ),
        GROUP_METADATA_VALUE_VERSION,
    )


def group_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(GroupMetadataKey(group=group_id), None)
