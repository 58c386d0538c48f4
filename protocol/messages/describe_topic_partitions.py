"""DescribeTopicPartitions (key 75): topics and their partitions, a page at a time (KIP-966).

Spec: DescribeTopicPartitionsRequest.json / DescribeTopicPartitionsResponse.json. Version 0,
flexible from 0. The admin client's describeTopics uses it from Kafka 3.8 on.

Version notes:
  v0: topics (empty: every topic), response_partition_limit, a nullable cursor to resume
      from; per partition the eligible (ELR) and last known leader replicas; next_cursor.
"""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from protocol.messages import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import Array, Bool, Int16, Int32, Message, String, Struct, Uuid, wire


class TopicRequest(Struct):
    name: str = wire(String)


class Cursor(Struct):
    topic_name: str = wire(String)
    partition_index: int = wire(Int32)


class DescribeTopicPartitionsRequest(Message):
    API_KEY = 75
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    topics: list[TopicRequest] = wire(Array(TopicRequest))
    response_partition_limit: int = wire(Int32, default=2000)
    cursor: Cursor | None = wire(Cursor, nullable=True)


class DescribeTopicPartitionsResponsePartition(Struct):
    error_code: int = wire(Int16)
    partition_index: int = wire(Int32)
    leader_id: int = wire(Int32)
    leader_epoch: int = wire(Int32, default=-1)
    replica_nodes: list[int] = wire(Array(Int32))
    isr_nodes: list[int] = wire(Array(Int32))
    eligible_leader_replicas: list[int] | None = wire(Array(Int32), nullable=True)
    last_known_elr: list[int] | None = wire(Array(Int32), nullable=True)
    offline_replicas: list[int] = wire(Array(Int32))


class DescribeTopicPartitionsResponseTopic(Struct):
    error_code: int = wire(Int16)
    name: str | None = wire(String, nullable=True)
    topic_id: uuid.UUID = wire(Uuid)
    is_internal: bool = wire(Bool)
    partitions: list[DescribeTopicPartitionsResponsePartition] = wire(
        Array(DescribeTopicPartitionsResponsePartition)
    )
    topic_authorized_operations: int = wire(Int32, default=AUTHORIZED_OPERATIONS_OMITTED)


class DescribeTopicPartitionsResponse(Message):
    API_KEY = 75
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    topics: list[DescribeTopicPartitionsResponseTopic] = wire(
        Array(DescribeTopicPartitionsResponseTopic)
    )
    next_cursor: Cursor | None = wire(Cursor, nullable=True)


def error_response(
    request: DescribeTopicPartitionsRequest, code: ErrorCode, version: int
) -> DescribeTopicPartitionsResponse:
    """The code on every requested topic (Kafka's DescribeTopicPartitionsRequest
    .getErrorResponse); a request for every topic gets an empty answer."""
    return DescribeTopicPartitionsResponse(
        topics=[
            DescribeTopicPartitionsResponseTopic(error_code=code, name=t.name)
            for t in request.topics
        ]
    )
