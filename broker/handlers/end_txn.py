from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse


async def handle(ctx: RequestContext, request: EndTxnRequest) -> EndTxnResponse:
    return await ctx.broker.transactions.end_txn(ctx.api_version, request)
