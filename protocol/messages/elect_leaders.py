"""ElectLeaders (key 43): ask the controller to elect partition leaders (KIP-183, KIP-460).

Spec: ElectLeadersRequest.json / ElectLeadersResponse.json. Versions 0-2, flexible from 2.

Version notes:
  v0: preferred leader election; a null topic_partitions means every partition.
  v1: election_type (0 preferred, 1 unclean); a top-level error_code in the response.
  v2: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int8, Int16, Int32, Message, String, Struct, wire


class TopicPartitions(Struct):
    topic: str = wire(String)
    partitions: list[int] = wire(Array(Int32))


class ElectLeadersRequest(Message):
    API_KEY = 43
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    election_type: int = wire(Int8, since=1)
    topic_partitions: list[TopicPartitions] | None = wire(Array(TopicPartitions), nullable=True)
    timeout_ms: int = wire(Int32, default=60000)


class PartitionResult(Struct):
    partition_id: int = wire(Int32)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)


class ReplicaElectionResult(Struct):
    topic: str = wire(String)
    partition_result: list[PartitionResult] = wire(Array(PartitionResult))


class ElectLeadersResponse(Message):
    API_KEY = 43
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16, since=1)
    replica_election_results: list[ReplicaElectionResult] = wire(Array(ReplicaElectionResult))


def error_response(
    request: ElectLeadersRequest, code: ErrorCode, version: int
) -> ElectLeadersResponse:
    """v1+: the code at the top level; v0 (which has none): on every requested partition,
    as Kafka's ElectLeadersRequest.getErrorResponse."""
    return ElectLeadersResponse(
        error_code=code if version >= 1 else ErrorCode.NONE,
        replica_election_results=[
            ReplicaElectionResult(
                topic=t.topic,
                partition_result=[
                    PartitionResult(partition_id=p, error_code=code) for p in t.partitions
                ],
            )
            for t in request.topic_partitions or ()
        ],
    )
