"""AlterPartitionReassignments (key 45): move partitions to other replicas (KIP-455).

Spec: AlterPartitionReassignmentsRequest.json / AlterPartitionReassignmentsResponse.json.
Versions 0-1, flexible from 0.

Version notes:
  v0: per partition the target replicas, or null to cancel a reassignment in progress.
  v1: allow_replication_factor_change (KIP-860), echoed in the response.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int16, Int32, Message, String, Struct, wire


class ReassignablePartition(Struct):
    partition_index: int = wire(Int32)
    replicas: list[int] | None = wire(Array(Int32), nullable=True, default=None)


class ReassignableTopic(Struct):
    name: str = wire(String)
    partitions: list[ReassignablePartition] = wire(Array(ReassignablePartition))


class AlterPartitionReassignmentsRequest(Message):
    API_KEY = 45
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 0
    timeout_ms: int = wire(Int32, default=60000)
    allow_replication_factor_change: bool = wire(Bool, since=1, default=True)
    topics: list[ReassignableTopic] = wire(Array(ReassignableTopic))


class ReassignablePartitionResponse(Struct):
    partition_index: int = wire(Int32)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)


class ReassignableTopicResponse(Struct):
    name: str = wire(String)
    partitions: list[ReassignablePartitionResponse] = wire(Array(ReassignablePartitionResponse))


class AlterPartitionReassignmentsResponse(Message):
    API_KEY = 45
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    allow_replication_factor_change: bool = wire(Bool, since=1, default=True)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)
    responses: list[ReassignableTopicResponse] = wire(Array(ReassignableTopicResponse))


def error_response(
    request: AlterPartitionReassignmentsRequest, code: ErrorCode, version: int
) -> AlterPartitionReassignmentsResponse:
    """The code at the top level and on every requested partition (Kafka's
    AlterPartitionReassignmentsRequest.getErrorResponse)."""
    return AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=code,
        responses=[
            ReassignableTopicResponse(
                name=t.name,
                partitions=[
                    ReassignablePartitionResponse(
                        partition_index=p.partition_index, error_code=code
                    )
                    for p in t.partitions
                ],
            )
            for t in request.topics
        ],
    )
