from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse


async def handle(ctx: RequestContext, request: SyncGroupRequest) -> SyncGroupResponse:
    runtime = ctx.broker.coordinator
    if not runtime.loaded:
        # Kafka's answer while __consumer_offsets is loading: the member rejoins.
        return SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS)
    return await runtime.call(runtime.coordinator.sync, ctx, request)
