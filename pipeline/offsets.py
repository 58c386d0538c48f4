"""Typed rows for `__consumer_offsets` records: what decode=consumer_offsets yields.

The record formats are decoded by protocol.consumer_offsets (keys and values) and
protocol.consumer_protocol (the subscription and assignment bytes inside a "consumer"
group's members); this module only shapes the results into rows of `SCHEMA`:

    partition, offset, timestamp   where the record sits in __consumer_offsets
    key                            the raw record key: log compaction's identity
    record_type                    "offset_commit" | "group_metadata" | "unknown" (a key
                                   version other than 0-2, e.g. KIP-848 records) |
                                   "control" (a transaction marker) | "corrupt"
    key_version, value_version     the int16 prefixes (value_version null for a tombstone)
    tombstone                      the value is null: the offset or the group was deleted
    group                          from the key
    producer_id, is_transactional  of the record's batch (transactional offset commits)
    control_type                   0 ABORT, 1 COMMIT, for control records
    offset_commit                  struct, for record_type "offset_commit"
    group_metadata                 struct, for record_type "group_metadata"
    error                          why a record (or a member's subscription/assignment)
                                   did not decode; the row keeps what did

Times are Spark timestamps (UTC instants) converted from Kafka's epoch milliseconds, and
Kafka's -1 ("none") becomes null. Every other field keeps Kafka's value, -1 included
(leader_epoch -1 means "no epoch", as in the broker).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from protocol.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordKey,
    decode_record,
)
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.errors import KafkaError
from protocol.primitives import DecodeError
from protocol.records import control_record_type

__all__ = [
    "ASSIGNMENT",
    "GROUP_METADATA",
    "MEMBER",
    "OFFSET_COMMIT",
    "SCHEMA",
    "SUBSCRIPTION",
    "decode_row",
    "to_record_batch",
]

TIMESTAMP = pa.timestamp("us", tz="UTC")

TOPIC_PARTITIONS = pa.list_(
    pa.struct([("topic", pa.string()), ("partitions", pa.list_(pa.int32()))])
)

# ConsumerProtocolSubscription / ConsumerProtocolAssignment, with the version they came in.
SUBSCRIPTION = pa.struct(
    [
        ("version", pa.int16()),
        ("topics", pa.list_(pa.string())),
        ("user_data", pa.binary()),
        ("owned_partitions", TOPIC_PARTITIONS),
        ("generation_id", pa.int32()),
        ("rack_id", pa.string()),
    ]
)
ASSIGNMENT = pa.struct(
    [
        ("version", pa.int16()),
        ("assigned_partitions", TOPIC_PARTITIONS),
        ("user_data", pa.binary()),
    ]
)

# GroupMetadataValue's MemberMetadata; the consumer_* structs are set when protocol_type is
# "consumer" and the bytes decode.
MEMBER = pa.struct(
    [
        ("member_id", pa.string()),
        ("group_instance_id", pa.string()),
        ("client_id", pa.string()),
        ("client_host", pa.string()),
        ("rebalance_timeout", pa.int32()),  # ms
        ("session_timeout", pa.int32()),  # ms
        ("subscription", pa.binary()),
        ("assignment", pa.binary()),
        ("consumer_subscription", SUBSCRIPTION),
        ("consumer_assignment", ASSIGNMENT),
    ]
)

# OffsetCommitKey's topic and partition, then OffsetCommitValue (null fields for a tombstone).
OFFSET_COMMIT = pa.struct(
    [
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("leader_epoch", pa.int32()),
        ("metadata", pa.string()),
        ("commit_timestamp", TIMESTAMP),
        ("expire_timestamp", TIMESTAMP),
    ]
)

GROUP_METADATA = pa.struct(
    [
        ("protocol_type", pa.string()),
        ("generation", pa.int32()),
        ("protocol", pa.string()),
        ("leader", pa.string()),
        ("current_state_timestamp", TIMESTAMP),
        ("members", pa.list_(MEMBER)),
    ]
)

SCHEMA = pa.schema(
    [
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", TIMESTAMP),
        ("key", pa.binary()),
        ("record_type", pa.string()),
        ("key_version", pa.int16()),
        ("value_version", pa.int16()),
        ("tombstone", pa.bool_()),
        ("group", pa.string()),
        ("producer_id", pa.int64()),
        ("is_transactional", pa.bool_()),
        ("control_type", pa.int16()),
        ("offset_commit", OFFSET_COMMIT),
        ("group_metadata", GROUP_METADATA),
        ("error", pa.string()),
    ]
)

_INT16 = struct.Struct(">h")


def _micros(ms: int) -> int | None:
    return None if ms == -1 else ms * 1000


def _version(data: bytes | None) -> int | None:
    return _INT16.unpack_from(data)[0] if data is not None and len(data) >= 2 else None


def _bytes(data: Any) -> bytes | None:
    return None if data is None else bytes(data)


def _topic_partitions(items: Any) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partitions": list(tp.partitions)} for tp in items]


def _member(m: MemberMetadata, consumer: bool, errors: list[str]) -> dict[str, Any]:
    row: dict[str, Any] = {
        "member_id": m.member_id,
        "group_instance_id": m.group_instance_id,
        "client_id": m.client_id,
        "client_host": m.client_host,
        "rebalance_timeout": m.rebalance_timeout,
        "session_timeout": m.session_timeout,
        "subscription": _bytes(m.subscription),
        "assignment": _bytes(m.assignment),
        "consumer_subscription": None,
        "consumer_assignment": None,
    }
    if not consumer:
        return row
    # A member that has not synced yet has empty assignment bytes: nothing to decode.
    if len(m.subscription):
        try:
            s = decode_subscription(m.subscription)
        except DecodeError as e:
            errors.append(f"member {m.member_id}: subscription: {e}")
        else:
            row["consumer_subscription"] = {
                "version": _version(bytes(m.subscription[:2])),
                "topics": list(s.topics),
                "user_data": _bytes(s.user_data),
                "owned_partitions": _topic_partitions(s.owned_partitions),
                "generation_id": s.generation_id,
                "rack_id": s.rack_id,
            }
    if len(m.assignment):
        try:
            a = decode_assignment(m.assignment)
        except DecodeError as e:
            errors.append(f"member {m.member_id}: assignment: {e}")
        else:
            row["consumer_assignment"] = {
                "version": _version(bytes(m.assignment[:2])),
                "assigned_partitions": _topic_partitions(a.assigned_partitions),
                "user_data": _bytes(a.user_data),
            }
    return row


def decode_row(
    partition: int,
    offset: int,
    timestamp: int,
    key: bytes | None,
    value: bytes | None,
    *,
    producer_id: int = -1,
    is_transactional: bool = False,
    is_control: bool = False,
) -> dict[str, Any]:
    """One __consumer_offsets record (its place, key, value and batch flags) as a `SCHEMA` row.

    Never raises for bad bytes: such a record becomes record_type "corrupt" with `error` set.
    """
    row: dict[str, Any] = {
        "partition": partition,
        "offset": offset,
        "timestamp": _micros(timestamp),
        "key": key,
        "record_type": None,
        "key_version": _version(key),
        "value_version": _version(value),
        "tombstone": value is None,
        "group": None,
        "producer_id": producer_id,
        "is_transactional": is_transactional,
        "control_type": None,
        "offset_commit": None,
        "group_metadata": None,
        "error": None,
    }
    if is_control:
        row["record_type"] = "control"
        try:
            row["control_type"] = control_record_type(key)
        except KafkaError as e:
            row["error"] = e.detail
        return row
    if key is None:
        row["record_type"] = "corrupt"
        row["error"] = "record with a null key"
        return row
    try:
        k, v = decode_record(key, value)
    except DecodeError as e:
        row["record_type"] = "corrupt"
        row["error"] = str(e)
        return row
    if isinstance(k, UnknownRecordKey) or not isinstance(k, OffsetCommitKey | GroupMetadataKey):
        row["record_type"] = "unknown"
    elif isinstance(k, OffsetCommitKey):
        row["record_type"] = "offset_commit"
        row["group"] = k.group
        commit: dict[str, Any] = {"topic": k.topic, "partition": k.partition}
        if isinstance(v, OffsetCommitValue):
            commit.update(
                offset=v.offset,
                leader_epoch=v.leader_epoch,
                metadata=v.metadata,
                commit_timestamp=_micros(v.commit_timestamp),
                expire_timestamp=_micros(v.expire_timestamp),
            )
        row["offset_commit"] = commit
    elif isinstance(k, GroupMetadataKey):
        row["record_type"] = "group_metadata"
        row["group"] = k.group
        if isinstance(v, GroupMetadataValue):
            errors: list[str] = []
            consumer = v.protocol_type == "consumer"
            row["group_metadata"] = {
                "protocol_type": v.protocol_type,
                "generation": v.generation,
                "protocol": v.protocol,
                "leader": v.leader,
                "current_state_timestamp": _micros(v.current_state_timestamp),
                "members": [_member(m, consumer, errors) for m in v.members],
            }
            if errors:
                row["error"] = "; ".join(errors)
    return row


def to_record_batch(rows: list[dict[str, Any]]) -> pa.RecordBatch:
    """Rows from `decode_row` as one Arrow batch of `SCHEMA`."""
    return pa.RecordBatch.from_pylist(rows, schema=SCHEMA)


def iter_record_batches(
    partition: int,
    columns: Iterator[Any],
    *,
    rows: int = 65536,
) -> Iterator[pa.RecordBatch]:
    """Decode chunks of `segments.Columns` (records of one __consumer_offsets partition)."""
    out: list[dict[str, Any]] = []
    for c in columns:
        for i in range(len(c)):
            out.append(
                decode_row(
                    partition,
                    c.offset[i],
                    c.timestamp[i],
                    c.key[i],
                    c.value[i],
                    producer_id=c.producer_id[i],
                    is_transactional=c.is_transactional[i],
                    is_control=c.is_control[i],
                )
            )
            if len(out) >= rows:
                yield to_record_batch(out)
                out = []
    if out:
        yield to_record_batch(out)
