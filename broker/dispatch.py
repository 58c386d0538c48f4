"""The dispatch site: a request frame in, its response's chunks out (or None: no response).

Every request the broker answers goes through `dispatch` (broker.connection reads the frames
and writes what it returns; broker.security.authenticator hands it the frames of a SASL
exchange through `handle_frame`):
  * a frame we cannot parse closes the connection (logged at INFO), as Kafka does; bytes
    after a complete request body are ignored, as Kafka ignores them;
  * an unknown API key or an unsupported version closes the connection, except ApiVersions,
    which is answered with UNSUPPORTED_VERSION and our version list in its v0 form so the
    client can pick a version it shares with us (KIP-511);
  * `KafkaError` raised by a handler becomes the API's `error_response(request, code,
    version)`;
  * any other exception is a bug: it is logged with its traceback and answered as Kafka
    answers it (KafkaApis' handleError): the API's error response with UNKNOWN_SERVER_ERROR,
    the connection staying open. A Produce with acks=0 has no response to carry the error,
    and Kafka closes the connection instead: so does kmock, and so it does when even the
    error response cannot be built or encoded, or when the failure comes after the handler
    returned (a deferred acks=all Produce, whose request is no longer kept).
  * the test controls (broker.controls) hook in here and nowhere else: the fault table is
    consulted before the handler runs, only for an API a fault names (one dict lookup per
    request otherwise), and answers with the API's `error_response`, late, or by closing;
    the request journal records each request where metrics count it, when it is on (the
    admin endpoint): the frame as it came and the response as it went out.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

import trio

from broker import routes
from broker.context import RequestContext
from broker.handlers import Deferred, Encoded
from broker.metrics import REQUEST_CLOCK
from broker.routes import Route, route_for
from broker.security import enforce
from broker.security.authz import Authz, authz, session_expired
from protocol.errors import ErrorCode, KafkaError
from protocol.frames import (
    API_VERSIONS_KEY,
    frame_response,
    header_tags_end,
    request_client_id,
    request_header,
    response_header_is_flexible,
)
from protocol.releases import accepts, intersect
from protocol.schema import DecodeError, decode, encode_chunks

if TYPE_CHECKING:
    from broker.broker import Broker

# The requests' log lines keep the connection's logger name: they are about a connection's
# requests, and `kmock serve --log-level` users filter on it.
log = logging.getLogger("broker.connection")


class Caller(Protocol):
    """What the dispatch site reads and records of the connection a frame came on."""

    broker: Broker
    client_host: str
    connection_id: int
    listener_name: str
    client_id: str | None
    api_versions: dict[int, int]
    requests: int
    # Looked up once per connection rather than per request: the broker's security state,
    # the clock requests are timed by (`request_clock`), and the request contexts made so
    # far, by version (see `_new_context`).
    authz: Authz
    now: Callable[[], float] | None
    contexts: dict[int, RequestContext]

    async def swallow(self) -> None: ...


def request_clock(broker: Broker) -> Callable[[], float] | None:
    """What a connection times its requests by: REQUEST_CLOCK when something reads the
    times, that is with the admin endpoint on (its /metrics, its request journal); else
    None, and requests are neither timed nor counted in the metrics (two clock reads and
    a histogram update per request that nobody could see)."""
    return REQUEST_CLOCK if broker.admin_endpoint else None


class CloseConnection(Exception):
    """Stop serving this connection (after logging why)."""


class Call(NamedTuple):
    """A request being answered, as the dispatch site reports and encodes its response."""

    broker: Broker
    route: Route
    version: int
    correlation_id: int
    client_id: str | None
    started: float | None  # None: not timed (`request_clock`)
    conn: Caller
    # The decoded request, for the UNKNOWN_SERVER_ERROR answer; None once the response is
    # deferred, so that a Produce waiting for its fsync does not keep its frame (the records
    # are views of it) in memory: 256 waiting 1 MB Produce requests would hold 256 MB.
    request: Any
    fault: int | None = None  # the id of the fault that answered it (broker.controls.faults)
    frame: bytes | bytearray | None = None  # the request as it came, for the journal
    flexible_header: bool = False  # whether the response header is v1


# Call(*fields) without calling namedtuple's generated __new__, a Python function: this
# runs once per request.
_new_call = functools.partial(tuple.__new__, Call)


class Pending:
    """A queued response whose handler returned a `Deferred`."""

    __slots__ = ("call", "deferred")

    def __init__(self, call: Call, deferred: Deferred) -> None:
        self.call = call
        self.deferred = deferred

    async def chunks(self) -> list[Any] | None:
        try:
            response = await self.deferred.finish()
        except Exception:
            return _failed(self.call)
        return _answer(self.call, ErrorCode.NONE, response)


def _accepted(broker: Broker, api_key: int, version: int, correlation_id: int) -> Any:
    """The route of an API version the broker accepts, whether its request header is
    flexible and whether its response header is, kept in `broker.accepted_versions` for the
    next request of that version (a bounded set: the versions the route table implements);
    the UNSUPPORTED_VERSION answer of an ApiVersions it does not accept; or CloseConnection."""
    route = route_for(api_key)
    if route is None:
        raise CloseConnection(f"unknown API key {api_key}")
    release = broker.config["kafka.version"]
    # A version kmock implements but the configured Kafka release does not accept is refused
    # the same way (protocol.releases): Kafka 4.x lists Produce v0-2 and closes on them.
    if version not in route.request.VERSIONS or not accepts(release, api_key, version):
        if api_key == API_VERSIONS_KEY:
            return _unsupported_api_versions(correlation_id, release)
        raise CloseConnection(f"unsupported version {version} of {route.name}")
    accepted = broker.accepted_versions[(api_key, version)] = (
        route,
        route.request.is_flexible(version),
        response_header_is_flexible(api_key, route.response.is_flexible(version)),
    )
    return accepted


async def dispatch(conn: Caller, frame: bytes | bytearray) -> list[Any] | Pending | None:
    broker = conn.broker
    try:
        api_key, version, correlation_id, client_id, body_pos = request_header(frame)
    except DecodeError as e:
        raise CloseConnection(f"unreadable request header: {e}") from None
    accepted = broker.accepted_versions.get((api_key, version))
    if accepted is None:
        accepted = _accepted(broker, api_key, version, correlation_id)
        if type(accepted) is list:  # UNSUPPORTED_VERSION for an ApiVersions
            return accepted
    route, flexible, flexible_header = accepted
    try:
        if body_pos < 0:  # raises what is wrong with the client id
            client_id, body_pos = request_client_id(frame, flexible)
        elif flexible:
            body_pos = header_tags_end(frame, body_pos)
        # Bytes after a well-formed body are ignored, as Kafka's request parser ignores them:
        # librdkafka 2.16 sends three extra bytes after a Metadata v12 for all topics.
        request = decode(route.request, version, frame, body_pos, allow_trailing=True)
    except DecodeError as e:
        if api_key == API_VERSIONS_KEY:
            # KIP-511: an ApiVersions we cannot parse (a newer client's tagged fields) is
            # answered with INVALID_REQUEST rather than a close.
            return respond(
                route,
                version,
                correlation_id,
                route.error_response(route.request(), ErrorCode.INVALID_REQUEST, version),
            )
        raise CloseConnection(f"malformed {route.name} v{version}: {e}") from None
    now = conn.now
    if now is None:
        started = None
    else:  # the admin endpoint is on: its GET /v1/connections shows these
        started = now()
        conn.client_id = client_id
        conn.api_versions[api_key] = version
        conn.requests += 1
    security = conn.authz
    ctx = conn.contexts.get(version)  # none kept with an authorizer (below)
    if ctx is None or ctx.client_id != (client_id or ""):
        ctx = _new_context(conn, version, client_id)
        if not security.enabled:  # with an authorizer, broker.security.enforce writes to it
            conn.contexts[version] = ctx
    call = _new_call(
        (
            broker,
            route,
            version,
            correlation_id,
            client_id,
            started,
            conn,
            request,
            None,
            frame,  # for the journal (broker.controls.journal decides what it keeps of it)
            flexible_header,
        )
    )
    # The one place faults are consulted (broker.controls.faults), for an API one names.
    if api_key in broker.faults.armed:
        fault = broker.faults.take(api_key, version, request, client_id, broker.topic_name)
        if fault is not None:
            answered = await _fault(call, fault)
            if answered is not None:
                return answered
    code = ErrorCode.NONE
    body = None  # the response's body, when the handler gave it encoded
    if security.sessions and (expired := session_expired(broker, conn.connection_id, request)):
        raise CloseConnection(expired)  # KIP-368 (broker.security.authz)
    try:
        try:
            handler = route.alone if broker.alone else route.handler
            if security.enabled:
                # ACLs: the handler serves what the principal may do (broker.security.enforce)
                response = await enforce.handle(ctx, request, handler, route.error_response)
            else:
                response = await handler(ctx, request)
            if type(response) is Encoded:  # kept encoded (Metadata): sent as it is
                body, response = response.body, response.response
        except KafkaError as e:
            code = e.code
            log.debug("%s v%d from %s: %s", route.name, version, client_id, e)
            response = route.error_response(request, e.code, version)
    except enforce.Refused as e:
        raise CloseConnection(str(e)) from None
    except Exception:
        return _failed(call)
    if isinstance(response, Deferred):
        return Pending(call._replace(request=None, frame=None), response)
    return _answer(call, code, response, body)


def _new_context(conn: Caller, version: int, client_id: str | None) -> RequestContext:
    """The context of a request of `version` from `client_id` on `conn`. Without an
    authorizer nothing writes to a context, so a connection keeps one per version it uses
    (a bounded set) and a request reuses it while the client id stays the same."""
    return RequestContext(
        conn.broker,
        version,
        client_id or "",
        conn.client_host,
        conn.connection_id,
        routes,
        conn.listener_name,
    )


async def _fault(call: Call, fault: Any) -> list[Any] | None:
    """Apply a fault to a request: its answer, or None to handle the request as usual
    (a delay alone). Raises CloseConnection for "disconnect"; "drop" never returns."""
    call = call._replace(fault=fault.id)
    if fault.delay_ms:
        await trio.sleep(fault.delay_ms / 1000)  # real time: "answer late"
    if fault.action != "error":
        _journal(call, ErrorCode.NONE, None, fault.action)
        _log_fault(call, fault.id, fault.action)
        if fault.action == "drop":
            await call.conn.swallow()
        raise CloseConnection(f"fault {fault.id}: disconnect")
    if fault.error is None:
        return None
    if getattr(call.request, "acks", None) == 0:
        # A Produce with acks=0 has no response to carry the error: Kafka closes the
        # connection when one fails, and so does kmock (as in _failed).
        _journal(call, fault.error, None, "disconnect")
        raise CloseConnection(f"fault {fault.id}: {fault.error.name} on a Produce with acks=0")
    _log_fault(call, fault.id, fault.error.name)
    return _answer(
        call, fault.error, call.route.error_response(call.request, fault.error, call.version)
    )


def _log_fault(call: Call, fault_id: int, what: str) -> None:
    name, version, client_id = call.route.name, call.version, call.client_id
    log.info("%s v%d from %s: fault %d: %s", name, version, client_id, fault_id, what)


def _journal(call: Call, code: int, out: list[Any] | None, outcome: str) -> None:
    journal = call.broker.journal
    if journal is not None:
        journal.record_as(call, code, None, out, outcome, REQUEST_CLOCK())


class _Authenticating:
    """A connection still in its SASL exchange (broker.security.authenticator), which
    answers ApiVersions through this dispatch site before the connection is served: what
    the dispatch site records of a request, without a socket of its own."""

    __slots__ = (
        "api_versions",
        "authz",
        "broker",
        "client_host",
        "client_id",
        "connection_id",
        "contexts",
        "listener_name",
        "now",
        "requests",
    )

    def __init__(
        self, broker: Broker, client_host: str, connection_id: int, listener_name: str
    ) -> None:
        self.broker = broker
        self.client_host = client_host
        self.connection_id = connection_id
        self.listener_name = listener_name
        self.client_id: str | None = None
        self.api_versions: dict[int, int] = {}
        self.requests = 0
        self.authz = authz(broker)
        self.now = request_clock(broker)
        self.contexts: dict[int, RequestContext] = {}

    async def swallow(self) -> None:
        """A dropped request is never answered: the SASL exchange waits until it is closed."""
        await trio.sleep_forever()


async def handle_frame(
    broker: Broker,
    frame: bytes | bytearray,
    client_host: str,
    connection_id: int,
    listener_name: str,
) -> list[Any] | Pending | None:
    """The dispatch site for a frame read during the SASL exchange (see _Authenticating)."""
    return await dispatch(_Authenticating(broker, client_host, connection_id, listener_name), frame)


def _failed(call: Call) -> list[Any]:
    """A handler (or encoding its response) raised what it must not: a bug. Called in the
    `except` clause: logs the exception, returns the UNKNOWN_SERVER_ERROR answer, or raises
    CloseConnection where there can be none (see the module docstring)."""
    route = call.route
    log.exception("%s v%d from %s failed", route.name, call.version, call.client_id)
    code = ErrorCode.UNKNOWN_SERVER_ERROR
    out = None
    if call.request is not None and getattr(call.request, "acks", None) != 0:
        try:
            response = route.error_response(call.request, code, call.version)
            out = respond(route, call.version, call.correlation_id, response)
        except Exception:
            log.exception("%s v%d: the error response failed too", route.name, call.version)
    if call.started is not None:
        call.broker.metrics.request_done(route.name, code, REQUEST_CLOCK() - call.started)
    _journal(call, code, out, "failed" if out is not None else "failed, connection closed")
    if out is None:
        raise CloseConnection(f"internal error handling {route.name}") from None
    return out


def _answer(
    call: Call, code: ErrorCode, response: Any, body: bytes | None = None
) -> list[Any] | None:
    """Encode a handler's response (None: Produce with acks=0, no response at all);
    `body`: the response already encoded (broker.handlers.Encoded)."""
    # One unpacking rather than a generic attribute lookup per field (see Journal.record).
    broker, route, version, correlation_id, client_id, started, conn, req, fault, frame, flex = call
    try:
        # Encoding is inside the dispatch site too: a response that cannot be encoded is a
        # bug reported with its API, version and client, like any other.
        if response is None:
            out = None
        else:
            chunks = encode_chunks(response, version) if body is None else [body]
            out = frame_response(correlation_id, chunks, flex)
    except Exception:
        return _failed(call)
    if started is not None:  # timed (request_clock): the admin endpoint is on
        ended = conn.now()  # type: ignore[misc]  # not None: it gave `started`
        broker.metrics.request_done(route.name, code, ended - started)
        # The journal is kept only with the admin endpoint too (Broker.admin_endpoint), so
        # only for timed requests.
        journal = broker.journal
        if journal is not None:
            journal.record(call, code, response, out, ended, started, conn, req, fault, frame)
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "%s v%d corr=%d from %s -> %s",
            route.name,
            version,
            correlation_id,
            client_id,
            code.name,
        )
    return out


def respond(
    route: Route, version: int, correlation_id: int, response: Any, body: bytes | None = None
) -> list[Any]:
    chunks = encode_chunks(response, version) if body is None else [body]
    flexible_header = response_header_is_flexible(
        route.api_key, route.response.is_flexible(version)
    )
    return frame_response(correlation_id, chunks, flexible_header)


def _unsupported_api_versions(correlation_id: int, release: str) -> list[Any]:
    from protocol.messages.api_versions import ApiVersionsResponse

    response = ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION,
        api_keys=intersect(routes.supported_versions(), release),
    )
    return frame_response(correlation_id, encode_chunks(response, 0), False)
