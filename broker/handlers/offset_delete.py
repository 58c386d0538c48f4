from __future__ import annotations

from typing import Any

from protocol.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse


async def handle(ctx: Any, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    runtime = ctx.broker.coordinator
    return await runtime.call(runtime.coordinator.delete_offsets, ctx, request)
