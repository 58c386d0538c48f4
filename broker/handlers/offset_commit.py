from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    runtime = ctx.broker.coordinator
    return await runtime.call(
        runtime.coordinator.commit_offsets,
        ctx,
        request,
        postpones_only=True,
        wall_ms=ctx.broker.wall_ms(),
    )
