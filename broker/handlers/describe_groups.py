from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return runtime.describe_groups(ctx, request)
