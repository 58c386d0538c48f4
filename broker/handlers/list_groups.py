from __future__ import annotations

from typing import Any

from protocol.messages.list_groups import ListGroupsRequest, ListGroupsResponse


async def handle(ctx: Any, request: ListGroupsRequest) -> ListGroupsResponse:
    runtime = ctx.broker.coordinator
    runtime.check_loaded()
    return runtime.coordinator.list_groups(runtime.context(ctx), request)
