from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.describe_groups import DescribeGroupsRequest, DescribeGroupsResponse


async def handle(ctx: RequestContext, request: DescribeGroupsRequest) -> DescribeGroupsResponse:
    runtime = ctx.broker.coordinator
    return runtime.describe_groups(ctx, request)
