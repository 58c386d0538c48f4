from __future__ import annotations

from typing import Any

from protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse


async def handle(ctx: Any, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    runtime = ctx.broker.coordinator
    return await runtime.call(runtime.coordinator.delete_groups, ctx, request)
