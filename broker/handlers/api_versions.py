"""ApiVersions: every API this broker routes, with its range of versions (KIP-511).

The list is the route table's (broker.routes.supported_versions), read through the request
context, cut to the ranges of the Kafka release in `kafka.version` (protocol.releases): a
client sees the versions a broker of that release would list, where kmock implements them.
A request for a version outside that list is answered by the connection itself,
UNSUPPORTED_VERSION with the same list in v0 form (broker.dispatch).

The answer depends on nothing else (the client's software name and version are not used),
so it is encoded once per (version, release) and kept while the route table's list is the
same object: every new connection asks, 1,000 of them at once in bench/RESULTS.md §9.
"""

from __future__ import annotations

from broker.context import RequestContext
from broker.handlers import Encoded
from protocol.messages.api_versions import ApiVersion, ApiVersionsRequest, ApiVersionsResponse
from protocol.releases import intersect
from protocol.schema import encode_chunks

# (version, release) -> (the route table's list it was made from, the answer encoded)
_kept: dict[tuple[int, str | None], tuple[list[ApiVersion], Encoded]] = {}


async def handle(ctx: RequestContext, request: ApiVersionsRequest) -> Encoded:
    release = ctx.broker.config["kafka.version"]
    implemented = ctx.routes.supported_versions()
    key = (ctx.api_version, release)
    kept = _kept.get(key)
    if kept is None or kept[0] is not implemented:
        response = ApiVersionsResponse(api_keys=intersect(implemented, release))
        body = b"".join(encode_chunks(response, ctx.api_version))
        kept = _kept[key] = (implemented, Encoded(response, body))
    return kept[1]
