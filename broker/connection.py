"""A connection: read a frame, dispatch it (broker.dispatch), answer, repeat.

Kafka mutes a connection while one of its requests is being processed, so requests on one
connection are handled one at a time, in order, and responses go out in request order
(clients that pipeline, like librdkafka, simply wait in the socket buffer). kmock does the
same with one difference: a Produce that has appended its batches and waits only for the
fsync covering them (acks=all, see broker.durability) does not hold the connection. Its
response is queued, and the next requests are read and handled meanwhile; a writer task
sends the queued responses in request order as they become ready. Kafka needs no such
thing (it acknowledges from the page cache, durability coming from replicas); without it
one producer connection would wait out a whole fsync round per request.

Who reads a connection. Most requests are answered without waiting for anything: a
Metadata, an OffsetCommit (Kafka's durability default), a Fetch that finds records. So a
connection has no task of its own reading it while it waits for its client: it is served
by its broker's reactor (broker.reactor), one task that waits for every such connection at
once and, for each one with bytes to read, reads them and answers the requests they hold
in place (`step`), the way Kafka's network threads serve many connections from one
selector. A request that must wait (a JoinGroup waiting for the group, a Fetch waiting for
records, a fault's delay), a response the socket does not take at once, a large frame
not all in the socket yet (or over DIRECT_FRAME_BYTES), a response queued behind a
deferred one: from there the connection is served by a task of its own (`serve`: the
reactor's task itself, when a handler waits, see broker.reactor), until it waits for its
client again with nothing queued, and goes back to the reactor. With one task per
connection (trio's way, and kmock's before), waking a connection's task cost about 40 us
of every request, more than the C mock's whole request (bench/README.md, "Round 6").

What may wait is bounded: at most MAX_DEFERRED deferred responses per connection (each a
few small objects: the batches are in the log, not in memory), and at most one ready
response queued behind them (any other request, whose response may be large: a Fetch).
Past either bound the connection stops reading until the queue drains. So does a connection
whose next large frame finds no room in `queued.max.request.bytes`: frames over
RECEIVE_BYTES are received into buffers of their own whose memory follows the bytes that
arrived and is reserved from the broker's pool (broker.limits).

A connection closed for any reason first sends the responses already queued, as Kafka
sends the responses of requests it finished.

The socket is read and written with plain non-blocking calls on its descriptor (os.read,
os.readv, os.writev), and only a call that would block waits, in trio's
`wait_readable`/`wait_writable` (or the reactor's epoll). trio's own socket methods add two
trips through the scheduler to every call (a cancellation check and a cancel-shielded
checkpoint). A response goes out in one writev however many chunks it has.
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
import struct
from typing import TYPE_CHECKING, Any

import trio

from broker.context import NODE_ID, RequestContext
from broker.controls.clock import Clock
from broker.dispatch import CloseConnection, Pending, dispatch, request_clock
from broker.limits import DIRECT_FRAME_BYTES, direct_frame_buffer, frame_buffer
from broker.reactor import AGAIN, ENDED, PARKED, TASK, resume
from broker.routes import route_for
from broker.security.authz import authz
from broker.sendfile import write_some
from protocol.frames import FrameBuffer, FrameTooLarge
from storage.segment import FileSlice

if TYPE_CHECKING:
    from broker.broker import Broker
    from broker.reactor import Reactor

log = logging.getLogger("broker.connection")

RECEIVE_BYTES = 65536  # keep receives below glibc's mmap threshold (PERF-NOTES §3)
LARGE_READ_BYTES = 1024 * 1024  # request memory reserved per read of a mapped frame
MAX_DEFERRED = 256  # deferred responses per connection before it stops reading
IDLE_CHECKS = 10  # idle checks per connections.max.idle.ms
STEP_REQUESTS = 16  # requests the reactor answers on one connection before the next's turn
_SIZE = struct.Struct(">i")  # a frame's size prefix


class _Connection:
    __slots__ = (
        "aborted",
        "address",
        "api_versions",
        "authz",
        "broker",
        "client_host",
        "client_id",
        "clock",
        "connection_id",
        "contexts",
        "drained_at",
        "ended",
        "frames",
        "home",
        "idle_clock",
        "large",
        "listener_name",
        "memory",
        "memory_wait",
        "metrics",
        "mid_frame",
        "now",
        "nursery",
        "opened_ms",
        "outbox",
        "queue",
        "reactor",
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
        # What GET /v1/connections shows (kept with the admin endpoint on, which serves it):
        # the client id of the last request, the version of each API used (the last one),
        # the requests read.
        self.client_id: str | None = None
        self.api_versions: dict[int, int] = {}
        self.requests = 0
        # What the dispatch site looks up once per connection (broker.dispatch.Caller).
        self.authz = authz(broker)
        self.now = request_clock(broker)
        self.contexts: dict[int, RequestContext] = {}
        # The reactor stamps a parked connection with clock.now(): for the wall clock (its
        # `now` is trio.current_time()), trio's clock read without the two calls in front.
        wall = type(broker.clock).now is Clock.now
        self.idle_clock = trio.lowlevel.current_clock().current_time if wall else broker.clock.now
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
        # A large frame `step` began to receive into its own buffer and a task finishes:
        # (buffer, bytes in it, bytes of it counted received already). See _receive_large.
        self.large: tuple[Any, int, int] | None = None
        self.reason: str | None = None
        # Responses not sent yet, in request order: chunks, or a Pending at the head.
        self.queue: collections.deque[list[Any] | Pending] = collections.deque()
        self.writing = False
        self.room: trio.Event | None = None  # set when the queue shrinks
        self.nursery: trio.Nursery | None = None
        # The reactor watching the connection (None: a task of its own serves it, or none
        # yet), its broker's; `ended` is set when the connection is over, `aborted` when its queued
        # responses have nobody to go to.
        self.reactor: Reactor | None = None
        self.home: Reactor | None = None  # the reactor of the broker that accepted it
        self.ended = trio.Event()
        self.aborted = False
        # What expire_idle_connections looks at: since when the connection has waited to
        # read / to write (None: it is not waiting), when its queue last became empty, and
        # whether a frame is half received.
        self.read_since: float | None = None
        self.write_since: float | None = None
        self.drained_at = self.clock.now()
        self.mid_frame = False
        self.waited = False  # the reader went through the scheduler since its last request
        # The responses of the last step, left for the end of the reactor's pass (`outbox`
        # in its `outgoing`): chunks, or None.
        self.outbox: list[Any] | None = None

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
        if self.reactor is not None:  # no task to notice the close: the connection ends here
            self.reactor.forget(self)
            self.ended.set()
        self.sock.close()

    # -- served by the reactor ------------------------------------------------------------

    def step(self) -> Any:
        """Read what the client sent and answer the requests in it, without waiting for
        anything (the reactor calls this when the socket has bytes to read, or after AGAIN).
        Returns PARKED, AGAIN, TASK, ENDED, or (coroutine, trap) for a request whose handler
        waits: the dispatch of that request, suspended where it yielded to trio (the reactor
        goes on running it in its own task, broker.reactor.resume)."""
        frames = self.frames
        metrics = self.metrics
        received = False
        left = STEP_REQUESTS
        # In a pass of several connections the responses wait for the end of the pass,
        # then go out together (broker.reactor, "Replies"); otherwise each goes at once.
        reactor = self.reactor
        assert reactor is not None
        defer = reactor.deferring
        outbox = None
        try:
            fd = self.sock.fileno()
            if fd < 0:  # closed by the idle check or a writer
                raise trio.ClosedResourceError("connection closed")
            while True:
                # A frame, whole or large, can be in the buffer only if bytes are: after AGAIN
                # (a client that pipelines), or a frame cut short by a read. Usually there
                # are none, and the step starts with its read.
                frame: Any = None
                if frames.buffer:
                    frame = frames.next_frame()
                    if frame is None and (large := self._large_frame()) is not None:
                        frame = self._take_large(fd, large)
                        if frame is None:
                            return TASK  # received into a buffer of its own, by `read`
                if frame is None:
                    if received:
                        return PARKED
                    received = True
                    try:
                        data = os.read(fd, RECEIVE_BYTES)
                    except BlockingIOError:
                        return PARKED
                    if not data:
                        self.end("closed by client mid-frame" if frames else "closed by client")
                        return ENDED
                    metrics.bytes_received += len(data)  # metrics.bytes_in, inline
                    if len(data) == RECEIVE_BYTES and not frames:
                        frame = self._take_first(fd, data)
                        if frame is TASK:
                            return TASK
                    else:
                        frame = frames.feed_next(data)
                    if frame is None:
                        continue
                coroutine = dispatch(self, frame)
                del frame
                try:
                    trap = coroutine.send(None)
                except StopIteration as done:
                    out = done.value
                    if self.reserved:  # a large frame's (_take_large); a small one has none
                        self.release_memory()
                else:
                    return coroutine, trap  # serve() releases its memory once it is done
                if out is not None:
                    if type(out) is Pending:
                        if outbox is not None:  # the writer sends it first
                            self.outbox = None
                            self.enqueue(outbox)
                        self.enqueue(out)
                        return TASK
                    if defer:
                        if outbox is None:
                            outbox = self.outbox = out
                            reactor.outgoing.append(self)
                        else:
                            outbox += out
                    elif not self._send_now(fd, out):
                        return TASK
                left -= 1
                if received and not frames.buffer:  # read, and all of it answered
                    return PARKED
                if not left:
                    return AGAIN
        except (FrameTooLarge, CloseConnection) as e:
            self.end(_reason(e))
        except (trio.ClosedResourceError, OSError) as e:
            self.end(_reason(e))
            self.aborted = True
        return ENDED

    def send_outbox(self) -> Any:
        """Send the responses the last step left for the end of the reactor's pass: PARKED
        when the socket took them (or there were none), TASK when a task must send the
        rest (queued), ENDED when the connection is lost."""
        out, self.outbox = self.outbox, None
        if out is None:
            return PARKED
        try:  # a closed socket's fileno() is -1: the writev raises OSError (EBADF)
            return PARKED if self._send_now(self.sock.fileno(), out) else TASK
        except (trio.ClosedResourceError, OSError) as e:
            self.end(_reason(e))
            self.aborted = True
            return ENDED

    def _send_now(self, fd: int, out: list[Any]) -> bool:
        """Write `out` to the socket without waiting: True when it took all of it; False
        when it took part (or none), the rest then queued for a task to send, in order."""
        size = sum(map(len, out))
        sent = write_some(fd, out)
        if sent < size:
            self.metrics.bytes_sent += sent
            self.enqueue(_unsent(out, sent))
            return False
        self.metrics.bytes_sent += size  # metrics.bytes_out, inline
        return True

    # -- served by a task of its own ------------------------------------------------------

    async def serve(self, blocked: tuple[Any, Any] | None = None) -> None:
        """Serve the connection until it ends, or until it waits for its client with
        nothing queued and goes back to its reactor. `blocked`: a request the reactor's step
        left suspended (broker.reactor), to be finished first."""
        try:
            if blocked is not None:
                try:
                    out = await resume(*blocked)
                finally:
                    self.release_memory()
                await self.deliver(out)
            if await self.read():
                return
        except (FrameTooLarge, CloseConnection) as e:
            self.end(_reason(e))
        except (trio.ClosedResourceError, OSError) as e:
            self.end(_reason(e))
            self.aborted = True
        except Exception:
            # Never let one connection take the server down; this is a bug, so say so loudly.
            log.exception("connection %d crashed", self.connection_id)
            self.end("internal error")
            self.aborted = True
        self.ended.set()

    def _park(self) -> bool:
        """Hand the connection back to its reactor, if it has one and nothing is queued."""
        reactor = self.home
        if reactor is None or reactor.closed or self.queue or self.writing or self.reason:
            return False
        reactor.watch(self)
        return True

    async def read(self) -> bool:
        """Read and answer requests until the connection ends (False) or is handed back to
        its reactor (True)."""
        frames = self.frames
        # The last read returned less than it asked for: the socket had nothing more then,
        # so the next read waits for it first rather than fail with EAGAIN (a system call
        # and an exception per request of a client that waits for its answers).
        drained = False
        while True:
            frame: Any = frames.next_frame()
            if frame is None:
                size = self._large_frame()
                if size is not None:
                    drained = False
                    frame = await self._receive_large(size)
                    if frame is None:
                        return False
            if frame is None:
                if drained:
                    drained = False
                    if self._park():
                        return True
                    await self._wait_readable()
                try:
                    data = os.read(self._fd(), RECEIVE_BYTES)
                except BlockingIOError:
                    if self._park():
                        return True
                    await self._wait_readable()
                    continue
                if not data:
                    self.end("closed by client mid-frame" if len(frames) else "closed by client")
                    return False
                self.metrics.bytes_in(len(data))
                frames.feed(data)
                drained = len(data) < RECEIVE_BYTES
                continue
            if not self.waited:
                # Frames already buffered (a client that pipelines): let other tasks run
                # between its requests.
                await trio.lowlevel.checkpoint()
            self.waited = False
            try:
                out = await dispatch(self, frame)
            finally:
                del frame
                self.release_memory()
            await self.deliver(out)

    async def deliver(self, out: list[Any] | Pending | None) -> None:
        """Send or queue a response (None: there is none)."""
        if out is None:
            return
        if not self.queue and not isinstance(out, Pending):
            await self.send(out)
            return
        self.enqueue(out)
        # A ready response behind deferred ones: wait until it is sent before reading on.
        limit = MAX_DEFERRED if type(out) is Pending else 1
        while len(self.queue) >= limit:
            self.room = trio.Event()
            await self.room.wait()

    def enqueue(self, out: list[Any] | Pending) -> None:
        """Queue a response behind the others; the writer task sends them in order."""
        self.queue.append(out)
        if not self.writing:
            self.writing = True
            assert self.nursery is not None
            self.nursery.start_soon(self.write)

    def _large_frame(self) -> int | None:
        """The size of the frame in progress if it is to be received into a buffer of its
        own: it is larger than RECEIVE_BYTES and RECEIVE_BYTES of it have arrived (until
        then it costs what arrived, like a small one), or `_take_large` began it."""
        if self.large is not None:
            return len(self.large[0])
        frames = self.frames
        if len(frames) < RECEIVE_BYTES:
            return None
        size = len(frames) - 4 + frames.bytes_needed()
        return size if size > RECEIVE_BYTES else None

    def _take_first(self, fd: int, data: bytes) -> Any:
        """The first read of the frames that `step` found nothing buffered before, a full
        RECEIVE_BYTES: when it begins a large frame, `_take_large` copies it straight into
        the frame's own buffer, rather than into the receive buffer first and from there
        into the frame's (one copy of RECEIVE_BYTES per Produce request of a producer
        that batches, instead of two). Returns the frame, None (a frame the receive
        buffer holds a part of), or TASK: a task receives the rest (`_receive_large`)."""
        (size,) = _SIZE.unpack_from(data)
        if RECEIVE_BYTES < size <= self.frames.max_frame_bytes:
            frame = self._take_large(fd, size, data)
            return TASK if frame is None else frame
        return self.frames.feed_next(data)

    def _take_large(self, fd: int, size: int, first: bytes | None = None) -> Any:
        """The large frame in progress (see `_large_frame`), of `size` bytes, received now
        without waiting when it fits one buffer (DIRECT_FRAME_BYTES), the pool has its
        memory and the rest of it is in the socket already: what a producer's requests
        usually are. So `step` answers it in place, without handing the connection to a
        task of its own and back for each request (two epoll_ctl calls, a task and its
        scheduling, a read that fails with EAGAIN; bench/README.md, "Round 8, produce").

        `first`: the frame's first bytes, size prefix included, read but not buffered
        (`_take_first`); when they are not taken here, they go to the receive buffer.

        Returns None when a task must receive it (`_receive_large`), from where this left
        it: the rest has not arrived, the client closed, or the memory must be waited for.
        """
        if self.large is not None or size > DIRECT_FRAME_BYTES or not self.memory.try_reserve(size):
            if first is not None:
                self.frames.feed(first)
            return None
        self.reserved = size
        if first is None:
            started = self.frames.start_large_frame(RECEIVE_BYTES, direct_frame_buffer)
            assert started is not None  # the frame in progress is larger and incomplete
            buffer, got = started
        else:
            buffer = direct_frame_buffer(size)
            got = len(first) - 4
            memoryview(buffer)[:got] = memoryview(first)[4:]
        already = got
        view = memoryview(buffer)
        while got < size:
            try:
                n = os.readv(fd, [view[got:]])
            except BlockingIOError:  # the rest has not arrived yet: a task waits for it
                break
            if n == 0:  # closed by the client: _receive_large ends the connection
                break
            got += n
        if got < size:
            self.large = (buffer, got, already)
            self.mid_frame = True
            return None
        self.metrics.bytes_received += got - already  # metrics.bytes_in, inline
        return buffer

    async def _receive_large(self, size: int) -> Any:
        """Receive the frame in progress, of `size` > RECEIVE_BYTES bytes, straight into a
        buffer of its own (see broker.limits for how its memory is allocated and reserved),
        or the rest of the one `_take_large` began.
        Returns the frame, or None if the client closed the connection first."""
        frames, memory = self.frames, self.memory
        direct = size <= DIRECT_FRAME_BYTES
        if self.large is not None:  # begun by _take_large: its memory is reserved
            buffer, got, already = self.large
            self.large = None
        elif direct:
            await self._reserve(size)
            self.reserved = size
            large = frames.start_large_frame(RECEIVE_BYTES, direct_frame_buffer)
            assert large is not None  # the frame in progress is larger and incomplete
            buffer, got = large
            already = got
        else:
            large = frames.start_large_frame(RECEIVE_BYTES, frame_buffer)
            assert large is not None  # the frame in progress is larger and incomplete
            buffer, got = large
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
                out = await head.chunks() if isinstance(head, Pending) else head
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
            sent = write_some(self._fd(), chunks)
            if sent == total:  # the usual case: all of it at once
                break
            if not sent:
                # A client that stops reading its responses makes no progress either: it is
                # closed after connections.max.idle.ms like one that stops sending, so it
                # cannot pin a task, a descriptor and a response forever.
                self.write_since = self.clock.now()
                try:
                    await trio.lowlevel.wait_writable(self.sock)
                finally:
                    self.write_since = None
                continue
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
        first = rest[0]
        rest[0] = first.after(sent) if type(first) is FileSlice else memoryview(first)[sent:]
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
        for conn in list(broker.connections):
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
    not the client's own (a TLS connection, broker.security.gate).

    The task that runs this only waits for the connection to end (the reactor, or a task
    of the connection's own, serves it), then sends what is still queued and closes it."""
    if client_host is None:
        try:
            peer = stream.socket.getpeername()
            client_host = f"/{peer[0]}"
        except OSError:
            client_host = "/unknown"
    conn = _Connection(broker, stream, connection_id, client_host, listener_name)
    conn.home = broker.reactors.get(NODE_ID.get(broker.node_id))
    broker.metrics.connection_opened()
    broker.connections.add(conn)
    log.info("connection %d opened from %s", connection_id, client_host[1:])
    try:
        async with trio.open_nursery() as conn.nursery:
            if not conn._park():
                conn.nursery.start_soon(conn.serve)
            await conn.ended.wait()
            if conn.aborted:
                # Nobody to send the queued responses to. The writer waits only for fsyncs
                # of batches already appended, which go on without it.
                conn.nursery.cancel_scope.cancel()
            # Leaving the nursery waits for the writer: queued responses still go out.
    finally:
        if conn.reactor is not None:
            conn.reactor.forget(conn)
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
