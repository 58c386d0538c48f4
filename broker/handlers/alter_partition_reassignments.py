"""AlterPartitionReassignments, as Kafka's controller answers on a cluster of one broker
(ReplicationControlManager.alterPartitionReassignments): the only assignment there is, this
broker alone, is already in place, so asking for it succeeds at once; cancelling (null
replicas) finds no reassignment in progress (NO_REASSIGNMENT_IN_PROGRESS); any other
replica list names a broker that does not exist, or none, or one twice
(INVALID_REPLICA_ASSIGNMENT, Kafka's messages). v1: with allow_replication_factor_change
false, a list of another length is INVALID_REPLICATION_FACTOR. A partition that does not
exist is UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from broker.cluster import check_replicas
from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)


def _check(
    ctx: RequestContext,
    request: AlterPartitionReassignmentsRequest,
    topic: str,
    index: int,
    replicas: list[int] | None,
) -> None:
    found = ctx.broker.topics.get(topic)
    if found is None or not 0 <= index < len(found.partitions):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    if replicas is None:
        raise KafkaError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
    if not request.allow_replication_factor_change and len(replicas) != 1:
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "The replication factor is changed from 1 to "
            f"{len(replicas)} but allowReplicationFactorChange is false",
        )
    check_replicas(replicas, ctx.broker.node_id)


async def handle(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    responses = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            try:
                _check(ctx, request, topic.name, p.partition_index, p.replicas)
            except KafkaError as e:
                code, message = e.code, e.detail or None
            else:
                code, message = ErrorCode.NONE, None
            partitions.append(
                ReassignablePartitionResponse(
                    partition_index=p.partition_index, error_code=code, error_message=message
                )
            )
        responses.append(ReassignableTopicResponse(name=topic.name, partitions=partitions))
    return AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=ErrorCode.NONE,
        responses=responses,
    )
