from __future__ import annotations

from typing import Any

from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse


async def handle(ctx: Any, request: SyncGroupRequest) -> SyncGroupResponse:
    runtime = ctx.broker.coordinator
    return await runtime.call(runtime.coordinator.sync, ctx, request)
