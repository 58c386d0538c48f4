"""ApiVersions: every API this broker routes, with its range of versions (KIP-511).

The list is the route table's (broker.routes.supported_versions), read through the request
context, cut to the ranges of the Kafka release in `kafka.version` (protocol.releases): a
client sees the versions a broker of that release would list, where kmock implements them.
A request for a version outside that list is answered by the connection itself,
UNSUPPORTED_VERSION with the same list in v0 form (broker.dispatch).
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.messages.api_versions import ApiVersionsRequest, ApiVersionsResponse
from protocol.releases import intersect


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> ApiVersionsResponse:
    release = ctx.broker.config["kafka.version"]
    return ApiVersionsResponse(api_keys=intersect(ctx.routes.supported_versions(), release))
