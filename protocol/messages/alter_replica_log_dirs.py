"""AlterReplicaLogDirs (key 34): move partitions' replicas to another log directory (KIP-113).

Spec: AlterReplicaLogDirsRequest.json / AlterReplicaLogDirsResponse.json. Versions 1-2
(v0 was removed in Kafka 4.0), flexible from 2.

Version notes:
  v1: no change on the wire from v0 (the response is sent before throttling).
  v2: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Message, String, Struct, wire


class AlterReplicaLogDirTopic(Struct):
    name: str = wire(String)
    partitions: list[int] = wire(Array(Int32))


class AlterReplicaLogDir(Struct):
    path: str = wire(String)
    topics: list[AlterReplicaLogDirTopic] = wire(Array(AlterReplicaLogDirTopic))


class AlterReplicaLogDirsRequest(Message):
    API_KEY = 34
    VERSIONS = range(1, 3)
    FLEXIBLE_FROM = 2
    dirs: list[AlterReplicaLogDir] = wire(Array(AlterReplicaLogDir))


class AlterReplicaLogDirPartitionResult(Struct):
    partition_index: int = wire(Int32)
    error_code: int = wire(Int16)


class AlterReplicaLogDirTopicResult(Struct):
    topic_name: str = wire(String)
    partitions: list[AlterReplicaLogDirPartitionResult] = wire(
        Array(AlterReplicaLogDirPartitionResult)
    )


class AlterReplicaLogDirsResponse(Message):
    API_KEY = 34
    VERSIONS = range(1, 3)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    results: list[AlterReplicaLogDirTopicResult] = wire(Array(AlterReplicaLogDirTopicResult))


def error_response(
    request: AlterReplicaLogDirsRequest, code: ErrorCode, version: int
) -> AlterReplicaLogDirsResponse:
    """The code on every requested partition (Kafka's AlterReplicaLogDirsRequest
    .getErrorResponse)."""
    return AlterReplicaLogDirsResponse(
        results=[
            AlterReplicaLogDirTopicResult(
                topic_name=t.name,
                partitions=[
                    AlterReplicaLogDirPartitionResult(partition_index=p, error_code=code)
                    for p in t.partitions
                ],
            )
            for d in request.dirs
            for t in d.topics
        ]
    )
