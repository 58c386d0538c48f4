from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse


async def handle(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    runtime = ctx.broker.coordinator
    return await runtime.heartbeat(ctx, request)
