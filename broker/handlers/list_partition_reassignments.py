"""ListPartitionReassignments: none is ever in progress, because kmock completes each
reassignment at once (every replica is the same log, so new replicas need no catching up:
broker.handlers.alter_partition_reassignments); the answer lists no topic, whichever topics
were asked about, as Kafka's controller answers when it has none. Any broker answers (Kafka's
brokers forward the request to the controller).
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.list_partition_reassignments import (
    ListPartitionReassignmentsRequest,
    ListPartitionReassignmentsResponse,
)


async def handle(
    ctx: RequestContext, request: ListPartitionReassignmentsRequest
) -> ListPartitionReassignmentsResponse:
    return ListPartitionReassignmentsResponse(error_code=ErrorCode.NONE, topics=[])
