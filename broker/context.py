"""RequestContext: what a handler knows about a request besides its body.

Every handler is `async def handle(ctx: RequestContext, request: XRequest) -> XResponse`
(broker.handlers); the connection (the one dispatch site) makes one context per request.
A handler reaches the running broker through `ctx.broker` and reads the route table
through `ctx.routes`: it never imports broker.routes, which imports every handler.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from broker.broker import Broker
    from protocol.messages.api_versions import ApiVersion

__all__ = ["NODE_ID", "Encoded", "RequestContext", "RouteTable"]

# The broker whose listener accepted the connection being served (broker.server sets it in
# the task that accepts a node's connections; each connection's task inherits it). Unset:
# the process's first broker, `Broker.node_id`.
NODE_ID: contextvars.ContextVar[int] = contextvars.ContextVar("kmock_node_id")


class RouteTable(Protocol):
    """The route table as a handler may read it (the module broker.routes is one)."""

    def supported_versions(self) -> list[ApiVersion]:
        """The same list until the route table changes (not to be changed)."""
        ...


class RequestContext:
    """The request's version, its client and listener, and the broker and route table serving
    it."""

    __slots__ = (
        "api_version",
        "broker",
        "client_host",
        "client_id",
        "connection_id",
        "describable",
        "listener_name",
        "node_id",
        "routes",
    )

    def __init__(
        self,
        broker: Broker,
        api_version: int,
        client_id: str,
        client_host: str,
        connection_id: int,
        routes: RouteTable,
        listener_name: str = "PLAINTEXT",
    ) -> None:
        self.broker = broker
        self.api_version = api_version
        self.client_id = client_id
        self.client_host = client_host
        self.connection_id = connection_id
        self.routes = routes
        # The listener the connection came through (Kafka's RequestContext.listenerName):
        # Metadata, FindCoordinator and DescribeCluster answer with its advertised address.
        self.listener_name = listener_name
        # The broker the request is for (broker.cluster_state): handlers answer as it.
        self.node_id: int = NODE_ID.get(broker.node_id)
        # With an authorizer, whether the principal may DESCRIBE a topic (set by
        # broker.security.enforce; the coordinator resolves regex subscriptions with it).
        self.describable: Callable[[str], bool] | None = None


class Encoded:
    """A response together with its body encoded at the request's version. The dispatch
    site sends `body` instead of encoding `response` again, unless the response is changed
    on its way out (what a principal may not see is taken out: broker.security.enforce); the
    journal and the metrics still see `response`. Neither may be changed afterwards: a
    handler hands out the same one for identical requests."""

    __slots__ = ("body", "response")

    def __init__(self, response: Any, body: bytes) -> None:
        self.response = response
        self.body = body
