from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.offset_delete import OffsetDeleteRequest, OffsetDeleteResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: OffsetDeleteRequest) -> OffsetDeleteResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return await runtime.offset_delete(ctx, request)
