from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: OffsetFetchRequest) -> OffsetFetchResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return runtime.offset_fetch(ctx, request)
