"""The per-connection loop: read a frame, dispatch it, answer, repeat.

Kafka mutes a connection while one of its requests is being processed, so requests on one
connection are handled one at a time, in order, and responses go out in request order
(clients that pipeline, like librdkafka, simply wait in the socket buffer). kmock does the
same with one difference: a Produce that has appended its batches and waits only for the
fsync covering them (acks=all, see broker.durability) does not hold the connection. Its
response is queued, and the next requests are read and handled meanwhile; a writer task
sends the queued responses in request order as they become ready. Kafka needs no such
thing (it acknowledges from the page cache, durability coming from replicas); without it
one producer connection would wait out a whole fsync round per request.

What may wait is bounded: at most MAX_DEFERRED deferred responses per connection (each a
few small objects: the batches are in the log, not in memory), and at most one ready
response queued behind them (any other request, whose response may be large: a Fetch).
Past either bound the connection stops reading until the queue drains.

This is the one dispatch site of the broker:
  * a frame we cannot parse closes the connection (logged at INFO), as Kafka does; bytes
    after a complete request body are ignored, as Kafka ignores them;
  * an unknown API key or an unsupported version closes the connection, except ApiVersions,
    which is answered with UNSUPPORTED_VERSION and our version list in its v0 form so the
    client can pick a version it shares with us (KIP-511);
  * `KafkaError` raised by a handler becomes the API's `error_response(request, code,
    version)`;
  * any other exception is a bug: it is logged with its traceback, answered with
    UNKNOWN_SERVER_ERROR, and the connection is closed.
A connection closed for any reason first sends the responses already queued, as Kafka
sends the responses of requests it finished.
"""

from __future__ import annotations

import collections
import logging
import math
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn

import trio

from broker.handlers import Deferred
from broker.routes import Route, route_for
from protocol.errors import ErrorCode, KafkaError
from protocol.frames import (
    API_VERSIONS_KEY,
    FrameBuffer,
    FrameTooLarge,
    frame_response,
    parse_request_header,
    peek_request_key,
    response_header_is_flexible,
)
from protocol.schema import DecodeError, decode, encode_chunks

if TYPE_CHECKING:
    from broker.server import Broker

log = logging.getLogger("broker.connection")

RECEIVE_BYTES = 65536  # keep receives below glibc's mmap threshold (PERF-NOTES §3)
MAX_DEFERRED = 256  # deferred responses per connection before it stops reading


class RequestContext:
    """What a handler knows about the request besides its body."""

    __slots__ = ("api_version", "broker", "client_host", "client_id", "connection_id")

    def __init__(
        self, broker: Broker, api_version: int, client_id: str, client_host: str, connection_id: int
    ) -> None:
        self.broker = broker
        self.api_version = api_version
        self.client_id = client_id
        self.client_host = client_host
        self.connection_id = connection_id


class CloseConnection(Exception):
    """Stop serving this connection (after logging why)."""


class _Call(NamedTuple):
    """A request being answered, as the dispatch site reports and encodes its response."""

    broker: Broker
    route: Route
    version: int
    correlation_id: int
    client_id: str | None
    started: float


class _Pending:
    """A queued response whose handler returned a `Deferred`."""

    __slots__ = ("call", "deferred")

    def __init__(self, call: _Call, deferred: Deferred) -> None:
        self.call = call
        self.deferred = deferred

    async def chunks(self) -> list[Any] | None:
        try:
            response = await self.deferred.finish()
        except Exception:
            _failed(self.call)
        return _answer(self.call, ErrorCode.NONE, response)


class _Connection:
    __slots__ = (
        "broker",
        "client_host",
        "connection_id",
        "frames",
        "idle_s",
        "metrics",
        "nursery",
        "queue",
        "reason",
        "receiving",
        "room",
        "stream",
        "writing",
    )

    def __init__(
        self, broker: Broker, stream: trio.SocketStream, connection_id: int, client_host: str
    ) -> None:
        self.broker = broker
        self.stream = stream
        self.connection_id = connection_id
        self.client_host = client_host
        self.metrics = broker.metrics
        self.frames = FrameBuffer(broker.config["socket.request.max.bytes"])
        self.idle_s = broker.config["connections.max.idle.ms"] / 1000
        self.reason: str | None = None
        # Responses not sent yet, in request order: chunks, or a _Pending at the head.
        self.queue: collections.deque[list[Any] | _Pending] = collections.deque()
        self.writing = False
        self.room: trio.Event | None = None  # set when the queue shrinks
        self.receiving: trio.CancelScope | None = None  # the idle timeout of a receive
        self.nursery: trio.Nursery | None = None

    def end(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def _receive_deadline(self) -> float:
        # Idle only when nothing is queued: a client waiting for a deferred response is not.
        return math.inf if self.queue else trio.current_time() + self.idle_s

    async def read(self) -> None:
        frames, stream, metrics = self.frames, self.stream, self.metrics
        while True:
            frame: bytes | bytearray | None = frames.next_frame()
            if frame is None and (large := frames.start_large_frame(RECEIVE_BYTES)) is not None:
                frame, got = large
                already = got
                view = memoryview(frame)
                with trio.move_on_after(self.idle_s) as idle:
                    while got < len(frame):
                        n = await stream.socket.recv_into(view[got:])
                        if n == 0:
                            break
                        got += n
                        idle.deadline = trio.current_time() + self.idle_s
                metrics.bytes_in(got - already)
                if got < len(frame):
                    self.end(
                        "idle timeout mid-frame"
                        if idle.cancelled_caught
                        else "closed by client mid-frame"
                    )
                    return
            if frame is None:
                with trio.CancelScope(deadline=self._receive_deadline()) as scope:
                    self.receiving = scope
                    data = await stream.receive_some(RECEIVE_BYTES)
                self.receiving = None
                if scope.cancelled_caught:
                    self.end("idle timeout")
                    return
                if not data:
                    self.end("closed by client mid-frame" if len(frames) else "closed by client")
                    return
                metrics.bytes_in(len(data))
                frames.feed(data)
                continue
            out = await _handle_frame(self.broker, frame, self.client_host, self.connection_id)
            if out is None:
                continue
            if not self.queue and not isinstance(out, _Pending):
                await self.send(out)
                continue
            self.queue.append(out)
            if not self.writing:
                self.writing = True
                assert self.nursery is not None
                self.nursery.start_soon(self.write)
            # A ready response behind deferred ones: wait until it is sent before reading on.
            limit = MAX_DEFERRED if isinstance(out, _Pending) else 1
            while len(self.queue) >= limit:
                self.room = trio.Event()
                await self.room.wait()

    async def write(self) -> None:
        """Send the queued responses in order, each once it is ready."""
        try:
            while self.queue:
                head = self.queue[0]
                out = await head.chunks() if isinstance(head, _Pending) else head
                if out is not None:
                    await self.send(out)
                self.queue.popleft()
                if self.room is not None:
                    self.room.set()
        except (
            CloseConnection,
            trio.BrokenResourceError,
            trio.ClosedResourceError,
            ConnectionError,
        ) as e:
            # Close the socket rather than cancel the reader: a request it is handling (an
            # OffsetCommit waiting for its fsync) must finish, or the coordinator would wait
            # for it forever. The reader's next receive or send fails and it stops.
            self.end(_reason(e))
            self.queue.clear()
            if self.room is not None:
                self.room.set()
            await self.stream.aclose()
        finally:
            self.writing = False
        if self.receiving is not None:
            # The queue is empty: the connection may idle again from now.
            self.receiving.deadline = trio.current_time() + self.idle_s

    async def send(self, out: list[Any]) -> None:
        # A client that stops reading its responses makes no progress either: Kafka
        # closes it after connections.max.idle.ms like one that stops sending, so it
        # cannot pin a task, a descriptor and a response forever.
        with trio.move_on_after(self.idle_s) as stalled:
            self.metrics.bytes_out(await send_chunks(self.stream, out))
        if stalled.cancelled_caught:
            raise CloseConnection("idle timeout (client not reading its responses)")


def _reason(e: BaseException) -> str:
    if isinstance(e, (CloseConnection, FrameTooLarge)):
        return str(e)
    return f"connection lost ({e.__class__.__name__})"


async def serve_connection(broker: Broker, stream: trio.SocketStream, connection_id: int) -> None:
    try:
        peer = stream.socket.getpeername()
        client_host = f"/{peer[0]}"
    except OSError:
        client_host = "/unknown"
    conn = _Connection(broker, stream, connection_id, client_host)
    broker.metrics.connection_opened()
    log.info("connection %d opened from %s", connection_id, client_host[1:])
    try:
        async with trio.open_nursery() as conn.nursery:
            try:
                await conn.read()
            except (FrameTooLarge, CloseConnection) as e:
                conn.end(_reason(e))
            except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError) as e:
                conn.end(_reason(e))
                # Nobody to send the queued responses to. The writer waits only for fsyncs
                # of batches already appended, which go on without it.
                conn.nursery.cancel_scope.cancel()
            # Leaving the nursery waits for the writer: queued responses still go out.
    finally:
        broker.metrics.connection_closed()
        log.info(
            "connection %d from %s closed: %s",
            connection_id,
            client_host[1:],
            conn.reason or "closed by client",
        )
        with trio.CancelScope(shield=True):
            await stream.aclose()


COALESCE_BYTES = 65536  # chunks smaller than this are joined; larger ones go out as they are


async def send_chunks(stream: trio.abc.SendStream, chunks: list[Any]) -> int:
    """Send a response given as chunks: small ones joined (one send instead of hundreds),
    large ones (record data) sent without copying. Returns the bytes sent."""
    total = 0
    pending: list[Any] = []
    for chunk in chunks:
        n = len(chunk)
        total += n
        if n >= COALESCE_BYTES:
            if pending:
                await stream.send_all(b"".join(pending))
                pending = []
            await stream.send_all(chunk)
        else:
            pending.append(chunk)
    if pending:
        await stream.send_all(b"".join(pending))
    return total


async def _handle_frame(
    broker: Broker, frame: bytes | bytearray, client_host: str, connection_id: int
) -> list[Any] | _Pending | None:
    try:
        api_key, version, correlation_id = peek_request_key(frame)
    except DecodeError as e:
        raise CloseConnection(f"unreadable request header: {e}") from None
    route = route_for(api_key)
    if route is None:
        raise CloseConnection(f"unknown API key {api_key}")
    if version not in route.request.VERSIONS:
        if api_key == API_VERSIONS_KEY:
            return _unsupported_api_versions(correlation_id)
        raise CloseConnection(f"unsupported version {version} of {route.name}")
    flexible = route.request.is_flexible(version)
    try:
        header, body_pos = parse_request_header(frame, flexible)
        # Bytes after a well-formed body are ignored, as Kafka's request parser ignores them:
        # librdkafka 2.16 sends three extra bytes after a Metadata v12 for all topics.
        request = decode(route.request, version, frame, body_pos, allow_trailing=True)
    except DecodeError as e:
        if api_key == API_VERSIONS_KEY:
            # KIP-511: an ApiVersions we cannot parse (a newer client's tagged fields) is
            # answered with INVALID_REQUEST rather than a close.
            return _respond(
                route,
                version,
                correlation_id,
                route.error_response(route.request(), ErrorCode.INVALID_REQUEST, version),
            )
        raise CloseConnection(f"malformed {route.name} v{version}: {e}") from None
    client_id = header.client_id
    ctx = RequestContext(broker, version, client_id or "", client_host, connection_id)
    call = _Call(broker, route, version, correlation_id, client_id, trio.current_time())
    code = ErrorCode.NONE
    try:
        try:
            response = await route.handler(ctx, request)
        except KafkaError as e:
            code = e.code
            log.debug("%s v%d from %s: %s", route.name, version, client_id, e)
            response = route.error_response(request, e.code, version)
    except Exception:
        _failed(call)
    if isinstance(response, Deferred):
        return _Pending(call, response)
    return _answer(call, code, response)


def _failed(call: _Call) -> NoReturn:
    """A handler (or encoding its response) raised what it must not: a bug."""
    log.exception("%s v%d from %s failed", call.route.name, call.version, call.client_id)
    call.broker.metrics.request_done(call.route.name, ErrorCode.UNKNOWN_SERVER_ERROR, 0.0)
    raise CloseConnection(f"internal error handling {call.route.name}") from None


def _answer(call: _Call, code: ErrorCode, response: Any) -> list[Any] | None:
    """Encode a handler's response (None: Produce with acks=0, no response at all)."""
    route = call.route
    try:
        # Encoding is inside the dispatch site too: a response that cannot be encoded is a
        # bug reported with its API, version and client, like any other.
        out = (
            None
            if response is None
            else _respond(route, call.version, call.correlation_id, response)
        )
    except Exception:
        _failed(call)
    call.broker.metrics.request_done(route.name, code, trio.current_time() - call.started)
    if log.isEnabledFor(logging.DEBUG):
        log.debug(
            "%s v%d corr=%d from %s -> %s",
            route.name,
            call.version,
            call.correlation_id,
            call.client_id,
            code.name,
        )
    return out


def _respond(route: Route, version: int, correlation_id: int, response: Any) -> list[Any]:
    body = encode_chunks(response, version)
    flexible_header = response_header_is_flexible(
        route.api_key, route.response.is_flexible(version)
    )
    return frame_response(correlation_id, body, flexible_header)


def _unsupported_api_versions(correlation_id: int) -> list[Any]:
    from broker.handlers.api_versions import supported_versions
    from protocol.messages.api_versions import ApiVersionsResponse

    response = ApiVersionsResponse(
        error_code=ErrorCode.UNSUPPORTED_VERSION, api_keys=supported_versions()
    )
    return frame_response(correlation_id, encode_chunks(response, 0), False)
