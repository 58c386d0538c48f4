"""ListPartitionReassignments (key 46): the reassignments in progress (KIP-455).

Spec: ListPartitionReassignmentsRequest.json / ListPartitionReassignmentsResponse.json.
Version 0, flexible from 0.

Version notes:
  v0: topics to look at, or null for every topic; per partition in progress its replicas,
      and those being added and removed.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Message, String, Struct, wire


class ListPartitionReassignmentsTopics(Struct):
    name: str = wire(String)
    partition_indexes: list[int] = wire(Array(Int32))


class ListPartitionReassignmentsRequest(Message):
    API_KEY = 46
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    timeout_ms: int = wire(Int32, default=60000)
    topics: list[ListPartitionReassignmentsTopics] | None = wire(
        Array(ListPartitionReassignmentsTopics), nullable=True, default=None
    )


class OngoingPartitionReassignment(Struct):
    partition_index: int = wire(Int32)
    replicas: list[int] = wire(Array(Int32))
    adding_replicas: list[int] = wire(Array(Int32))
    removing_replicas: list[int] = wire(Array(Int32))


class OngoingTopicReassignment(Struct):
    name: str = wire(String)
    partitions: list[OngoingPartitionReassignment] = wire(Array(OngoingPartitionReassignment))


class ListPartitionReassignmentsResponse(Message):
    API_KEY = 46
    VERSIONS = range(0, 1)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)
    topics: list[OngoingTopicReassignment] = wire(Array(OngoingTopicReassignment))


def error_response(
    request: ListPartitionReassignmentsRequest, code: ErrorCode, version: int
) -> ListPartitionReassignmentsResponse:
    """The code at the top level (Kafka's ListPartitionReassignmentsRequest.getErrorResponse)."""
    return ListPartitionReassignmentsResponse(error_code=code)
