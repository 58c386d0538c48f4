from __future__ import annotations

from typing import Any

from protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse


async def handle(ctx: Any, request: JoinGroupRequest) -> JoinGroupResponse:
    runtime = ctx.broker.coordinator
    return await runtime.call(runtime.coordinator.join, ctx, request)
