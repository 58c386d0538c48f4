from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.txn_offset_commit import TxnOffsetCommitRequest, TxnOffsetCommitResponse


async def handle(ctx: RequestContext, request: TxnOffsetCommitRequest) -> TxnOffsetCommitResponse:
    return await ctx.broker.coordinator.txn_offset_commit(ctx, request)
