"""OffsetCommit (key 8): a member stores its group's consumed offsets.

Spec: OffsetCommitRequest.json / OffsetCommitResponse.json. Versions 1-9 (the spec has 0-9;
0 wrote to ZooKeeper and 1 is deprecated), flexible from 8.

Version notes:
  v1: generation_id_or_member_epoch, member_id; commit_timestamp (v1 only; sarama 1.22
      still commits with v1).
  v2: retention_time_ms (v2-4); commit_timestamp removed.
  v3: throttle_time_ms in the response.
  v4: no change on the wire.
  v5: retention_time_ms removed: retention is the broker's offsets.retention.minutes.
  v6: committed_leader_epoch.
  v7: group_instance_id (KIP-345).
  v8: flexible.
  v9: no change on the wire; usable by KIP-848 groups (STALE_MEMBER_EPOCH, GROUP_ID_NOT_FOUND).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Int64, Message, String, Struct, wire

if TYPE_CHECKING:
    from protocol.messages.txn_offset_commit import TxnOffsetCommitRequestTopic


class OffsetCommitRequestPartition(Struct):
    partition_index: int = wire(Int32)
    committed_offset: int = wire(Int64)
    committed_leader_epoch: int = wire(Int32, since=6, default=-1)
    commit_timestamp: int = wire(Int64, since=1, until=1, default=-1)
    committed_metadata: str | None = wire(String, nullable=0)


class OffsetCommitRequestTopic(Struct):
    name: str = wire(String)
    partitions: list[OffsetCommitRequestPartition] = wire(Array(OffsetCommitRequestPartition))


class OffsetCommitRequest(Message):
    API_KEY = 8
    VERSIONS = range(1, 10)
    FLEXIBLE_FROM = 8
    group_id: str = wire(String)
    generation_id_or_member_epoch: int = wire(Int32, since=1, default=-1)
    member_id: str = wire(String, since=1)
    group_instance_id: str | None = wire(String, since=7, nullable=7, default=None)
    retention_time_ms: int = wire(Int64, since=2, until=4, default=-1)
    topics: list[OffsetCommitRequestTopic] = wire(Array(OffsetCommitRequestTopic))


class OffsetCommitResponsePartition(Struct):
    partition_index: int = wire(Int32)
    error_code: int = wire(Int16)


class OffsetCommitResponseTopic(Struct):
    name: str = wire(String)
    partitions: list[OffsetCommitResponsePartition] = wire(Array(OffsetCommitResponsePartition))


class OffsetCommitResponse(Message):
    API_KEY = 8
    VERSIONS = range(1, 10)
    FLEXIBLE_FROM = 8
    throttle_time_ms: int = wire(Int32, since=3)
    topics: list[OffsetCommitResponseTopic] = wire(Array(OffsetCommitResponseTopic))


def error_response(
    request: OffsetCommitRequest, code: ErrorCode, version: int
) -> OffsetCommitResponse:
    """The code on every partition of every topic in the request (there is no top level).

    The same at every version, as Kafka's OffsetCommitRequest.getErrorResponse.
    """
    return OffsetCommitResponse(topics=partition_errors(request.topics, code))


def partition_errors(
    topics: Sequence[OffsetCommitRequestTopic | TxnOffsetCommitRequestTopic], code: ErrorCode
) -> list[OffsetCommitResponseTopic]:
    """`code` for every partition of `topics`: the answer of an OffsetCommit or a
    TxnOffsetCommit that failed as a whole."""
    return [
        OffsetCommitResponseTopic(
            name=topic.name,
            partitions=[
                OffsetCommitResponsePartition(partition_index=p.partition_index, error_code=code)
                for p in topic.partitions
            ],
        )
        for topic in topics
    ]
