"""ROUTES: API key -> the API's module and versions. The one list of the APIs kmock speaks.

It feeds both the decoder (api key -> request class) and ApiVersions (every row advertises
its versions: `supported_versions()`, which the ApiVersions handler reads through its
RequestContext rather than by importing this module). An API that is not here is not
advertised, and a request for it closes the connection, as Kafka does for an unknown key.
Sorted by API key.

A row names the module of its API, Kafka's name in snake_case (`0: ("produce", ...)`): the
messages are `protocol.messages.produce` (`ProduceRequest`, `ProduceResponse`), the handler
is `broker.handlers.produce`, the route's name is "Produce". Neither is imported at start:

- the message module with the first use of the route's request or response class (the
  API's first request, usually), so a row also states the versions kmock serves, which
  ApiVersions advertises without importing the ~50 message modules (of which a start now
  imports only the ~20 the coordinators answer with); the message module's VERSIONS are
  checked against the row when the route first reads them, and for every row by
  tests/broker/test_routes.py;
- the handler with the API's first request: the handlers and what only they use (topic
  config validation, the cluster controls, old message formats) are a quarter of the
  modules start-up would import, and a client calls a handful of APIs. The first call puts
  the handler in the route itself, so the request path is the same as with an imported one.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from broker.context import RequestContext
from broker.handlers import Deferred, Encoded
from protocol.errors import ErrorCode
from protocol.messages.api_versions import ApiVersion
from protocol.schema import Message

# `async def handle(ctx, request) -> response`: the response, a Deferred one, an Encoded one
# (kept with its body, broker.handlers), or None (no response: Produce with acks=0). The
# request is typed per handler (ProduceRequest, ...); here it is Any, because one table holds
# every API.
Handler = Callable[[RequestContext, Any], Awaitable[Message | Deferred | Encoded | None]]

# API key -> (module, versions served): what the message module's VERSIONS says, stated
# here so that ApiVersions needs no message module.
ROUTES: dict[int, tuple[str, range]] = {
    0: ("produce", range(0, 14)),
    1: ("fetch", range(0, 19)),
    2: ("list_offsets", range(1, 11)),
    3: ("metadata", range(0, 14)),
    8: ("offset_commit", range(1, 10)),
    9: ("offset_fetch", range(1, 10)),
    10: ("find_coordinator", range(0, 7)),
    11: ("join_group", range(0, 10)),
    12: ("heartbeat", range(0, 5)),
    13: ("leave_group", range(0, 6)),
    14: ("sync_group", range(0, 6)),
    15: ("describe_groups", range(0, 7)),
    16: ("list_groups", range(0, 6)),
    17: ("sasl_handshake", range(0, 2)),
    18: ("api_versions", range(0, 5)),
    19: ("create_topics", range(2, 8)),
    20: ("delete_topics", range(1, 7)),
    21: ("delete_records", range(0, 3)),
    22: ("init_producer_id", range(0, 6)),
    23: ("offset_for_leader_epoch", range(2, 5)),
    24: ("add_partitions_to_txn", range(0, 6)),
    25: ("add_offsets_to_txn", range(0, 5)),
    26: ("end_txn", range(0, 6)),
    27: ("write_txn_markers", range(0, 2)),
    28: ("txn_offset_commit", range(0, 5)),
    29: ("describe_acls", range(0, 4)),
    30: ("create_acls", range(0, 4)),
    31: ("delete_acls", range(0, 4)),
    32: ("describe_configs", range(0, 5)),
    33: ("alter_configs", range(0, 3)),
    34: ("alter_replica_log_dirs", range(1, 3)),
    35: ("describe_log_dirs", range(1, 5)),
    36: ("sasl_authenticate", range(0, 3)),
    37: ("create_partitions", range(0, 4)),
    42: ("delete_groups", range(0, 3)),
    43: ("elect_leaders", range(0, 3)),
    44: ("incremental_alter_configs", range(0, 2)),
    45: ("alter_partition_reassignments", range(0, 2)),
    46: ("list_partition_reassignments", range(0, 1)),
    47: ("offset_delete", range(0, 1)),
    50: ("describe_user_scram_credentials", range(0, 1)),
    51: ("alter_user_scram_credentials", range(0, 1)),
    60: ("describe_cluster", range(0, 3)),
    61: ("describe_producers", range(0, 1)),
    65: ("describe_transactions", range(0, 1)),
    66: ("list_transactions", range(0, 2)),
    68: ("consumer_group_heartbeat", range(0, 2)),
    69: ("consumer_group_describe", range(0, 2)),
    75: ("describe_topic_partitions", range(0, 1)),
}


def api_name(module: str) -> str:
    """Kafka's name of the API whose module is `module`: "offset_commit" -> "OffsetCommit"."""
    return "".join(part.capitalize() for part in module.split("_"))


# What a Route reads from its message module on first use.
_FROM_MESSAGES = frozenset({"request", "response", "error_response"})


@dataclass(slots=True, eq=False)
class Route:
    """One API, made by `new_route`. `request`, `response` and `error_response` are its
    message module's (`protocol.messages.<module>`), imported by the first read of any of
    them (the route is an `_Unread` until then); `handler` is a stand-in that imports the
    handler's module on the first call (`load`), which puts the handler here. Nothing else
    changes a route (not frozen: a frozen dataclass takes twice as long to make, at every
    start)."""

    api_key: int
    name: str
    module: str
    versions: range
    handler: Handler
    request: type[Message] = dataclasses.field(init=False, repr=False)
    response: type[Message] = dataclasses.field(init=False, repr=False)
    error_response: Callable[[Any, ErrorCode, int], Message] = dataclasses.field(
        init=False, repr=False
    )
    # The handler for a broker without others (`Broker.alone`): `handler` without
    # broker.coordinator_guard's check of which broker coordinates a group or a
    # transaction, which lets every request through when there is one broker.
    alone: Handler = dataclasses.field(init=False, repr=False)


class _Unread(Route):
    """A route whose message module is not imported yet. The first read of `request`,
    `response` or `error_response` imports it, fills the three in and makes the route a
    plain Route. A class of its own rather than a `__getattr__` of Route's: Python 3.11
    specialises no attribute read of an instance whose class has a `__getattr__`, and the
    dispatch site reads a route's `request` and its handler on every request."""

    __slots__ = ()

    def __getattr__(self, attr: str) -> Any:
        # Reached only when a slot is not set yet: the three read from the message module.
        if attr not in _FROM_MESSAGES:
            raise AttributeError(f"'Route' object has no attribute {attr!r}")
        messages = importlib.import_module(f"protocol.messages.{self.module}")
        request = getattr(messages, f"{self.name}Request")
        response = getattr(messages, f"{self.name}Response")
        if self.api_key != request.API_KEY or not (
            request.VERSIONS == response.VERSIONS == self.versions
        ):
            raise RuntimeError(
                f"route {self.api_key} ({self.name}) serves versions {self.versions}, but "
                f"{messages.__name__} declares key {request.API_KEY}, request versions "
                f"{request.VERSIONS} and response versions {response.VERSIONS}"
            )
        self.request = request
        self.response = response
        self.error_response = messages.error_response
        self.__class__ = Route  # type: ignore[assignment]  # the same slots
        return getattr(self, attr)


def new_route(api_key: int, module: str, versions: range) -> Route:
    """The route of an API before anything of it is imported (see Route)."""
    route = _Unread(api_key, api_name(module), module, versions, None)  # type: ignore[arg-type]
    route.handler = route.alone = _Unloaded(route)
    return route


class _Unloaded:
    """A route's handler until its first call, which imports `broker.handlers.<module>` and
    puts its `handle` in the route (`load`), then runs it. A caller that read the handler
    before that (the journal) lands here and is passed on."""

    __slots__ = ("route",)

    def __init__(self, route: Route) -> None:
        self.route = route

    def __call__(self, ctx: RequestContext, body: Any) -> Awaitable[Any]:
        return _load(self.route)(ctx, body)


def _load(route: Route) -> Handler:
    if not isinstance(route.handler, _Unloaded):
        return route.handler
    # broker.coordinator_guard with the first handler: the routes need nothing of it before.
    from broker import coordinator_guard

    handle = importlib.import_module(f"broker.handlers.{route.module}").handle
    handler: Handler = coordinator_guard.wrap(route, handle)
    # In the route itself, which the dispatch site may hold from before this call: from now
    # on every request goes to the handler directly.
    route.alone = handle
    route.handler = handler
    return handler


def load(api_key: int) -> Handler:
    """Import the handler of the API `api_key` if not yet done; returns the handler as routed
    (wrapped by broker.coordinator_guard for group and transaction APIs): once loaded, the
    same handler every time."""
    return _load(_BY_KEY[api_key])


_BY_KEY: dict[int, Route] = {}
_SUPPORTED: list[ApiVersion] = []


def install(routes: dict[int, tuple[str, range]]) -> None:
    """Build the key -> route index from ROUTES (called once at import); no message or
    handler module is imported."""
    _BY_KEY.clear()
    for api_key, (module, versions) in sorted(routes.items()):
        _BY_KEY[api_key] = new_route(api_key, module, versions)
    global _SUPPORTED
    _SUPPORTED = [
        ApiVersion(api_key=r.api_key, min_version=r.versions.start, max_version=r.versions.stop - 1)
        for r in _BY_KEY.values()
    ]


def route_for(api_key: int) -> Route | None:
    return _BY_KEY.get(api_key)


def all_routes() -> list[Route]:
    return list(_BY_KEY.values())


def supported_versions() -> list[ApiVersion]:
    """ApiVersions' list: every routed API with its range of versions, by key. The same
    list until the table is installed again (the ApiVersions handler keeps its answers
    while it is): not to be changed."""
    return _SUPPORTED


install(ROUTES)
