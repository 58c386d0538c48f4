from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse


async def handle(ctx: RequestContext, request: ListGroupsRequest) -> ListGroupsResponse:
    runtime = ctx.broker.coordinator
    return runtime.list_groups(ctx, request)
