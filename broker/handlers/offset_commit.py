from __future__ import annotations

from typing import TYPE_CHECKING, Any

from protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse

if TYPE_CHECKING:
    from broker.runtime import CoordinatorRuntime


async def handle(ctx: Any, request: OffsetCommitRequest) -> OffsetCommitResponse:
    runtime: CoordinatorRuntime = ctx.broker.coordinator
    return await runtime.offset_commit(ctx, request)
