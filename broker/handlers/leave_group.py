from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse


async def handle(ctx: RequestContext, request: LeaveGroupRequest) -> LeaveGroupResponse:
    runtime = ctx.broker.coordinator
    return await runtime.leave_group(ctx, request)
