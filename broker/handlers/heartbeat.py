from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse


async def handle(ctx: RequestContext, request: HeartbeatRequest) -> HeartbeatResponse:
    runtime = ctx.broker.coordinator
    if not runtime.loaded:
        # Kafka's answer while __consumer_offsets is loading: let the heartbeat through.
        return HeartbeatResponse(error_code=ErrorCode.NONE)
    return await runtime.call(runtime.coordinator.heartbeat, ctx, request, postpones_only=True)
