"""OffsetDelete (key 47): delete a group's committed offsets for some partitions (KIP-496).

Spec: OffsetDeleteRequest.json / OffsetDeleteResponse.json. Version 0 only, never flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Message, String, Struct, wire


class OffsetDeleteRequestPartition(Struct):
    partition_index: int = wire(Int32)


class OffsetDeleteRequestTopic(Struct):
    name: str = wire(String)
    partitions: list[OffsetDeleteRequestPartition] = wire(Array(OffsetDeleteRequestPartition))


class OffsetDeleteRequest(Message):
    API_KEY = 47
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = None
    group_id: str = wire(String)
    topics: list[OffsetDeleteRequestTopic] = wire(Array(OffsetDeleteRequestTopic))


class OffsetDeleteResponsePartition(Struct):
    partition_index: int = wire(Int32)
    error_code: int = wire(Int16)


class OffsetDeleteResponseTopic(Struct):
    name: str = wire(String)
    partitions: list[OffsetDeleteResponsePartition] = wire(Array(OffsetDeleteResponsePartition))


class OffsetDeleteResponse(Message):
    API_KEY = 47
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = None
    error_code: int = wire(Int16)
    throttle_time_ms: int = wire(Int32)
    topics: list[OffsetDeleteResponseTopic] = wire(Array(OffsetDeleteResponseTopic))


def error_response(
    request: OffsetDeleteRequest, code: ErrorCode, version: int
) -> OffsetDeleteResponse:
    """The code at the top level and no topics (Kafka's OffsetDeleteRequest.getErrorResponse)."""
    return OffsetDeleteResponse(error_code=code)
