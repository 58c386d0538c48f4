"""DeleteTopics (key 20): delete topics by name, or from v6 by id.

Spec: DeleteTopicsRequest.json / DeleteTopicsResponse.json. Versions 1-6, flexible from 4.

Version notes:
  v1: throttle_time_ms.
  v3: TOPIC_DELETION_DISABLED may be returned.
  v4: flexible.
  v5: error_message per topic; THROTTLING_QUOTA_EXCEEDED may be returned (KIP-599).
  v6: `topics` (name or topic_id) replaces `topic_names`; names may be null (KIP-516).
"""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Message, String, Struct, Uuid, wire


class DeleteTopicState(Struct):
    name: str | None = wire(String, since=6, nullable=6, default=None)
    topic_id: uuid.UUID = wire(Uuid, since=6)


class DeleteTopicsRequest(Message):
    API_KEY = 20
    VERSIONS = range(1, 7)
    FLEXIBLE_FROM = 4
    topics: list[DeleteTopicState] = wire(Array(DeleteTopicState), since=6)
    topic_names: list[str] = wire(Array(String), until=5)
    timeout_ms: int = wire(Int32)


class DeletableTopicResult(Struct):
    name: str | None = wire(String, nullable=6)
    topic_id: uuid.UUID = wire(Uuid, since=6)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, since=5, nullable=5, default=None)


class DeleteTopicsResponse(Message):
    API_KEY = 20
    VERSIONS = range(1, 7)
    FLEXIBLE_FROM = 4
    throttle_time_ms: int = wire(Int32, since=1)
    responses: list[DeletableTopicResult] = wire(Array(DeletableTopicResult))


def error_response(
    request: DeleteTopicsRequest, code: ErrorCode, version: int
) -> DeleteTopicsResponse:
    """The code on every requested topic (Kafka's DeleteTopicsRequest.getErrorResponse).

    The topics are `topics` (name and topic_id) from v6 and `topic_names` below, as in
    Kafka's DeleteTopicsRequest.topics().
    """
    if version >= 6:
        return DeleteTopicsResponse(
            responses=[
                DeletableTopicResult(name=topic.name, topic_id=topic.topic_id, error_code=code)
                for topic in request.topics
            ]
        )
    return DeleteTopicsResponse(
        responses=[DeletableTopicResult(name=name, error_code=code) for name in request.topic_names]
    )
