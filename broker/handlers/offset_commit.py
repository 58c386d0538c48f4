from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse


async def handle(ctx: RequestContext, request: OffsetCommitRequest) -> OffsetCommitResponse:
    runtime = ctx.broker.coordinator
    return await runtime.offset_commit(ctx, request)
