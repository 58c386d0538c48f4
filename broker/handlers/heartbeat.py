from __future__ import annotations

from typing import Any

from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse


async def handle(ctx: Any, request: HeartbeatRequest) -> HeartbeatResponse:
    runtime = ctx.broker.coordinator
    return await runtime.call(runtime.coordinator.heartbeat, ctx, request)
