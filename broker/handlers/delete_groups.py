from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.delete_groups import DeleteGroupsRequest, DeleteGroupsResponse


async def handle(ctx: RequestContext, request: DeleteGroupsRequest) -> DeleteGroupsResponse:
    runtime = ctx.broker.coordinator
    return await runtime.delete_groups(ctx, request)
