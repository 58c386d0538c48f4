"""AlterPartitionReassignments, as Kafka's controller answers it
(ReplicationControlManager.alterPartitionReassignments), per partition: a partition that
does not exist is UNKNOWN_TOPIC_OR_PARTITION; cancelling (null replicas) finds no
reassignment in progress (NO_REASSIGNMENT_IN_PROGRESS: kmock completes each at once); v1
with allow_replication_factor_change false refuses a list of another length than the
current replicas (INVALID_REPLICATION_FACTOR); a list naming a broker that does not exist,
or none, or one twice is INVALID_REPLICA_ASSIGNMENT (Kafka's messages).

A valid reassignment takes effect at once (broker.cluster_state.reassign): Kafka copies the
partition to the new replicas and completes the reassignment once they are in the ISR;
in kmock every replica is the same log, so the new replicas are caught up from the start.
The leader stays when it is among the new replicas, else the first running one leads, and
the leader epoch goes up as Kafka's would. A coordinator partition with a new leader is
loaded by it (broker.controls.cluster.start_loading). With one broker the only valid list
is that broker alone, already in place.
"""

from __future__ import annotations

from broker.cluster import check_replicas
from broker.context import RequestContext
from broker.controls.cluster import start_loading
from broker.topics import Partition
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    AlterPartitionReassignmentsResponse,
    ReassignablePartitionResponse,
    ReassignableTopicResponse,
)
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC


def _check(
    ctx: RequestContext,
    request: AlterPartitionReassignmentsRequest,
    topic: str,
    index: int,
    replicas: list[int] | None,
) -> Partition:
    found = ctx.broker.topics.get(topic)
    if found is None or not 0 <= index < len(found.partitions):
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
    p: Partition = found.partitions[index]
    if replicas is None:
        raise KafkaError(ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)
    if not request.allow_replication_factor_change and len(replicas) != len(p.replicas):
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"The replication factor is changed from {len(p.replicas)} to "
            f"{len(replicas)} but allowReplicationFactorChange is false",
        )
    check_replicas(replicas, ctx.broker.cluster.node_ids)
    return p


def _reassign(ctx: RequestContext, p: Partition, replicas: list[int]) -> bool:
    """Apply a checked reassignment; True when something changed."""
    cluster = ctx.broker.cluster
    if not cluster.multi or list(replicas) == p.replicas:
        return False
    leader = p.leader
    cluster.reassign(p, list(replicas))
    if p.leader != leader and p.leader >= 0 and p.topic in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC):
        start_loading(ctx.broker, p)
    return True


async def handle(
    ctx: RequestContext, request: AlterPartitionReassignmentsRequest
) -> AlterPartitionReassignmentsResponse:
    responses = []
    changed = False
    for topic in request.topics:
        partitions = []
        for r in topic.partitions:
            try:
                p = _check(ctx, request, topic.name, r.partition_index, r.replicas)
            except KafkaError as e:
                code, message = e.code, e.detail or None
            else:
                changed |= _reassign(ctx, p, r.replicas or [])
                code, message = ErrorCode.NONE, None
            partitions.append(
                ReassignablePartitionResponse(
                    partition_index=r.partition_index, error_code=code, error_message=message
                )
            )
        responses.append(ReassignableTopicResponse(name=topic.name, partitions=partitions))
    if changed:
        ctx.broker.topics.save()
    return AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=request.allow_replication_factor_change,
        error_code=ErrorCode.NONE,
        responses=responses,
    )
