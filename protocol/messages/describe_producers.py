"""DescribeProducers (key 61): the active producers of each partition (KIP-664).

Spec: DescribeProducersRequest.json / DescribeProducersResponse.json. Version 0, flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Int64, Message, String, Struct, wire


class TopicRequest(Struct):
    name: str = wire(String)
    partition_indexes: list[int] = wire(Array(Int32))


class DescribeProducersRequest(Message):
    API_KEY = 61
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    topics: list[TopicRequest] = wire(Array(TopicRequest))


class ProducerState(Struct):
    producer_id: int = wire(Int64)
    producer_epoch: int = wire(Int32)
    last_sequence: int = wire(Int32, default=-1)
    last_timestamp: int = wire(Int64, default=-1)
    coordinator_epoch: int = wire(Int32)
    current_txn_start_offset: int = wire(Int64, default=-1)


class PartitionResponse(Struct):
    partition_index: int = wire(Int32)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=0, default=None)
    active_producers: list[ProducerState] = wire(Array(ProducerState))


class TopicResponse(Struct):
    name: str = wire(String)
    partitions: list[PartitionResponse] = wire(Array(PartitionResponse))


class DescribeProducersResponse(Message):
    API_KEY = 61
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    topics: list[TopicResponse] = wire(Array(TopicResponse))


def error_response(
    request: DescribeProducersRequest, code: ErrorCode, version: int
) -> DescribeProducersResponse:
    """The code on every requested partition, with no producers (Kafka's
    DescribeProducersRequest.getErrorResponse; its message is the code's description, which
    we do not have, so it stays null)."""
    return DescribeProducersResponse(
        topics=[
            TopicResponse(
                name=topic.name,
                partitions=[
                    PartitionResponse(partition_index=p, error_code=code)
                    for p in topic.partition_indexes
                ],
            )
            for topic in request.topics
        ]
    )
