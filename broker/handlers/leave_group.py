from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: LeaveGroupRequest) -> LeaveGroupResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return await runtime.leave_group(ctx, request)
