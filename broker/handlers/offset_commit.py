from __future__ import annotations

from typing import Any

from protocol.messages.offset_commit import OffsetCommitRequest, OffsetCommitResponse


async def handle(ctx: Any, request: OffsetCommitRequest) -> OffsetCommitResponse:
    runtime = ctx.broker.coordinator
    return await runtime.call(
        runtime.coordinator.commit_offsets,
        ctx,
        request,
        postpones_only=True,
        wall_ms=ctx.broker.wall_ms(),
    )
