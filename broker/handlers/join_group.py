from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse


async def handle(ctx: RequestContext, request: JoinGroupRequest) -> JoinGroupResponse:
    runtime = ctx.broker.coordinator
    return await runtime.join_group(ctx, request)
