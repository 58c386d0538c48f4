"""DeleteRecords (key 21): move the log start offset of partitions forward.

Spec: DeleteRecordsRequest.json / DeleteRecordsResponse.json. Versions 0-2, flexible from 2.

Version notes:
  v1: no change on the wire (responses are sent before throttling).
  v2: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Int64, Message, String, Struct, wire


class DeleteRecordsPartition(Struct):
    partition_index: int = wire(Int32)
    offset: int = wire(Int64)


class DeleteRecordsTopic(Struct):
    name: str = wire(String)
    partitions: list[DeleteRecordsPartition] = wire(Array(DeleteRecordsPartition))


class DeleteRecordsRequest(Message):
    API_KEY = 21
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    topics: list[DeleteRecordsTopic] = wire(Array(DeleteRecordsTopic))
    timeout_ms: int = wire(Int32)


class DeleteRecordsPartitionResult(Struct):
    partition_index: int = wire(Int32)
    low_watermark: int = wire(Int64)
    error_code: int = wire(Int16)


class DeleteRecordsTopicResult(Struct):
    name: str = wire(String)
    partitions: list[DeleteRecordsPartitionResult] = wire(Array(DeleteRecordsPartitionResult))


class DeleteRecordsResponse(Message):
    API_KEY = 21
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    topics: list[DeleteRecordsTopicResult] = wire(Array(DeleteRecordsTopicResult))


def error_response(
    request: DeleteRecordsRequest, code: ErrorCode, version: int
) -> DeleteRecordsResponse:
    """The code on every requested partition, low_watermark -1, at every version.

    As Kafka's DeleteRecordsRequest.getErrorResponse.
    """
    return DeleteRecordsResponse(
        topics=[
            DeleteRecordsTopicResult(
                name=topic.name,
                partitions=[
                    DeleteRecordsPartitionResult(
                        partition_index=partition.partition_index,
                        low_watermark=-1,
                        error_code=code,
                    )
                    for partition in topic.partitions
                ],
            )
            for topic in request.topics
        ]
    )
