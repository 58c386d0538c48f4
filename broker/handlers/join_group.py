from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.join_group import JoinGroupRequest, JoinGroupResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: JoinGroupRequest) -> JoinGroupResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return await runtime.join_group(ctx, request)
