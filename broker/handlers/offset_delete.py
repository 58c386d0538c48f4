"""OffsetDelete: topics that do not exist are answered UNKNOWN_TOPIC_OR_PARTITION here and the
rest go to the group coordinator, as Kafka's KafkaApis.handleOffsetDeleteRequest does; a
top-level error from the coordinator is the whole answer.
"""

from __future__ import annotations

# A Struct is a dataclass that mypy does not see as one (protocol.schema): replace() below
# carries type: ignore[type-var].
from dataclasses import replace

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    registry = ctx.broker.topics
    known = [t for t in request.topics if registry.get(t.name) is not None]
    unknown = [
        OffsetDeleteResponseTopic(
            name=t.name,
            partitions=[
                OffsetDeleteResponsePartition(
                    partition_index=p.partition_index,
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                )
                for p in t.partitions
            ],
        )
        for t in request.topics
        if registry.get(t.name) is None
    ]
    response = await ctx.broker.coordinator.offset_delete(ctx, replace(request, topics=known))  # type: ignore[type-var]
    if response.error_code != ErrorCode.NONE:
        return response
    return replace(response, topics=unknown + list(response.topics))  # type: ignore[type-var]
