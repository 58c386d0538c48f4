"""OffsetCommit: the partitions of topics that exist go to the group coordinator; the others
are answered UNKNOWN_TOPIC_OR_PARTITION here, as Kafka's KafkaApis.handleOffsetCommitRequest
does (its metadata cache check). When no partition is left the coordinator is not asked at
all: no group is created, no member or generation is checked.

A commit of one partition that succeeds gets the coordinator's shared answer for that
partition (coordinator.offsets); it is kept here encoded at each version, so that the
dispatch site sends its bytes instead of encoding it again (any other successful
one-partition answer is kept too: the body is always its own object's).
"""

from __future__ import annotations

# A Struct is a dataclass that mypy does not see as one (protocol.schema): replace() below
# carries type: ignore[type-var].
from dataclasses import replace

from broker.context import Encoded, RequestContext
from protocol.errors import ErrorCode
from protocol.kept import keep
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
)
from protocol.schema import encode_chunks

# (id of a one-partition answer, version) -> that answer and its body at that version (the
# entry holds the answer, so no other object can have its id meanwhile; at most ~10,000
# kept, emptied when full).
_ENCODED: dict[tuple[int, int], Encoded] = {}
_ENCODED_KEPT = 10_000


async def handle(
    ctx: RequestContext, request: OffsetCommitRequest
) -> OffsetCommitResponse | Encoded:
    topics = ctx.broker.topics.topics  # TopicRegistry.get's dict, without its call
    if not request.topics:
        return await _with_unknown(ctx, request)
    for topic in request.topics:
        found = topics.get(topic.name)
        count = 0 if found is None else len(found.partitions)
        for p in topic.partitions:  # missing_partitions' check, without its lists
            if not 0 <= p.partition_index < count:
                return await _with_unknown(ctx, request)
    # The usual case: the request as it came.
    response = await ctx.broker.coordinator.offset_commit(ctx, request)
    kept = _ENCODED.get((id(response), ctx.api_version))
    if kept is not None:
        return kept
    answers = response.topics
    if (
        len(answers) == 1
        and len(partitions := answers[0].partitions) == 1
        and partitions[0].error_code == ErrorCode.NONE
    ):
        body = b"".join(encode_chunks(response, ctx.api_version))
        return keep(
            _ENCODED, (id(response), ctx.api_version), Encoded(response, body), _ENCODED_KEPT
        )
    return response


async def _with_unknown(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    """A commit naming topics or partitions that do not exist (or none): those are
    answered here."""
    registry = ctx.broker.topics
    known: list[OffsetCommitRequestTopic] = []
    unknown: list[OffsetCommitResponseTopic] = []
    for topic in request.topics:
        missing = registry.missing_partitions(
            topic.name, (p.partition_index for p in topic.partitions)
        )
        if not missing:
            known.append(topic)
            continue
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
    response = await ctx.broker.coordinator.offset_commit(ctx, replace(request, topics=known))  # type: ignore[type-var]
    return replace(response, topics=unknown + list(response.topics))  # type: ignore[type-var]
