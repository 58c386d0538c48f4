from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    runtime = ctx.broker.coordinator
    return await runtime.sync_group(ctx, request)
