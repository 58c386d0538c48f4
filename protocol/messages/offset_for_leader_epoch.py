"""OffsetForLeaderEpoch (key 23): the end offset of a leader epoch, for log truncation (KIP-101).

Spec: OffsetForLeaderEpochRequest.json / OffsetForLeaderEpochResponse.json. Versions 2-4,
flexible from 4.

Version notes:
  v1: leader_epoch in the response.
  v2: current_leader_epoch in the request (KIP-320); throttle_time_ms.
  v3: replica_id (-2: a debugging consumer, -1: a consumer, >= 0: a follower).
  v4: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Int64, Message, String, Struct, wire


class OffsetForLeaderPartition(Struct):
    partition: int = wire(Int32)
    current_leader_epoch: int = wire(Int32, since=2, default=-1)
    leader_epoch: int = wire(Int32)


class OffsetForLeaderTopic(Struct):
    topic: str = wire(String)
    partitions: list[OffsetForLeaderPartition] = wire(Array(OffsetForLeaderPartition))


class OffsetForLeaderEpochRequest(Message):
    API_KEY = 23
    VERSIONS = range(2, 5)
    FLEXIBLE_FROM = 4
    replica_id: int = wire(Int32, since=3, default=-2)
    topics: list[OffsetForLeaderTopic] = wire(Array(OffsetForLeaderTopic))


class EpochEndOffset(Struct):
    error_code: int = wire(Int16)
    partition: int = wire(Int32)
    leader_epoch: int = wire(Int32, since=1, default=-1)
    end_offset: int = wire(Int64, default=-1)


class OffsetForLeaderTopicResult(Struct):
    topic: str = wire(String)
    partitions: list[EpochEndOffset] = wire(Array(EpochEndOffset))


class OffsetForLeaderEpochResponse(Message):
    API_KEY = 23
    VERSIONS = range(2, 5)
    FLEXIBLE_FROM = 4
    throttle_time_ms: int = wire(Int32, since=2)
    topics: list[OffsetForLeaderTopicResult] = wire(Array(OffsetForLeaderTopicResult))


def error_response(
    request: OffsetForLeaderEpochRequest, code: ErrorCode, version: int
) -> OffsetForLeaderEpochResponse:
    """The code on every requested partition, epoch and offset -1, at every version.

    As Kafka's OffsetsForLeaderEpochRequest.getErrorResponse.
    """
    return OffsetForLeaderEpochResponse(
        topics=[
            OffsetForLeaderTopicResult(
                topic=topic.topic,
                partitions=[
                    EpochEndOffset(error_code=code, partition=partition.partition)
                    for partition in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )
