"""The reactor: one task serving every connection of a broker that waits for its client.

trio's way is a task per connection, each waiting for its socket in `wait_readable`. Every
request then costs a trip through trio's scheduler (the wait registered with the kernel,
the task woken, switched to, and back): about 40 us here, more than librdkafka's mock
spends on a whole request (bench/README.md, "Round 6"). So a broker's connections are
watched by one epoll of their own (level-triggered), which trio waits for as one file
descriptor; when it is readable, one task, the leader, steps through every connection with
bytes to read (broker.connection's `step`), reading and answering their requests in place.
Kafka's network threads serve their connections the same way, many to a selector.

A handler that waits (for a group, for records, for an fsync in strict mode, a fault's
delay) yields to trio from inside the leader's step. The leader then hands its role on: it
starts a new leader, which carries on with the connections still to step, and goes on
running the suspended request as its own (`resume`: trio's wait was registered for this
task, so this task must be the one to wait), then serves that connection as a task of its
own until the connection goes back to the reactor (the leader/followers pattern). What
else needs a task (a large frame, a response the socket does not take at once, queued
deferred responses) gets one from the connection's own nursery.

Fairness: a step answers at most broker.connection.STEP_REQUESTS requests before the next
connection's turn, and the leader lets other tasks run every LEAD_STEPS steps.

Held replies. While the leader steps connections, its writer (broker.runtime's
CoordinatorRuntime) may `hold` a request: an offset commit whose record waits in the
writer's batch of its __consumer_offsets partition. The step returns HELD and the leader
goes on with the other connections; at the end of the pass (before the next epoll poll,
and before the leader lets any other task run) the writer appends each partition's batch
at once (`flush_commits`) and the held connections are stepped again, first, to answer.
This is Kafka's CoordinatorRuntime: the records of the write operations that come in
while a batch is open go in that batch, flushed once the events queued behind it are done
(its "adaptive" append linger). The writer holds only while `holding` is set, which the
leader sets while it steps a pass of several connections (one alone would only pay for
the hold) and clears before it awaits anything: a handler run by a task of its own is
never held.
"""

from __future__ import annotations

import contextlib
import logging
import select
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Protocol

import trio

log = logging.getLogger("broker.connection")

LEAD_STEPS = 64  # connection steps between two checkpoints of the leader
POLL_EVENTS = 1024  # events taken from the epoll at a time

# What a connection's step tells the reactor (broker.connection's `step`).
PARKED = "parked"  # waiting for its client: the reactor goes on watching it
AGAIN = "again"  # more requests already received: another step in the reactor's next round
TASK = "task"  # to be served by a task of its own now (its `serve`)
ENDED = "ended"  # the connection is over (its `reason` says why)
HELD = "held"  # a request waits for the end of the pass (`hold`): stepped again after it


class _Hold:
    """What a held request's handler yields to the step that drives it (`hold`)."""

    __slots__ = ()


HOLD = _Hold()


@types.coroutine
def hold() -> Generator[Any, Any, None]:
    """Wait for the end of the reactor's pass: the step driving this request returns HELD
    and steps the connection again once its reactor's writer has flushed. Only while the
    writer's `holding` is set (nothing else can drive a coroutine that yields HOLD)."""
    yield HOLD


class Writer(Protocol):
    """What the reactor sets and calls of the writer that may hold requests
    (broker.runtime.CoordinatorRuntime)."""

    holding: bool

    def flush_commits(self) -> None: ...


class _NoWriter:
    holding = False

    def flush_commits(self) -> None:
        pass


class Served(Protocol):
    """What the reactor reads and calls of a connection (broker.connection's)."""

    sock: trio.socket.SocketType
    clock: Any  # broker.controls.clock.Clock
    idle_clock: Callable[[], float]  # clock.now, or what it calls
    connection_id: int
    reactor: Reactor | None
    read_since: float | None
    nursery: trio.Nursery | None
    ended: trio.Event
    aborted: bool

    def end(self, reason: str) -> None: ...

    def step(self) -> Any: ...

    async def serve(self, blocked: tuple[Any, Any] | None = None) -> None: ...


@types.coroutine
def resume(coroutine: Coroutine[Any, Any, Any], trap: Any) -> Generator[Any, Any, Any]:
    """Go on running `coroutine`, which yielded `trap` to trio when it was last stepped by
    hand, as part of the current task: await this in the task that stepped it."""
    while True:
        try:
            value = yield trap
        except BaseException as e:  # thrown in by trio (or closing): on to the coroutine
            try:
                trap = coroutine.throw(e)
            except StopIteration as done:
                return done.value
        else:
            try:
                trap = coroutine.send(value)
            except StopIteration as done:
                return done.value


class Reactor:
    """The connections of one broker that wait for their client, and the leader serving
    them. `run` in the broker's nursery; connections come with `watch`, go with `forget`."""

    def __init__(self, writer: Writer | None = None) -> None:
        self.writer: Writer = writer or _NoWriter()
        self.held: list[Served] = []  # stepped again at the end of the pass (HELD)
        self.epoll = select.epoll()
        self.watched: dict[int, Served] = {}  # by file descriptor
        self.ready: list[Served] = []  # to step in this round
        self.again: list[Served] = []  # to step in the next round (AGAIN)
        self.nursery: trio.Nursery | None = None
        self.closed = False

    def watch(self, conn: Served) -> None:
        fd = conn.sock.fileno()
        conn.reactor = self
        conn.read_since = conn.clock.now()
        self.watched[fd] = conn
        self.epoll.register(fd, select.EPOLLIN)

    def forget(self, conn: Served) -> None:
        """Stop watching `conn` (before its socket is closed or a task takes it)."""
        if conn.reactor is not self:
            return
        conn.reactor = None
        conn.read_since = None
        fd = conn.sock.fileno()
        if self.watched.get(fd) is conn:
            del self.watched[fd]
            with contextlib.suppress(OSError):  # closed already: the kernel dropped it
                self.epoll.unregister(fd)

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Serve the watched connections until cancelled."""
        try:
            async with trio.open_nursery() as self.nursery:
                self.nursery.start_soon(self.lead)
                task_status.started()
        finally:
            self.closed = True
            for conn in list(self.watched.values()):
                self.forget(conn)
                conn.end("broker stopped")
                conn.ended.set()
            trio.lowlevel.notify_closing(self.epoll.fileno())
            self.epoll.close()

    async def lead(self) -> None:
        """Step the ready connections while this task is the leader."""
        epoll, watched, again, held = self.epoll, self.watched, self.again, self.held
        poll, fileno, wait_readable = epoll.poll, epoll.fileno(), trio.lowlevel.wait_readable
        writer = self.writer
        # Set for a pass of several connections (one alone has nobody to share a batch
        # with), cleared before each await below.
        writer.holding = len(self.ready) > 1
        steps = 0
        now = None  # the clock at this round's poll, once a connection parks
        while True:
            if not self.ready:
                if held:  # the end of a pass
                    self._release()
                    continue
                events = poll(0, POLL_EVENTS)
                if not events and not again:
                    writer.holding = False
                    await wait_readable(fileno)
                    continue
                ready = []
                for fd, _ in events:
                    conn = watched.get(fd)
                    if conn is not None:
                        ready.append(conn)
                if again:
                    ready.extend(again)
                    again.clear()
                ready.reverse()  # popped from the end: served in the order reported
                self.ready = ready
                writer.holding = len(ready) > 1
                now = None
            conn = self.ready.pop()
            if conn.reactor is not self:  # forgotten meanwhile (closed, or taken by a task)
                continue
            try:
                result = conn.step()
            except Exception:
                # Never let one connection take the server down; this is a bug.
                log.exception("connection %d crashed", conn.connection_id)
                conn.end("internal error")
                conn.aborted = True
                result = ENDED
            if result is PARKED:
                if now is None:
                    now = conn.idle_clock()
                conn.read_since = now
            elif result is AGAIN:
                again.append(conn)
            elif result is HELD:
                held.append(conn)
            else:
                self.forget(conn)
                if result is ENDED:
                    conn.ended.set()
                elif result is TASK:
                    assert conn.nursery is not None
                    conn.nursery.start_soon(conn.serve)
                else:  # a handler waits: this task goes on with it, a new one leads
                    assert self.nursery is not None
                    if held:
                        self._release()
                    writer.holding = False
                    self.nursery.start_soon(self.lead)
                    await conn.serve(result)
                    return
            steps += 1
            if steps == LEAD_STEPS:
                steps = 0
                if held:
                    self._release()
                writer.holding = False
                await trio.lowlevel.checkpoint()
                writer.holding = len(self.ready) > 1

    def _release(self) -> None:
        """Flush the writer's held records (every held reply is ready then) and put the
        held connections first in line, in the order they were held."""
        try:
            self.writer.flush_commits()
        except Exception:
            # A bug: the held requests are answered UNKNOWN_SERVER_ERROR (their replies
            # are missing), the server goes on.
            log.exception("flushing the held requests' records failed")
        held = self.held
        held.reverse()
        self.ready.extend(held)  # popped from the end
        held.clear()
