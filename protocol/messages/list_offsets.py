"""ListOffsets (key 2): the offset for a timestamp, or the earliest/latest offset.

Spec: ListOffsetsRequest.json / ListOffsetsResponse.json. Versions 1-10, flexible from 6.

Version notes:
  v0 (declared, not served): max_num_offsets and old_style_offsets, several offsets each.
  v1: one offset per partition, with its timestamp.
  v2: isolation_level; throttle_time_ms.
  v4: current_leader_epoch in the request, leader_epoch in the response.
  v5: OFFSET_NOT_AVAILABLE may be returned.
  v6: flexible.
  v7: timestamp -3 asks for the offset of the largest timestamp (KIP-734).
  v8: timestamp -4 asks for the local log start offset (KIP-405).
  v9: timestamp -5 asks for the last tiered offset (KIP-1005).
  v10: timeout_ms, for a remote-storage lookup (KIP-1075).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int8, Int16, Int32, Int64, Message, String, Struct, wire


class ListOffsetsPartition(Struct):
    partition_index: int = wire(Int32)
    current_leader_epoch: int = wire(Int32, since=4, default=-1)
    timestamp: int = wire(Int64)
    max_num_offsets: int = wire(Int32, until=0, default=1)


class ListOffsetsTopic(Struct):
    name: str = wire(String)
    partitions: list[ListOffsetsPartition] = wire(Array(ListOffsetsPartition))


class ListOffsetsRequest(Message):
    API_KEY = 2
    VERSIONS = range(1, 11)
    FLEXIBLE_FROM = 6
    replica_id: int = wire(Int32)
    isolation_level: int = wire(Int8, since=2)
    topics: list[ListOffsetsTopic] = wire(Array(ListOffsetsTopic))
    timeout_ms: int = wire(Int32, since=10)


class ListOffsetsPartitionResponse(Struct):
    partition_index: int = wire(Int32)
    error_code: int = wire(Int16)
    old_style_offsets: list[int] = wire(Array(Int64), until=0)
    timestamp: int = wire(Int64, since=1, default=-1)
    offset: int = wire(Int64, since=1, default=-1)
    leader_epoch: int = wire(Int32, since=4, default=-1)


class ListOffsetsTopicResponse(Struct):
    name: str = wire(String)
    partitions: list[ListOffsetsPartitionResponse] = wire(Array(ListOffsetsPartitionResponse))


class ListOffsetsResponse(Message):
    API_KEY = 2
    VERSIONS = range(1, 11)
    FLEXIBLE_FROM = 6
    throttle_time_ms: int = wire(Int32, since=2)
    topics: list[ListOffsetsTopicResponse] = wire(Array(ListOffsetsTopicResponse))


def error_response(
    request: ListOffsetsRequest, code: ErrorCode, version: int
) -> ListOffsetsResponse:
    """The code on every requested partition, offset and timestamp -1.

    As Kafka's ListOffsetsRequest.getErrorResponse for v1+; its v0 branch (empty
    old_style_offsets) is for a version we do not serve.
    """
    return ListOffsetsResponse(
        topics=[
            ListOffsetsTopicResponse(
                name=topic.name,
                partitions=[
                    ListOffsetsPartitionResponse(
                        partition_index=partition.partition_index, error_code=code
                    )
                    for partition in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )
