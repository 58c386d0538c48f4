from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse


async def handle(ctx: RequestContext, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    runtime = ctx.broker.coordinator
    return await runtime.offset_delete(ctx, request)
