from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)


async def handle(
    ctx: RequestContext, request: DescribeTransactionsRequest
) -> DescribeTransactionsResponse:
    return ctx.broker.transactions.coordinator.describe_transactions(request)
