from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse


async def handle(ctx: RequestContext, request: OffsetFetchRequest) -> OffsetFetchResponse:
    runtime = ctx.broker.coordinator
    return await runtime.offset_fetch(ctx, request)
