"""Fetch (key 1): read record batches from partitions; also fetch sessions (KIP-227).

Spec: FetchRequest.json / FetchResponse.json. Versions 0-18, flexible from 12.

Versions 0-3 are answered in message formats v0 (Fetch v0-1) and v1 (v2-3), converted down
from the log's RecordBatch v2 by broker.handlers.fetch (protocol.legacy_records); a Kafka
release from 4.0 refuses them (protocol.releases). `records` stays opaque: a log slice
handed over as bytes or a memoryview and written without a copy.

Version notes:
  v1: throttle_time_ms in the response.
  v2: message format v1 (timestamps) in the response.
  v3: max_bytes.
  v4: isolation_level; last_stable_offset and aborted_transactions in the response.
  v5: log_start_offset.
  v7: incremental fetch sessions: session_id, session_epoch, forgotten_topics_data, and a
      top-level error_code in the response.
  v9: current_leader_epoch (KIP-320).
  v10: zstd-compressed batches allowed (KIP-110).
  v11: rack_id and preferred_read_replica (KIP-392).
  v12: flexible; last_fetched_epoch; cluster_id (tag 0) in the request; diverging_epoch,
       current_leader and snapshot_id (tags 0-2 per partition) in the response.
  v13: topic_id replaces the topic name (KIP-516).
  v14: OFFSET_MOVED_TO_TIERED_STORAGE may be returned (KIP-405).
  v15: replica_state (tag 1) replaces replica_id (KIP-903).
  v16: node_endpoints (tag 0) in the response (KIP-951).
  v17: replica_directory_id (tag 0 per partition, KIP-853), for followers.
  v18: high_watermark (tag 1 per partition, KIP-1166), for followers.
"""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from protocol.schema import (
    Array,
    Int8,
    Int16,
    Int32,
    Int64,
    Message,
    Records,
    String,
    Struct,
    Uuid,
    wire,
)


class ReplicaState(Struct):
    replica_id: int = wire(Int32, since=15, default=-1)
    replica_epoch: int = wire(Int64, since=15, default=-1)


class FetchPartition(Struct):
    partition: int = wire(Int32)
    current_leader_epoch: int = wire(Int32, since=9, default=-1)
    fetch_offset: int = wire(Int64)
    last_fetched_epoch: int = wire(Int32, since=12, default=-1)
    log_start_offset: int = wire(Int64, since=5, default=-1)
    partition_max_bytes: int = wire(Int32)
    replica_directory_id: uuid.UUID = wire(Uuid, since=17, tag=0)
    high_watermark: int = wire(Int64, since=18, tag=1, default=2**63 - 1)


class FetchTopic(Struct):
    topic: str = wire(String, until=12)
    topic_id: uuid.UUID = wire(Uuid, since=13)
    partitions: list[FetchPartition] = wire(Array(FetchPartition))


class ForgottenTopic(Struct):
    topic: str = wire(String, since=7, until=12)
    topic_id: uuid.UUID = wire(Uuid, since=13)
    partitions: list[int] = wire(Array(Int32), since=7)


class FetchRequest(Message):
    API_KEY = 1
    VERSIONS = range(0, 19)
    FLEXIBLE_FROM = 12
    cluster_id: str | None = wire(String, since=12, nullable=12, tag=0, default=None)
    replica_id: int = wire(Int32, until=14, default=-1)
    replica_state: ReplicaState = wire(ReplicaState, since=15, tag=1)
    max_wait_ms: int = wire(Int32)
    min_bytes: int = wire(Int32)
    max_bytes: int = wire(Int32, since=3, default=0x7FFFFFFF)
    isolation_level: int = wire(Int8, since=4)
    session_id: int = wire(Int32, since=7)
    session_epoch: int = wire(Int32, since=7, default=-1)
    topics: list[FetchTopic] = wire(Array(FetchTopic))
    forgotten_topics_data: list[ForgottenTopic] = wire(Array(ForgottenTopic), since=7)
    rack_id: str = wire(String, since=11)


class EpochEndOffset(Struct):
    epoch: int = wire(Int32, since=12, default=-1)
    end_offset: int = wire(Int64, since=12, default=-1)


class LeaderIdAndEpoch(Struct):
    leader_id: int = wire(Int32, since=12, default=-1)
    leader_epoch: int = wire(Int32, since=12, default=-1)


class SnapshotId(Struct):
    end_offset: int = wire(Int64, default=-1)
    epoch: int = wire(Int32, default=-1)


class AbortedTransaction(Struct):
    producer_id: int = wire(Int64, since=4)
    first_offset: int = wire(Int64, since=4)


class PartitionData(Struct):
    partition_index: int = wire(Int32)
    error_code: int = wire(Int16)
    high_watermark: int = wire(Int64)
    last_stable_offset: int = wire(Int64, since=4, default=-1)
    log_start_offset: int = wire(Int64, since=5, default=-1)
    diverging_epoch: EpochEndOffset = wire(EpochEndOffset, since=12, tag=0)
    current_leader: LeaderIdAndEpoch = wire(LeaderIdAndEpoch, since=12, tag=1)
    snapshot_id: SnapshotId = wire(SnapshotId, since=12, tag=2)
    aborted_transactions: list[AbortedTransaction] | None = wire(
        Array(AbortedTransaction), since=4, nullable=4
    )
    preferred_read_replica: int = wire(Int32, since=11, default=-1)
    # Never null in an answer: Kafka sends MemoryRecords.EMPTY for a partition in error.
    records: bytes | memoryview | None = wire(Records, nullable=True, default=b"")


class FetchableTopicResponse(Struct):
    topic: str = wire(String, until=12)
    topic_id: uuid.UUID = wire(Uuid, since=13)
    partitions: list[PartitionData] = wire(Array(PartitionData))


class NodeEndpoint(Struct):
    node_id: int = wire(Int32, since=16)
    host: str = wire(String, since=16)
    port: int = wire(Int32, since=16)
    rack: str | None = wire(String, since=16, nullable=16, default=None)


class FetchResponse(Message):
    API_KEY = 1
    VERSIONS = range(0, 19)
    FLEXIBLE_FROM = 12
    throttle_time_ms: int = wire(Int32, since=1)
    error_code: int = wire(Int16, since=7)
    session_id: int = wire(Int32, since=7)
    responses: list[FetchableTopicResponse] = wire(Array(FetchableTopicResponse))
    node_endpoints: list[NodeEndpoint] = wire(Array(NodeEndpoint), since=16, tag=0)


def error_response(request: FetchRequest, code: ErrorCode, version: int) -> FetchResponse:
    """The top-level code, plus below v13 the code on every requested partition.

    As Kafka's FetchRequest.getErrorResponse: before v13 the code is also set on every
    partition (high watermark -1), for clients older than the top-level code (v7); from v13
    the response carries no partitions.
    """
    return FetchResponse(
        error_code=code,
        session_id=request.session_id,
        responses=[
            FetchableTopicResponse(
                topic=topic.topic,
                topic_id=topic.topic_id,
                partitions=[
                    PartitionData(
                        partition_index=partition.partition, error_code=code, high_watermark=-1
                    )
                    for partition in topic.partitions
                ],
            )
            for topic in request.topics
        ]
        if version < 13
        else [],
    )
