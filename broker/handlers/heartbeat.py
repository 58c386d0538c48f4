from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: HeartbeatRequest) -> HeartbeatResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return await runtime.heartbeat(ctx, request)
