from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)


async def handle(
    ctx: RequestContext, request: ConsumerGroupHeartbeatRequest
) -> ConsumerGroupHeartbeatResponse:
    runtime = ctx.broker.coordinator
    return await runtime.consumer_group_heartbeat(ctx, request)
