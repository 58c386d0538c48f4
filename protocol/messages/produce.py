"""Produce (key 0): append record batches to partitions.

Spec: ProduceRequest.json / ProduceResponse.json. Versions 0-13, flexible from 9.

Versions 0-2 carry message sets in formats v0/v1 (protocol.legacy_records), converted to
RecordBatch v2 on append as a Kafka 3.x broker converts them; a Kafka release from 4.0
refuses them (protocol.releases). From v3 on a request carries only RecordBatch v2 (message
format v2), exactly one batch per partition. `records` stays
opaque: it decodes as a zero-copy memoryview of the frame and encodes from bytes or a
memoryview without a copy (protocol.records reads the batch header).

Version notes:
  v1: throttle_time_ms in the response.
  v2: log_append_time_ms in the response; message format v1 (timestamps).
  v3: transactional_id; RecordBatch v2 only.
  v4: KAFKA_STORAGE_ERROR may be returned.
  v5: log_start_offset in the response.
  v7: zstd-compressed batches allowed (KIP-110).
  v8: record_errors and error_message in the response (KIP-467).
  v9: flexible.
  v10: current_leader (tag 0 per partition) and node_endpoints (tag 0 at the top) (KIP-951).
  v11: TRANSACTION_ABORTABLE may be returned (KIP-890).
  v12: no change on the wire (KIP-890 transactions v2).
  v13: topic_id replaces the topic name (KIP-516); UNKNOWN_TOPIC_ID may be returned.
"""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from protocol.schema import (
    Array,
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


class PartitionProduceData(Struct):
    index: int = wire(Int32)
    records: bytes | memoryview | None = wire(Records, nullable=True)


class TopicProduceData(Struct):
    name: str = wire(String, until=12)
    topic_id: uuid.UUID = wire(Uuid, since=13)
    partition_data: list[PartitionProduceData] = wire(Array(PartitionProduceData))


class ProduceRequest(Message):
    API_KEY = 0
    VERSIONS = range(0, 14)
    FLEXIBLE_FROM = 9
    transactional_id: str | None = wire(String, since=3, nullable=3, default=None)
    acks: int = wire(Int16)
    timeout_ms: int = wire(Int32)
    topic_data: list[TopicProduceData] = wire(Array(TopicProduceData))


class BatchIndexAndErrorMessage(Struct):
    batch_index: int = wire(Int32, since=8)
    batch_index_error_message: str | None = wire(String, since=8, nullable=8, default=None)


class LeaderIdAndEpoch(Struct):
    leader_id: int = wire(Int32, since=10, default=-1)
    leader_epoch: int = wire(Int32, since=10, default=-1)


class PartitionProduceResponse(Struct):
    index: int = wire(Int32)
    error_code: int = wire(Int16)
    base_offset: int = wire(Int64)
    log_append_time_ms: int = wire(Int64, since=2, default=-1)
    log_start_offset: int = wire(Int64, since=5, default=-1)
    record_errors: list[BatchIndexAndErrorMessage] = wire(Array(BatchIndexAndErrorMessage), since=8)
    error_message: str | None = wire(String, since=8, nullable=8, default=None)
    current_leader: LeaderIdAndEpoch = wire(LeaderIdAndEpoch, since=10, tag=0)


class TopicProduceResponse(Struct):
    name: str = wire(String, until=12)
    topic_id: uuid.UUID = wire(Uuid, since=13)
    partition_responses: list[PartitionProduceResponse] = wire(Array(PartitionProduceResponse))


class NodeEndpoint(Struct):
    node_id: int = wire(Int32, since=10)
    host: str = wire(String, since=10)
    port: int = wire(Int32, since=10)
    rack: str | None = wire(String, since=10, nullable=10, default=None)


class ProduceResponse(Message):
    API_KEY = 0
    VERSIONS = range(0, 14)
    FLEXIBLE_FROM = 9
    responses: list[TopicProduceResponse] = wire(Array(TopicProduceResponse))
    throttle_time_ms: int = wire(Int32, since=1)
    node_endpoints: list[NodeEndpoint] = wire(Array(NodeEndpoint), since=10, tag=0)


def error_response(request: ProduceRequest, code: ErrorCode, version: int) -> ProduceResponse:
    """The code on every requested partition, base_offset -1, at every version.

    As Kafka's ProduceRequest.getErrorResponse, which may also send the exception's own
    message (ApiError.fromThrowable; we send null). Kafka answers nothing at all when acks=0;
    that is the broker's decision (it sends no response to acks=0), so this always builds one.
    """
    return ProduceResponse(
        responses=[
            TopicProduceResponse(
                name=topic.name,
                topic_id=topic.topic_id,
                partition_responses=[
                    PartitionProduceResponse(index=partition.index, error_code=code, base_offset=-1)
                    for partition in topic.partition_data
                ],
            )
            for topic in request.topic_data
        ]
    )
