from __future__ import annotations

from typing import Any

from protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse


async def handle(ctx: Any, request: LeaveGroupRequest) -> LeaveGroupResponse:
    runtime = ctx.broker.coordinator
    return await runtime.call(runtime.coordinator.leave, ctx, request)
