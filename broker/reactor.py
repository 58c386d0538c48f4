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

Polls. Before waiting in trio (an epoll_ctl to arm the wait, the leader's wake-up and
scheduling), the leader polls its epoll without waiting: under load, more connections have
become readable during the pass. After a pass of one connection, that poll most often finds
nothing (a connection alone: its client has its answer to read before it sends again), and
costs a system call per request. So after a lone pass whose poll finds nothing, the poll
is left out after the next lone pass (the leader goes straight to trio), after the next two
if the one after that finds nothing again, and so on up to MAX_SKIPPED_POLLS; a poll that
finds something puts it back after every pass.

Spinning. A client making one request at a time (a test's produce().get(), a commit, a
transaction's steps) sends its next request tens of microseconds after it reads its answer.
If the leader has gone to sleep meanwhile, waking it costs more than the request itself:
the process is rescheduled, on a VM by an interrupt to an idle virtual CPU (bench/README.md,
"Round 14", measures both, and a spin's cost where it cannot help). So after a lone pass, the
leader's poll goes on for up to `kmock.reactor.spin.us` (`spin_s`), a checkpoint between two
polls letting every other task (and trio's own I/O) run; a spin that finds nothing counts
as a poll that found nothing, so its client's next lone passes leave it out (the back-off
above). Linux's haltpoll governor does the same for an idle guest CPU; Kafka's network
threads sleep in their selector at once (Kafka's broker is rarely alone on its CPUs with
one client waiting on each answer, the way a test broker is).

Replies. In a pass of several connections (one epoll poll's worth), a step does not send
its responses: it leaves them in its connection's `outbox`, and the leader sends every
outbox at the end of the pass, before it polls again or lets any other task run (so a
connection's responses still go out before anything else of it). The client's wake-up is
what a send costs most on loopback (the kernel wakes the reader from inside the sender's
writev): sent together, most find their client awake already. Under bench/kwire.py's
closed loop of 256 connections committing offsets, the server's CPU per commit went from
128 to 106 us (bench/README.md, "Round 8"). A connection alone in its pass sends at once,
as before: nothing to gather.
"""

from __future__ import annotations

import contextlib
import logging
import select
import time
import types
from collections.abc import Callable, Coroutine, Generator
from typing import Any, Protocol

import trio

log = logging.getLogger("broker.connection")

LEAD_STEPS = 64  # connection steps between two checkpoints of the leader
POLL_EVENTS = 1024  # events taken from the epoll at a time
MAX_SKIPPED_POLLS = 32  # polls left out in a row after lone passes (see "Polls")

# What a connection's step tells the reactor (broker.connection's `step`).
PARKED = "parked"  # waiting for its client: the reactor goes on watching it
AGAIN = "again"  # more requests already received: another step in the reactor's next round
TASK = "task"  # to be served by a task of its own now (its `serve`)
ENDED = "ended"  # the connection is over (its `reason` says why)


class Served(Protocol):
    """What the reactor reads and calls of a connection (broker.connection's)."""

    sock: trio.socket.SocketType
    outbox: list[Any] | None
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

    def send_outbox(self) -> Any: ...

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

    def __init__(self, spin_s: float = 0.0) -> None:
        self.spin_s = spin_s  # how long a lone pass's poll goes on (see "Spinning")
        self.spins = 0  # spins begun ...
        self.spins_found = 0  # ... and those that found a request
        self.epoll = select.epoll()
        self.watched: dict[int, Served] = {}  # by file descriptor
        self.ready: list[Served] = []  # to step in this round
        self.again: list[Served] = []  # to step in the next round (AGAIN)
        self.outgoing: list[Served] = []  # with responses to send at the end of the pass
        self.deferring = False  # this pass's steps leave their responses in `outgoing`
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
        epoll, watched, again = self.epoll, self.watched, self.again
        poll, fileno, wait_readable = epoll.poll, epoll.fileno(), trio.lowlevel.wait_readable
        ready, outgoing = self.ready, self.outgoing  # changed in place, never replaced
        steps = 0
        now = None  # the clock at this round's poll, once a connection parks
        lone = False  # the last pass stepped one connection
        skip = 0  # polls to leave out after lone passes (see "Polls" above)
        skips = 0  # ... and that many after the next lone pass whose poll finds nothing
        while True:
            if not ready:
                if outgoing:  # the end of a pass
                    self._send_outgoing()
                if lone and skip and not again:
                    skip -= 1  # straight to trio
                    events = []
                else:
                    events = poll(0, POLL_EVENTS)
                    if lone:
                        if not events and not again and self.spin_s:
                            events = await self._spin()
                        skips = 0 if events else min(2 * skips or 1, MAX_SKIPPED_POLLS)
                        skip = skips
                if not events and not again:
                    await wait_readable(fileno)
                    events = poll(0, POLL_EVENTS)
                    if not events:
                        lone = False
                        continue
                for fd, _ in events:
                    conn = watched.get(fd)
                    if conn is not None:
                        ready.append(conn)
                if again:
                    ready.extend(again)
                    again.clear()
                lone = len(ready) == 1
                if not lone:
                    ready.reverse()  # popped from the end: served in the order reported
                self.deferring = not lone
                now = None
            conn = ready.pop()
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
            else:
                self.forget(conn)
                if result is ENDED:
                    conn.ended.set()
                elif result is TASK:
                    assert conn.nursery is not None
                    conn.nursery.start_soon(conn.serve)
                else:  # a handler waits: this task goes on with it, a new one leads
                    assert self.nursery is not None
                    if outgoing:
                        self._send_outgoing()
                    self.nursery.start_soon(self.lead)
                    await conn.serve(result)
                    return
            steps += 1
            if steps == LEAD_STEPS:
                steps = 0
                if outgoing:
                    self._send_outgoing()
                await trio.lowlevel.checkpoint()

    async def _spin(self) -> list[tuple[int, int]]:
        """Poll until a connection is readable or `spin_s` is over, letting the other tasks
        run between two polls (see "Spinning"). Real time: a virtual clock does not move
        while a task is runnable."""
        self.spins += 1
        poll, checkpoint, clock = self.epoll.poll, trio.lowlevel.checkpoint, time.perf_counter
        until = clock() + self.spin_s
        while True:
            await checkpoint()
            events = poll(0, POLL_EVENTS)
            if events:
                self.spins_found += 1
                return events
            if clock() >= until:
                return events

    def _send_outgoing(self) -> None:
        """Send the responses the pass's steps left (see "Replies" above)."""
        outgoing = self.outgoing
        for conn in outgoing:
            result = conn.send_outbox()
            if result is PARKED or conn.reactor is not self:  # a task has it already
                continue
            self.forget(conn)
            if result is TASK:  # the socket took part: a task sends the rest, in order
                assert conn.nursery is not None
                conn.nursery.start_soon(conn.serve)
            else:
                conn.ended.set()
        outgoing.clear()
