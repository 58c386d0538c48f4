"""ElectLeaders: a single node leads every partition with the only replica there is, so
every election is ELECTION_NOT_NEEDED, as Kafka's controller answers for a partition whose
leader is already the preferred (or an in-sync) replica (ReplicationControlManager
.electLeaders). A request for every partition (null) lists only the partitions that were
elected: none. A partition that does not exist is UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.elect_leaders import (
    ElectLeadersRequest,
    ElectLeadersResponse,
    PartitionResult,
    ReplicaElectionResult,
)

ELECTION_TYPES = (0, 1)  # PREFERRED, UNCLEAN
_NOT_NEEDED = "Leader election not needed for topic partition."
_UNKNOWN = "This server does not host this topic-partition."


async def handle(ctx: RequestContext, request: ElectLeadersRequest) -> ElectLeadersResponse:
    if request.election_type not in ELECTION_TYPES:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unknown election type {request.election_type}"
        )
    registry = ctx.broker.topics
    results = []
    for wanted in request.topic_partitions or ():
        topic = registry.get(wanted.topic)
        count = 0 if topic is None else len(topic.partitions)
        results.append(
            ReplicaElectionResult(
                topic=wanted.topic,
                partition_result=[
                    PartitionResult(
                        partition_id=p,
                        error_code=ErrorCode.ELECTION_NOT_NEEDED
                        if 0 <= p < count
                        else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        error_message=_NOT_NEEDED if 0 <= p < count else _UNKNOWN,
                    )
                    for p in dict.fromkeys(wanted.partitions)
                ],
            )
        )
    return ElectLeadersResponse(error_code=ErrorCode.NONE, replica_election_results=results)
