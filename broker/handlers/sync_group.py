from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.sync_group import SyncGroupRequest, SyncGroupResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: SyncGroupRequest) -> SyncGroupResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return await runtime.sync_group(ctx, request)
