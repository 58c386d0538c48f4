"""ApiVersions: every API this broker routes, with its range of versions (KIP-511).

The list is the route table's (broker.routes.supported_versions), read through the request
context. A request for a version we do not support is answered by the connection itself,
UNSUPPORTED_VERSION with the same list in v0 form (broker.connection).
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    return ApiVersionsResponse(api_keys=ctx.routes.supported_versions())
