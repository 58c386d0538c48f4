"""CreatePartitions (key 37): raise the partition count of existing topics.

Spec: CreatePartitionsRequest.json / CreatePartitionsResponse.json. Versions 0-3, flexible
from 2.

Version notes:
  v1: no change on the wire (responses are sent before throttling).
  v2: flexible.
  v3: THROTTLING_QUOTA_EXCEEDED may be returned (KIP-599).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int16, Int32, Message, String, Struct, wire


class CreatePartitionsAssignment(Struct):
    broker_ids: list[int] = wire(Array(Int32))


class CreatePartitionsTopic(Struct):
    name: str = wire(String)
    count: int = wire(Int32)
    assignments: list[CreatePartitionsAssignment] | None = wire(
        Array(CreatePartitionsAssignment), nullable=True
    )


class CreatePartitionsRequest(Message):
    API_KEY = 37
    VERSIONS = range(0, 4)
    FLEXIBLE_FROM = 2
    topics: list[CreatePartitionsTopic] = wire(Array(CreatePartitionsTopic))
    timeout_ms: int = wire(Int32)
    validate_only: bool = wire(Bool)


class CreatePartitionsTopicResult(Struct):
    name: str = wire(String)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)


class CreatePartitionsResponse(Message):
    API_KEY = 37
    VERSIONS = range(0, 4)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    results: list[CreatePartitionsTopicResult] = wire(Array(CreatePartitionsTopicResult))


def error_response(
    request: CreatePartitionsRequest, code: ErrorCode, version: int
) -> CreatePartitionsResponse:
    """The code on every requested topic (Kafka's CreatePartitionsRequest.getErrorResponse).

    The same at every version. Kafka may also send the exception's own message
    (ApiError.fromThrowable); we send null.
    """
    return CreatePartitionsResponse(
        results=[
            CreatePartitionsTopicResult(name=topic.name, error_code=code)
            for topic in request.topics
        ]
    )
