from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.consumer_group_describe import (
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
)


async def handle(
    ctx: RequestContext, request: ConsumerGroupDescribeRequest
) -> ConsumerGroupDescribeResponse:
    runtime = ctx.broker.coordinator
    return runtime.consumer_group_describe(ctx, request)
