"""OffsetCommit: the partitions of topics that exist go to the group coordinator; the others
are answered UNKNOWN_TOPIC_OR_PARTITION here, as Kafka's KafkaApis.handleOffsetCommitRequest
does (its metadata cache check). When no partition is left the coordinator is not asked at
all: no group is created, no member or generation is checked.
"""

from __future__ import annotations

# A Struct is a dataclass that mypy does not see as one (protocol.schema): replace() below
# carries type: ignore[type-var].
from dataclasses import replace

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    registry = ctx.broker.topics
    known: list[OffsetCommitRequestTopic] = []
    unknown: list[OffsetCommitResponseTopic] = []
    for topic in request.topics:
        found = registry.get(topic.name)
        count = 0 if found is None else len(found.partitions)
        for p in topic.partitions:  # missing_partitions' check, without its lists
            if not 0 <= p.partition_index < count:
                break
        else:
            known.append(topic)  # the usual case: the request's topic as it came
            continue
        missing = registry.missing_partitions(
            topic.name, (p.partition_index for p in topic.partitions)
        )
        valid = [p for p in topic.partitions if p.partition_index not in missing]
        if valid:
            known.append(replace(topic, partitions=valid))  # type: ignore[type-var]
        unknown.append(
            OffsetCommitResponseTopic(
                name=topic.name,
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=i, error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                    )
                    for i in missing
                ],
            )
        )
    if not known:
        return OffsetCommitResponse(topics=unknown)
    if not unknown:
        return await ctx.broker.coordinator.offset_commit(ctx, request)
    response = await ctx.broker.coordinator.offset_commit(ctx, replace(request, topics=known))  # type: ignore[type-var]
    return replace(response, topics=unknown + list(response.topics))  # type: ignore[type-var]
