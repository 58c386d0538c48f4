"""ListPartitionReassignments: none is ever in progress on a single node (a reassignment to
the one broker there is completes at once), so the answer lists no topic, whichever topics
were asked about, as Kafka's controller answers when it has none.
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
