"""The consumer protocol: the bytes inside JoinGroup metadata and SyncGroup assignments.

Spec: ConsumerProtocolSubscription.json / ConsumerProtocolAssignment.json. Versions 0-3,
never flexible. They apply when a group's protocol_type is "consumer"; to the coordinator
these bytes are opaque, and only tools (DescribeGroups output, the pipeline) look inside.

    subscription = version:int16 ConsumerProtocolSubscription(version)
    assignment   = version:int16 ConsumerProtocolAssignment(version)

Forward compatibility, as Kafka's ConsumerProtocol: later versions may only append fields,
so bytes of a version above 3 are decoded with version 3 and whatever follows is ignored.
A negative version is an error. For versions we know, bytes left over are an error (Kafka
ignores them at every version; we are stricter where nothing can legitimately follow).

Version notes:
  Subscription v1: owned_partitions (KIP-429); v2: generation_id; v3: rack_id (KIP-881).
  Assignment   v1-3: no change on the wire (bumped alongside the subscription).

Both JSON files declare a nested `TopicPartition` (topic + partitions). The two are the same
on the wire (the subscription's is "1+" only because owned_partitions is), so one class
serves both.
"""

from __future__ import annotations

from typing import ClassVar

from protocol.schema import (
    Array,
    Bytes,
    Int32,
    String,
    Struct,
    decode_versioned,
    encode_versioned,
    wire,
)

__all__ = [
    "ConsumerProtocolAssignment",
    "ConsumerProtocolSubscription",
    "TopicPartition",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]


class TopicPartition(Struct):
    topic: str = wire(String)
    partitions: list[int] = wire(Array(Int32))


class ConsumerProtocolSubscription(Struct):
    VERSIONS: ClassVar[range] = range(0, 4)
    topics: list[str] = wire(Array(String))
    user_data: bytes | None = wire(Bytes, nullable=0, default=None)
    owned_partitions: list[TopicPartition] = wire(Array(TopicPartition), since=1)
    generation_id: int = wire(Int32, since=2, default=-1)
    rack_id: str | None = wire(String, since=3, nullable=3, default=None)


class ConsumerProtocolAssignment(Struct):
    VERSIONS: ClassVar[range] = range(0, 4)
    assigned_partitions: list[TopicPartition] = wire(Array(TopicPartition))
    user_data: bytes | None = wire(Bytes, nullable=0, default=None)


def decode_subscription(data: bytes | memoryview) -> ConsumerProtocolSubscription:
    """Decode JoinGroup protocol metadata of a "consumer" group.

    Raises:
      DecodeError: the bytes are short, invalid, or (for versions 0-3) have bytes left over.
    """
    return decode_versioned(ConsumerProtocolSubscription, data)  # type: ignore[no-any-return]


def decode_assignment(data: bytes | memoryview) -> ConsumerProtocolAssignment:
    """Decode a SyncGroup assignment of a "consumer" group (same rules as subscriptions)."""
    return decode_versioned(ConsumerProtocolAssignment, data)  # type: ignore[no-any-return]


def encode_subscription(sub: ConsumerProtocolSubscription, version: int) -> bytes:
    return encode_versioned(sub, version)


def encode_assignment(a: ConsumerProtocolAssignment, version: int) -> bytes:
    return encode_versioned(a, version)
