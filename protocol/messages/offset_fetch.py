"""OffsetFetch (key 9): read a group's committed offsets.

Spec: OffsetFetchRequest.json / OffsetFetchResponse.json. Versions 1-9 (the spec has 0-9;
v0 read ZooKeeper), flexible from 6.

Version notes:
  v1: offsets come from __consumer_offsets.
  v2: topics may be null, meaning every partition the group has offsets for; top-level
      error_code in the response (v2-7).
  v3: throttle_time_ms in the response.
  v4: no change on the wire.
  v5: committed_leader_epoch in the response.
  v6: flexible.
  v7: require_stable (KIP-447); UNSTABLE_OFFSET_COMMIT per partition.
  v8: batched: groups replace group_id/topics in the request and topics/error_code in the
      response (KIP-709).
  v9: member_id and member_epoch per group, checked for KIP-848 groups.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int16, Int32, Int64, Message, String, Struct, wire


class OffsetFetchRequestTopic(Struct):
    name: str = wire(String, until=7)
    partition_indexes: list[int] = wire(Array(Int32), until=7)


class OffsetFetchRequestTopics(Struct):
    name: str = wire(String, since=8)
    partition_indexes: list[int] = wire(Array(Int32), since=8)


class OffsetFetchRequestGroup(Struct):
    group_id: str = wire(String, since=8)
    member_id: str | None = wire(String, since=9, nullable=9, default=None)
    member_epoch: int = wire(Int32, since=9, default=-1)
    topics: list[OffsetFetchRequestTopics] | None = wire(
        Array(OffsetFetchRequestTopics), since=8, nullable=8
    )


class OffsetFetchRequest(Message):
    API_KEY = 9
    VERSIONS = range(1, 10)
    FLEXIBLE_FROM = 6
    group_id: str = wire(String, until=7)
    topics: list[OffsetFetchRequestTopic] | None = wire(
        Array(OffsetFetchRequestTopic), until=7, nullable=2
    )
    groups: list[OffsetFetchRequestGroup] = wire(Array(OffsetFetchRequestGroup), since=8)
    require_stable: bool = wire(Bool, since=7, default=False)


class OffsetFetchResponsePartition(Struct):
    partition_index: int = wire(Int32, until=7)
    committed_offset: int = wire(Int64, until=7)
    committed_leader_epoch: int = wire(Int32, since=5, until=7, default=-1)
    metadata: str | None = wire(String, until=7, nullable=0)
    error_code: int = wire(Int16, until=7)


class OffsetFetchResponseTopic(Struct):
    name: str = wire(String, until=7)
    partitions: list[OffsetFetchResponsePartition] = wire(
        Array(OffsetFetchResponsePartition), until=7
    )


class OffsetFetchResponsePartitions(Struct):
    partition_index: int = wire(Int32, since=8)
    committed_offset: int = wire(Int64, since=8)
    committed_leader_epoch: int = wire(Int32, since=8, default=-1)
    metadata: str | None = wire(String, since=8, nullable=8)
    error_code: int = wire(Int16, since=8)


class OffsetFetchResponseTopics(Struct):
    name: str = wire(String, since=8)
    partitions: list[OffsetFetchResponsePartitions] = wire(
        Array(OffsetFetchResponsePartitions), since=8
    )


class OffsetFetchResponseGroup(Struct):
    group_id: str = wire(String, since=8)
    topics: list[OffsetFetchResponseTopics] = wire(Array(OffsetFetchResponseTopics), since=8)
    error_code: int = wire(Int16, since=8, default=0)


class OffsetFetchResponse(Message):
    API_KEY = 9
    VERSIONS = range(1, 10)
    FLEXIBLE_FROM = 6
    throttle_time_ms: int = wire(Int32, since=3)
    topics: list[OffsetFetchResponseTopic] = wire(Array(OffsetFetchResponseTopic), until=7)
    error_code: int = wire(Int16, since=2, until=7, default=0)
    groups: list[OffsetFetchResponseGroup] = wire(Array(OffsetFetchResponseGroup), since=8)


def error_response(
    request: OffsetFetchRequest, code: ErrorCode, version: int
) -> OffsetFetchResponse:
    """The code where the version keeps it, as Kafka's OffsetFetchRequest.getErrorResponse.

    v1 has no top-level code: every requested partition carries it (offset -1, metadata "").
    v2-7 carry the top-level code alone, with no topics. v8+ answer each requested group with
    the code and no topics.
    """
    if version < 2:
        return OffsetFetchResponse(
            topics=[
                OffsetFetchResponseTopic(
                    name=topic.name,
                    partitions=[
                        OffsetFetchResponsePartition(
                            partition_index=index, committed_offset=-1, metadata="", error_code=code
                        )
                        for index in topic.partition_indexes
                    ],
                )
                for topic in request.topics or ()
            ]
        )
    if version < 8:
        return OffsetFetchResponse(error_code=code)
    return OffsetFetchResponse(
        groups=[
            OffsetFetchResponseGroup(group_id=g.group_id, error_code=code) for g in request.groups
        ]
    )
