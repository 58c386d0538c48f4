"""One module per API, named as in protocol/messages:
`async def handle(ctx: RequestContext, request: XRequest) -> XResponse` (broker.context).

A handler returns the response (None: no response, Produce with acks=0), a `Deferred`
when the request has taken effect and only waiting remains, or an `Encoded` response whose
body it already holds encoded (an answer it keeps for the next identical request).
Handlers import no other handler and not the route table: what two of them share lives in
a module of its own (broker.topic_configs, broker.cluster), the route table is read through
`ctx.routes`.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from broker.context import Encoded  # re-exported: handlers return it

__all__ = ["Deferred", "Encoded"]


class Deferred:
    """A response that is not ready yet, although its request is done: a Produce whose
    batches are appended and that waits only for the fsync covering them (acks=all).

    The connection goes on to read and handle the next requests meanwhile, and sends the
    responses in request order (see broker.connection). `finish()` returns the response
    and puts failures in it, per partition: the request is not kept, so there is nothing to
    build the API's `error_response` from. Anything `finish()` raises is a bug: it is logged
    and, with no request left to answer from, the connection is closed (broker.dispatch).
    """

    __slots__ = ("finish",)

    def __init__(self, finish: Callable[[], Awaitable[Any]]) -> None:
        self.finish = finish
