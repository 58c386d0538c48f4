"""ElectLeaders: give partitions back to their preferred replica (PREFERRED), or a leader to
partitions that have none (UNCLEAN), as Kafka's controller does
(ReplicationControlManager.electLeaders, broker.cluster_state):

  * PREFERRED: ELECTION_NOT_NEEDED when the preferred (first) replica leads already;
    PREFERRED_LEADER_NOT_AVAILABLE when it is stopped or out of the ISR; else it leads,
    with a new leader epoch.
  * UNCLEAN: ELECTION_NOT_NEEDED when the partition has a leader; else the first running
    replica leads, even out of the ISR (which becomes that replica alone);
    ELIGIBLE_LEADERS_NOT_AVAILABLE when no replica runs.

A request for every partition (null) lists only the partitions that were elected. A
partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION. A single broker leads every
partition with the only replica there is: every election is ELECTION_NOT_NEEDED.
"""

from __future__ import annotations

from broker.cluster_state import ClusterState
from broker.context import RequestContext
from broker.controls.cluster import start_loading
from broker.topics import Partition
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

PREFERRED, UNCLEAN = 0, 1
ELECTION_TYPES = (PREFERRED, UNCLEAN)
_MESSAGES = {
    ErrorCode.ELECTION_NOT_NEEDED: "Leader election not needed for topic partition.",
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: "This server does not host this topic-partition.",
    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE: "The preferred leader was not available.",
    ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE: "No eligible leader is available.",
}


def _elect(cluster: ClusterState, p: Partition, election_type: int) -> ErrorCode:
    if election_type == PREFERRED:
        return cluster.elect_preferred(p)
    if p.leader >= 0:
        return ErrorCode.ELECTION_NOT_NEEDED
    live = [b for b in p.replicas if b in cluster.live]
    if not live:
        return ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
    p.isr = [b for b in p.isr if b in cluster.live] or [live[0]]
    cluster.move_leader(p, p.isr[0])
    return ErrorCode.NONE


def _result(partition: int, code: ErrorCode) -> PartitionResult:
    return PartitionResult(
        partition_id=partition, error_code=code, error_message=_MESSAGES.get(code)
    )


async def handle(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    if request.election_type not in ELECTION_TYPES:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unknown election type {request.election_type}"
        )
    registry = ctx.broker.topics
    cluster = ctx.broker.cluster
    results = []
    changed = False
    before = {p: p.leader for p in cluster.partitions()}
    if request.topic_partitions is None:
        for every in registry.topics.values():
            elected = []
            for p in every.partitions:
                if _elect(cluster, p, request.election_type) == ErrorCode.NONE:
                    elected.append(_result(p.index, ErrorCode.NONE))
            if elected:
                changed = True
                results.append(ReplicaElectionResult(topic=every.name, partition_result=elected))
    for wanted in request.topic_partitions or ():
        topic = registry.get(wanted.topic)
        count = 0 if topic is None else len(topic.partitions)
        parts = []
        for i in dict.fromkeys(wanted.partitions):
            if topic is None or not 0 <= i < count:
                parts.append(_result(i, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
                continue
            code = _elect(cluster, topic.partitions[i], request.election_type)
            changed |= code == ErrorCode.NONE
            parts.append(_result(i, code))
        results.append(ReplicaElectionResult(topic=wanted.topic, partition_result=parts))
    if changed:
        # A coordinator partition with a new leader is loaded by it (broker.controls.cluster).
        for p, leader in before.items():
            if p.leader != leader and p.topic in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC):
                start_loading(ctx.broker, p)
        try:
            registry.save()
        except OSError as e:
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"could not save the election: {e}"
            ) from e
    return ElectLeadersResponse(error_code=ErrorCode.NONE, replica_election_results=results)
