from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: ListGroupsRequest) -> ListGroupsResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return runtime.list_groups(ctx, request)
