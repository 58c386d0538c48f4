from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.list_transactions import ListTransactionsRequest, ListTransactionsResponse


async def handle(ctx: RequestContext, request: ListTransactionsRequest) -> ListTransactionsResponse:
    return ctx.broker.transactions.coordinator.list_transactions(request, ctx.broker.wall_ms())
