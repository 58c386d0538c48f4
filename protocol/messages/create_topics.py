"""CreateTopics (key 19): create topics, optionally with explicit assignments and configs.

Spec: CreateTopicsRequest.json / CreateTopicsResponse.json. Versions 2-7, flexible from 5.

Version notes:
  v1: validate_only; error_message per topic.
  v2: throttle_time_ms.
  v4: num_partitions and replication_factor may be -1 (broker defaults) (KIP-464).
  v5: flexible; the response returns num_partitions, replication_factor and configs, and
      topic_config_error_code (tag 0) (KIP-525).
  v6: THROTTLING_QUOTA_EXCEEDED may be returned (KIP-599).
  v7: topic_id in the response.
"""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int8, Int16, Int32, Message, String, Struct, Uuid, wire


class CreatableReplicaAssignment(Struct):
    partition_index: int = wire(Int32)
    broker_ids: list[int] = wire(Array(Int32))


class CreatableTopicConfig(Struct):
    name: str = wire(String)
    value: str | None = wire(String, nullable=True)


class CreatableTopic(Struct):
    name: str = wire(String)
    num_partitions: int = wire(Int32)
    replication_factor: int = wire(Int16)
    assignments: list[CreatableReplicaAssignment] = wire(Array(CreatableReplicaAssignment))
    configs: list[CreatableTopicConfig] = wire(Array(CreatableTopicConfig))


class CreateTopicsRequest(Message):
    API_KEY = 19
    VERSIONS = range(2, 8)
    FLEXIBLE_FROM = 5
    topics: list[CreatableTopic] = wire(Array(CreatableTopic))
    timeout_ms: int = wire(Int32, default=60000)
    validate_only: bool = wire(Bool, since=1)


class CreatableTopicConfigs(Struct):
    name: str = wire(String, since=5)
    value: str | None = wire(String, since=5, nullable=5)
    read_only: bool = wire(Bool, since=5)
    config_source: int = wire(Int8, since=5, default=-1)
    is_sensitive: bool = wire(Bool, since=5)


class CreatableTopicResult(Struct):
    name: str = wire(String)
    topic_id: uuid.UUID = wire(Uuid, since=7)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, since=1, nullable=True)
    topic_config_error_code: int = wire(Int16, since=5, tag=0)
    num_partitions: int = wire(Int32, since=5, default=-1)
    replication_factor: int = wire(Int16, since=5, default=-1)
    configs: list[CreatableTopicConfigs] | None = wire(
        Array(CreatableTopicConfigs), since=5, nullable=5
    )


class CreateTopicsResponse(Message):
    API_KEY = 19
    VERSIONS = range(2, 8)
    FLEXIBLE_FROM = 5
    throttle_time_ms: int = wire(Int32, since=2)
    topics: list[CreatableTopicResult] = wire(Array(CreatableTopicResult))


def error_response(
    request: CreateTopicsRequest, code: ErrorCode, version: int
) -> CreateTopicsResponse:
    """The code on every requested topic (Kafka's CreateTopicsRequest.getErrorResponse).

    The same at every version. Kafka may also send the exception's own message
    (ApiError.fromThrowable); we send null.
    """
    return CreateTopicsResponse(
        topics=[
            CreatableTopicResult(name=topic.name, error_code=code, error_message=None)
            for topic in request.topics
        ]
    )
