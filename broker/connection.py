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
Past either bound the connection stops reading until the queue drains. So does a connection
whose next large frame finds no room in `queued.max.request.bytes`: frames over
RECEIVE_BYTES are received into buffers of their own whose memory follows the bytes that
arrived and is reserved from the broker's pool (broker.limits).

This is the one dispatch site of the broker:
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
A connection closed for any reason first sends the responses already queued, as Kafka
sends the responses of requests it finished.

The socket is read and written with plain non-blocking calls on its descriptor (os.read,
os.readv, os.writev), and only a call that would block waits, in trio's
`wait_readable`/`wait_writable`. trio's own socket methods add two trips through the
scheduler to every call (a cancellation check and a cancel-shielded checkpoint): on a
request/response connection that was a third of the broker's cost for a small request
(bench/RESULTS.md, §3). A response goes out in one writev however many chunks it has.
Idle connections are not timed per call either: `expire_idle_connections` looks at every
connection a few times per `connections.max.idle.ms` and closes those blocked on their
client for longer (receiving with nothing queued, or sending to a client that does not
read), as Kafka's idle-connection check does: IDLE_CHECKS times per limit, so a
connection is closed between 1 and 1 + 1/IDLE_CHECKS times the limit after its last
progress.
"""

from __future__ import annotations

import collections
import logging
import os
from typing import TYPE_CHECKING, Any, NamedTuple

import trio

from broker import routes
from broker.context import RequestContext
from broker.handlers import Deferred, Encoded
from broker.limits import DIRECT_FRAME_BYTES, frame_buffer
from broker.routes import Route, route_for
from broker.security import enforce
from broker.security.authz import session_expired
from protocol.errors import ErrorCode, KafkaError
from protocol.frames import (
    API_VERSIONS_KEY,
    FrameBuffer,
    FrameTooLarge,
    frame_response,
    peek_request_key,
    request_client_id,
    response_header_is_flexible,
)
from protocol.releases import accepts, intersect
from protocol.schema import DecodeError, decode, encode_chunks
from storage.segment import IOV_MAX

if TYPE_CHECKING:
    from broker.broker import Broker

log = logging.getLogger("broker.connection")

RECEIVE_BYTES = 65536  # keep receives below glibc's mmap threshold (PERF-NOTES §3)
LARGE_READ_BYTES = 1024 * 1024  # request memory reserved per read of a mapped frame
MAX_DEFERRED = 256  # deferred responses per connection before it stops reading
IDLE_CHECKS = 10  # idle checks per connections.max.idle.ms


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
    conn: _Connection | _Authenticating
    # The decoded request, for the UNKNOWN_SERVER_ERROR answer; None once the response is
    # deferred, so that a Produce waiting for its fsync does not keep its frame (the records
    # are views of it) in memory: 256 waiting 1 MB Produce requests would hold 256 MB.
    request: Any
    fault: int | None = None  # the id of the fault that answered it (broker.controls.faults)
    frame: bytes | None = None  # the request as it came, for the journal (None: not kept)


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
            return _failed(self.call)
        return _answer(self.call, ErrorCode.NONE, response)


class _Connection:
    __slots__ = (
        "address",
        "api_versions",
        "broker",
        "client_host",
        "client_id",
        "clock",
        "connection_id",
        "drained_at",
        "frames",
        "listener_name",
        "memory",
        "memory_wait",
        "metrics",
        "mid_frame",
        "nursery",
        "opened_ms",
        "queue",
        "read_since",
        "reason",
        "requests",
        "reserved",
        "room",
        "sock",
        "waited",
        "write_since",
        "writing",
    )

    def __init__(
        self,
        broker: Broker,
        stream: trio.SocketStream,
        connection_id: int,
        client_host: str,
        listener_name: str,
    ) -> None:
        self.broker = broker
        self.listener_name = listener_name  # the listener that accepted it
        self.sock = stream.socket  # for fileno(), close() and trio's waits only
        self.connection_id = connection_id
        self.client_host = client_host
        self.clock = broker.clock  # idle times are measured on the broker's clock
        self.metrics = broker.metrics
        # What GET /v1/connections shows: the client id of the last request, the version of
        # each API used (the last one), the requests read.
        self.client_id: str | None = None
        self.api_versions: dict[int, int] = {}
        self.requests = 0
        self.opened_ms = broker.clock.wall_ms()
        try:
            peer = stream.socket.getpeername()
        except OSError:
            peer = None
        # A TLS connection is served over a local socket pair (broker.security.gate), whose
        # peer has no address: the client's is `client_host`.
        if isinstance(peer, tuple):
            self.address = f"{peer[0]}:{peer[1]}"
        else:
            self.address = client_host.lstrip("/")
        self.frames = FrameBuffer(broker.config["socket.request.max.bytes"])
        self.memory = broker.memory_pool
        self.memory_wait: trio.CancelScope | None = None  # while waiting for request memory
        self.reserved = 0  # bytes of request memory held by the frame in progress
        self.reason: str | None = None
        # Responses not sent yet, in request order: chunks, or a _Pending at the head.
        self.queue: collections.deque[list[Any] | _Pending] = collections.deque()
        self.writing = False
        self.room: trio.Event | None = None  # set when the queue shrinks
        self.nursery: trio.Nursery | None = None
        # What expire_idle_connections looks at: since when the connection has waited to
        # read / to write (None: it is not waiting), when its queue last became empty, and
        # whether a frame is half received.
        self.read_since: float | None = None
        self.write_since: float | None = None
        self.drained_at = self.clock.now()
        self.mid_frame = False
        self.waited = False  # the reader went through the scheduler since its last request

    def end(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def _fd(self) -> int:
        fd: int = self.sock.fileno()
        if fd < 0:  # closed (by the writer or the idle check) while this task was elsewhere
            raise trio.ClosedResourceError("connection closed")
        return fd

    async def _wait_readable(self) -> None:
        self.read_since = self.clock.now()
        try:
            await trio.lowlevel.wait_readable(self.sock)
        finally:
            self.read_since = None
        self.waited = True

    def idle_reason(self, now: float, idle_s: float) -> str | None:
        """Why this connection should be closed as idle at `now`, if it should."""
        if self.write_since is not None and now - self.write_since >= idle_s:
            return "idle timeout (client not reading its responses)"
        # Waiting to read is idle only with nothing queued: a client waiting for a deferred
        # response is not idle.
        if (
            self.read_since is not None
            and not self.queue
            and now - max(self.read_since, self.drained_at) >= idle_s
        ):
            return (
                "idle timeout mid-frame" if self.mid_frame or len(self.frames) else "idle timeout"
            )
        return None

    def describe(self) -> dict[str, Any]:
        """What GET /v1/connections shows of this connection."""
        versions = {}
        for key, version in sorted(self.api_versions.items()):
            route = route_for(key)
            versions[route.name if route else str(key)] = version
        return {
            "connection": self.connection_id,
            "client_id": self.client_id,
            "address": self.address,
            "opened_ms": self.opened_ms,
            "requests": self.requests,
            "api_versions": versions,
        }

    async def swallow(self) -> None:
        """Read and drop whatever the client sends until it closes: a request a fault
        drops is never answered, and nothing after it either (a broker that hangs)."""
        while True:
            try:
                data = os.read(self._fd(), RECEIVE_BYTES)
            except BlockingIOError:
                await self._wait_readable()
                continue
            if not data:
                raise CloseConnection("closed by client after a dropped request")

    def close_idle(self, reason: str) -> None:
        """Close the socket: the tasks waiting on it get ClosedResourceError and stop. (Not a
        cancellation: a request being handled, an OffsetCommit waiting for its fsync, must
        finish, or the coordinator would wait for it forever.)"""
        self.end(reason)
        if self.memory_wait is not None:
            self.memory_wait.cancel()
        self.sock.close()

    async def read(self) -> None:
        frames, metrics = self.frames, self.metrics
        # The last read returned less than it asked for: the socket had nothing more then,
        # so the next read waits for it first rather than fail with EAGAIN (a system call
        # and an exception per request of a client that waits for its answers).
        drained = False
        while True:
            frame: Any = frames.next_frame()
            if frame is None and len(frames) >= 4:
                size = len(frames) - 4 + frames.bytes_needed()
                # A large frame gets a buffer of its own once RECEIVE_BYTES of it have
                # arrived: until then it costs what arrived, like a small one.
                if size > RECEIVE_BYTES and len(frames) >= RECEIVE_BYTES:
                    drained = False
                    frame = await self._receive_large(size)
                    if frame is None:
                        return
            if frame is None:
                if drained:
                    drained = False
                    await self._wait_readable()
                try:
                    data = os.read(self._fd(), RECEIVE_BYTES)
                except BlockingIOError:
                    await self._wait_readable()
                    continue
                if not data:
                    self.end("closed by client mid-frame" if len(frames) else "closed by client")
                    return
                metrics.bytes_in(len(data))
                frames.feed(data)
                drained = len(data) < RECEIVE_BYTES
                continue
            if not self.waited:
                # Frames already buffered (a client that pipelines): let other tasks run
                # between its requests.
                await trio.lowlevel.checkpoint()
            self.waited = False
            try:
                out = await _handle_frame(self, frame)
            finally:
                del frame
                self.release_memory()
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

    async def _receive_large(self, size: int) -> Any:
        """Receive the frame in progress, of `size` > RECEIVE_BYTES bytes, straight into a
        buffer of its own (see broker.limits for how its memory is allocated and reserved).
        Returns the frame, or None if the client closed the connection first."""
        frames, memory = self.frames, self.memory
        direct = size <= DIRECT_FRAME_BYTES
        if direct:
            await self._reserve(size)
            self.reserved = size
            large = frames.start_large_frame(RECEIVE_BYTES)
        else:
            large = frames.start_large_frame(RECEIVE_BYTES, frame_buffer)
        assert large is not None  # the frame in progress is larger and incomplete
        buffer, got = large
        if not direct:
            memory.charge(got)
            self.reserved = got
        already = got
        view = memoryview(buffer)
        grant = 0  # bytes reserved for the next reads of a mapped frame
        self.mid_frame = True
        while got < size:
            if direct:
                end = size
            else:
                if not grant:
                    grant = min(size - got, LARGE_READ_BYTES)
                    await self._reserve(grant)
                    self.reserved += grant
                end = got + grant
            try:
                n = os.readv(self._fd(), [view[got:end]])
            except BlockingIOError:
                await self._wait_readable()
                continue
            if n == 0:
                self.metrics.bytes_in(got - already)
                self.end("closed by client mid-frame")
                return None
            got += n
            if not direct:
                grant -= n
        self.mid_frame = False
        self.metrics.bytes_in(got - already)
        return buffer

    async def _reserve(self, n: int) -> None:
        """Reserve `n` bytes of request memory; while the pool has none, this connection is
        not read (back-pressure) and counts as idle."""
        if self.memory.try_reserve(n):
            return
        self.read_since = trio.current_time()
        try:
            with trio.CancelScope() as self.memory_wait:
                await self.memory.reserve(n)
        finally:
            self.read_since = None
            self.memory_wait = None
        self.waited = True
        if self.reason is not None:  # closed as idle while it waited
            raise trio.ClosedResourceError("connection closed")

    def release_memory(self) -> None:
        """Give back the request memory reserved by the frame just handled (or cut off)."""
        if self.reserved:
            self.memory.release(self.reserved)
            self.reserved = 0

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
        except (CloseConnection, trio.ClosedResourceError, OSError) as e:
            # Close the socket rather than cancel the reader: a request it is handling (an
            # OffsetCommit waiting for its fsync) must finish, or the coordinator would wait
            # for it forever. The reader's next receive or send fails and it stops.
            self.end(_reason(e))
            self.queue.clear()
            if self.room is not None:
                self.room.set()
            self.sock.close()
        finally:
            self.writing = False
            self.drained_at = self.clock.now()  # idle from now if nothing else comes

    async def send(self, out: list[Any]) -> None:
        """Send a response given as chunks, all in one writev when the socket takes it."""
        size = sum(map(len, out))
        total = size  # what is left to send
        chunks = out
        while True:
            try:
                sent = os.writev(self._fd(), chunks if len(chunks) <= IOV_MAX else chunks[:IOV_MAX])
            except BlockingIOError:
                # A client that stops reading its responses makes no progress either: it is
                # closed after connections.max.idle.ms like one that stops sending, so it
                # cannot pin a task, a descriptor and a response forever.
                self.write_since = self.clock.now()
                try:
                    await trio.lowlevel.wait_writable(self.sock)
                finally:
                    self.write_since = None
                continue
            if sent == total:  # the usual case: all of it at once
                break
            total -= sent
            chunks = _unsent(chunks, sent)
        self.metrics.bytes_out(size)


def _unsent(chunks: list[Any], sent: int) -> list[Any]:
    """What is left of `chunks` after the first `sent` bytes went out."""
    i = 0
    while i < len(chunks) and sent >= len(chunks[i]):
        sent -= len(chunks[i])
        i += 1
    rest = chunks[i:]
    if sent:
        rest[0] = memoryview(rest[0])[sent:]
    return rest


def _reason(e: BaseException) -> str:
    if isinstance(e, (CloseConnection, FrameTooLarge)):
        return str(e)
    return f"connection lost ({e.__class__.__name__})"


async def expire_idle_connections(broker: Broker) -> None:
    """Close the connections idle for connections.max.idle.ms (see the module docstring)."""
    idle_s = broker.config["connections.max.idle.ms"] / 1000
    clock = broker.clock
    while True:
        await clock.sleep_until(clock.now() + max(idle_s / IDLE_CHECKS, 0.001))
        now = clock.now()
        for conn in broker.connections:
            reason = conn.idle_reason(now, idle_s)
            if reason is not None:
                conn.close_idle(reason)


async def serve_connection(
    broker: Broker,
    stream: trio.SocketStream,
    connection_id: int,
    listener_name: str = "PLAINTEXT",
    client_host: str | None = None,
) -> None:
    """Serve `stream` until it closes. `client_host` ("/address"): given when the socket is
    not the client's own (a TLS connection, broker.security.gate)."""
    if client_host is None:
        try:
            peer = stream.socket.getpeername()
            client_host = f"/{peer[0]}"
        except OSError:
            client_host = "/unknown"
    conn = _Connection(broker, stream, connection_id, client_host, listener_name)
    broker.metrics.connection_opened()
    broker.connections.add(conn)
    log.info("connection %d opened from %s", connection_id, client_host[1:])
    try:
        async with trio.open_nursery() as conn.nursery:
            try:
                await conn.read()
            except (FrameTooLarge, CloseConnection) as e:
                conn.end(_reason(e))
            except (trio.ClosedResourceError, OSError) as e:
                conn.end(_reason(e))
                # Nobody to send the queued responses to. The writer waits only for fsyncs
                # of batches already appended, which go on without it.
                conn.nursery.cancel_scope.cancel()
            # Leaving the nursery waits for the writer: queued responses still go out.
    finally:
        conn.release_memory()
        broker.connections.discard(conn)
        broker.metrics.connection_closed()
        log.info(
            "connection %d from %s closed: %s",
            connection_id,
            client_host[1:],
            conn.reason or "closed by client",
        )
        with trio.CancelScope(shield=True):
            await stream.aclose()


async def _handle_frame(
    conn: _Connection | _Authenticating, frame: bytes | bytearray
) -> list[Any] | _Pending | None:
    broker = conn.broker
    try:
        api_key, version, correlation_id = peek_request_key(frame)
    except DecodeError as e:
        raise CloseConnection(f"unreadable request header: {e}") from None
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
    flexible = route.request.is_flexible(version)
    try:
        client_id, body_pos = request_client_id(frame, flexible)
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
    conn.client_id = client_id
    conn.api_versions[api_key] = version
    conn.requests += 1
    ctx = RequestContext(
        broker,
        version,
        client_id or "",
        conn.client_host,
        conn.connection_id,
        routes,
        conn.listener_name,
    )
    call = _Call(
        broker,
        route,
        version,
        correlation_id,
        client_id,
        trio.current_time(),
        conn,
        request,
        None,
        # The journal keeps request frames (broker.controls.journal); a large frame is a
        # bytearray of its own, copied so that nothing can change it afterwards.
        None if broker.journal is None else frame if type(frame) is bytes else bytes(frame),
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
    if (expired := session_expired(broker, conn.connection_id, request)) is not None:
        raise CloseConnection(expired)  # KIP-368 (broker.security.authz)
    try:
        try:
            # ACLs: the handler serves what the principal may do (broker.security.enforce)
            response = await enforce.handle(ctx, request, route.handler, route.error_response)
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
        return _Pending(call._replace(request=None, frame=None), response)
    return _answer(call, code, response, body)


async def _fault(call: _Call, fault: Any) -> list[Any] | None:
    """Apply a fault to a request: its answer, or None to handle the request as usual
    (a delay alone). Raises CloseConnection for "disconnect"; "drop" never returns."""
    call = call._replace(fault=fault.id)
    if fault.delay_ms:
        await trio.sleep(fault.delay_ms / 1000)  # real time: "answer late"
    if fault.action != "error":
        _journal(call, ErrorCode.NONE, None, fault.action)
        log.info(
            "%s v%d from %s: fault %d: %s",
            call.route.name,
            call.version,
            call.client_id,
            fault.id,
            fault.action,
        )
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
    log.info(
        "%s v%d from %s: fault %d: %s",
        call.route.name,
        call.version,
        call.client_id,
        fault.id,
        fault.error.name,
    )
    return _answer(
        call, fault.error, call.route.error_response(call.request, fault.error, call.version)
    )


def _journal(call: _Call, code: int, out: list[Any] | None, outcome: str) -> None:
    journal = call.broker.journal
    if journal is not None:
        journal.record(call, code, None, out, outcome, trio.current_time())


class _Authenticating:
    """A connection still in its SASL exchange (broker.security.authenticator), which
    answers ApiVersions through this dispatch site before the connection is served: what
    the dispatch site records of a request, without a socket of its own."""

    __slots__ = (
        "api_versions",
        "broker",
        "client_host",
        "client_id",
        "connection_id",
        "listener_name",
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

    async def swallow(self) -> None:
        """A dropped request is never answered: the SASL exchange waits until it is closed."""
        await trio.sleep_forever()


async def handle_frame(
    broker: Broker,
    frame: bytes | bytearray,
    client_host: str,
    connection_id: int,
    listener_name: str,
) -> list[Any] | _Pending | None:
    """The dispatch site for a frame read during the SASL exchange (see _Authenticating)."""
    return await _handle_frame(
        _Authenticating(broker, client_host, connection_id, listener_name), frame
    )


def _failed(call: _Call) -> list[Any]:
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
            out = _respond(route, call.version, call.correlation_id, response)
        except Exception:
            log.exception("%s v%d: the error response failed too", route.name, call.version)
    call.broker.metrics.request_done(route.name, code, trio.current_time() - call.started)
    _journal(call, code, out, "failed" if out is not None else "failed, connection closed")
    if out is None:
        raise CloseConnection(f"internal error handling {route.name}") from None
    return out


def _answer(
    call: _Call, code: ErrorCode, response: Any, body: bytes | None = None
) -> list[Any] | None:
    """Encode a handler's response (None: Produce with acks=0, no response at all);
    `body`: the response already encoded (broker.handlers.Encoded)."""
    route = call.route
    try:
        # Encoding is inside the dispatch site too: a response that cannot be encoded is a
        # bug reported with its API, version and client, like any other.
        out = (
            None
            if response is None
            else _respond(route, call.version, call.correlation_id, response, body)
        )
    except Exception:
        return _failed(call)
    ended = trio.current_time()
    broker = call.broker
    broker.metrics.request_done(route.name, code, ended - call.started)
    if broker.journal is not None:
        outcome = "answered" if out is not None else "no response"
        broker.journal.record(call, code, response, out, outcome, ended)
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


def _respond(
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
