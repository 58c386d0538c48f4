from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse


async def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    runtime = ctx.broker.coordinator
    runtime.check_loaded()
    return runtime.coordinator.describe_groups(runtime.context(ctx), request)
