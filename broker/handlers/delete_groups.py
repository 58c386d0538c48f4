from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return await runtime.delete_groups(ctx, request)
