from __future__ import annotations

from typing import Any

from protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse


def supported_versions() -> list[ApiVersion]:
    from broker.routes import all_routes

    return [
        ApiVersion(
            api_key=r.api_key,
            min_version=r.request.VERSIONS.start,
            max_version=r.request.VERSIONS.stop - 1,
        )
        for r in all_routes()
    ]


async def handle(ctx: Any, request: ApiVersionsRequest) -> ApiVersionsResponse:
    return ApiVersionsResponse(api_keys=supported_versions())
