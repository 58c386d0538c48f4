"""Metadata (key 3): brokers, controller, and the partitions and leaders of topics.

Spec: MetadataRequest.json / MetadataResponse.json. Versions 0-13, flexible from 9.

Version notes:
  v0: an empty `topics` means all topics; from v1 all topics is a null `topics`, and an empty
      one means none.
  v1: rack, controller_id, is_internal.
  v2: cluster_id.
  v3: throttle_time_ms.
  v4: allow_auto_topic_creation.
  v5: offline_replicas.
  v7: leader_epoch per partition.
  v8: include_*_authorized_operations in the request, *_authorized_operations in the response.
  v9: flexible.
  v10: topic_id; the request's topic name may be null (Kafka serves this only from v12).
  v11: cluster authorized operations dropped (DescribeCluster has them, KIP-700).
  v12: topics by id; the response's topic name may be null.
  v13: a top-level error_code in the response (KIP-1102).
"""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from protocol.messages import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import Array, Bool, Int16, Int32, Message, String, Struct, Uuid, wire


class MetadataRequestTopic(Struct):
    topic_id: uuid.UUID = wire(Uuid, since=10)
    name: str | None = wire(String, nullable=10)


class MetadataRequest(Message):
    API_KEY = 3
    VERSIONS = range(0, 14)
    FLEXIBLE_FROM = 9
    KEEP_DECODED = True  # sent again and again, byte for byte (protocol.schema._Kept)
    topics: list[MetadataRequestTopic] | None = wire(Array(MetadataRequestTopic), nullable=1)
    allow_auto_topic_creation: bool = wire(Bool, since=4, default=True)
    include_cluster_authorized_operations: bool = wire(Bool, since=8, until=10)
    include_topic_authorized_operations: bool = wire(Bool, since=8)


class MetadataResponseBroker(Struct):
    node_id: int = wire(Int32)
    host: str = wire(String)
    port: int = wire(Int32)
    rack: str | None = wire(String, since=1, nullable=1, default=None)


class MetadataResponsePartition(Struct):
    error_code: int = wire(Int16)
    partition_index: int = wire(Int32)
    leader_id: int = wire(Int32)
    leader_epoch: int = wire(Int32, since=7, default=-1)
    replica_nodes: list[int] = wire(Array(Int32))
    isr_nodes: list[int] = wire(Array(Int32))
    offline_replicas: list[int] = wire(Array(Int32), since=5)


class MetadataResponseTopic(Struct):
    error_code: int = wire(Int16)
    name: str | None = wire(String, nullable=12)
    topic_id: uuid.UUID = wire(Uuid, since=10)
    is_internal: bool = wire(Bool, since=1)
    partitions: list[MetadataResponsePartition] = wire(Array(MetadataResponsePartition))
    topic_authorized_operations: int = wire(Int32, since=8, default=AUTHORIZED_OPERATIONS_OMITTED)


class MetadataResponse(Message):
    API_KEY = 3
    VERSIONS = range(0, 14)
    FLEXIBLE_FROM = 9
    throttle_time_ms: int = wire(Int32, since=3)
    brokers: list[MetadataResponseBroker] = wire(Array(MetadataResponseBroker))
    cluster_id: str | None = wire(String, since=2, nullable=2, default=None)
    controller_id: int = wire(Int32, since=1, default=-1)
    topics: list[MetadataResponseTopic] = wire(Array(MetadataResponseTopic))
    cluster_authorized_operations: int = wire(
        Int32, since=8, until=10, default=AUTHORIZED_OPERATIONS_OMITTED
    )
    error_code: int = wire(Int16, since=13)


def error_response(request: MetadataRequest, code: ErrorCode, version: int) -> MetadataResponse:
    """The code on every requested topic, with no partitions, at every version.

    As Kafka's MetadataRequest.getErrorResponse. v0-12 have no top-level error code, so a
    request for all topics (null `topics`, or an empty one at v0) gets an empty answer, as
    from Kafka; v13 carries the code at the top level too. A null topic name (v12, by id) is
    answered as "", as Kafka does.
    """
    return MetadataResponse(
        error_code=code if version >= 13 else ErrorCode.NONE,
        topics=[
            MetadataResponseTopic(
                error_code=code,
                name="" if topic.name is None else topic.name,
                topic_id=topic.topic_id,
            )
            for topic in request.topics or ()
        ],
    )
