from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse


async def handle(ctx: RequestContext, request: AddOffsetsToTxnRequest) -> AddOffsetsToTxnResponse:
    return await ctx.broker.transactions.add_offsets(ctx.api_version, request)
