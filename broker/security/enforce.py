"""ACLs on the request path: what the dispatch calls when the broker has an authorizer.

`handle` passes the request to broker.security.apis (what each API asks of the authorizer,
Kafka 4.1's KafkaApis API by API), imported by the first request that needs it: a broker
without an authorizer, kmock's default, never loads apis, checks, visible and the message
classes they name (start-up time: ~10 M instructions of `kmock serve`, callgrind). `Refused`
(broker.security.authz) is what a refusal raises when no response can carry it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from broker.security.authz import Refused

if TYPE_CHECKING:
    from broker.security.checks import ErrorResponse, Handler

__all__ = ["Refused", "handle"]


async def handle(ctx: Any, request: Any, handler: Handler, error_response: ErrorResponse) -> Any:
    """`handler`'s answer to `request`, with what the connection's principal may not do
    refused as Kafka refuses it (broker.security.apis). Raises KafkaError for a request
    refused whole, Refused when the refusal cannot be answered."""
    from broker.security.apis import handle as handle_with_acls

    return await handle_with_acls(ctx, request, handler, error_response)
