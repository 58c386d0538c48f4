"""The broker's clock: every timer of the broker waits on it.

Two kinds, chosen by `kmock.clock` (`kmock serve --clock virtual`):

  wall     trio's clock (time.monotonic, or a test's autojump_clock) for deadlines, and
           time.time() for dates. The default; nothing moves unless time passes.
  virtual  a clock that moves only when told (`advance`, POST /v1/clock/advance). A timer
           fires with the time set to its own deadline, the very float it was given, so that
           a task comparing the time with the deadline it slept until finds it reached
           (`now() >= deadline`), and `now_ms()` rounds to the millisecond the coordinator's
           `deadline_ms / 1000` came from. Its dates start at the real date when the broker
           started and move with it.

What waits on it: the coordinator runtime's timer (sessions, rebalances, the initial
rebalance delay, pending members, offsets expiry), the idle-connection check, the
group-commit fsync loop (log.flush.interval.ms, group.commit.delay.ms) and the retention
and compaction schedule. What does not: a Fetch's max_wait_ms and a fault's delay_ms (a
client's own wait, and "answer late": both real time), and request latencies in metrics and
the journal.

`advance(ms)` fires every timer due up to the new time in deadline order, and after each
lets the broker run until every task is blocked again (trio.testing's
wait_all_tasks_blocked, which needs no mock clock): a session expiry's rebalance has started
before the next timer fires, and all of it before `advance` returns. As Kafka's MockTime
(org.apache.kafka.common.utils.MockTime) with its listeners, but the timers here are the
broker's own.

Record timestamps the broker writes (LogAppendTime, the batch timestamps of
__consumer_offsets) stay real time with a virtual clock, unless
`kmock.clock.timestamps=virtual`: `record_ms`. The broker's own dates (a commit's time,
offsets and log retention) are `wall_ms`, which follows the virtual clock, so that
advancing past a retention expires what it should.
"""

from __future__ import annotations

import heapq
import itertools
import math
import time
from collections.abc import Callable

import trio

__all__ = ["Clock", "ClockError", "VirtualClock", "make_clock"]


class ClockError(ValueError):
    """A clock control that cannot be done (advancing a wall clock, a negative advance)."""


class Clock:
    """The wall clock: trio's time for deadlines, time.time() for dates."""

    virtual = False
    # Whether `record_ms` is `wall_ms` (a caller that read one need not read the other).
    records_wall_ms = True
    # trio's time: trio.current_time() until `bind` hands over the running trio clock's own
    # `current_time`, which trio.current_time() reaches through two Python calls more (the
    # run's Runner, then its clock): every request that reads the time pays them.
    _trio_time: Callable[[], float] = staticmethod(trio.current_time)

    def bind(self) -> None:
        """Read the clock of the running trio.run directly (`serve` calls it at start, in
        the run the broker lives in)."""
        self._trio_time = trio.lowlevel.current_clock().current_time

    def now(self) -> float:
        """Monotonic seconds, for deadlines."""
        return self._trio_time()

    def now_ms(self) -> int:
        return int(self._trio_time() * 1000)

    def reached(self, deadline_ms: float) -> bool:
        """Whether the time is at or past `deadline_ms` (what `now_ms` counts in)."""
        return self._trio_time() * 1000 >= deadline_ms

    def wall_ms(self) -> int:
        """The date as the broker's timers see it (commit times, retention), epoch ms."""
        return int(time.time() * 1000)

    def record_ms(self) -> int:
        """The date written into records (LogAppendTime), epoch ms."""
        return int(time.time() * 1000)

    async def wait(self, event: trio.Event, deadline: float) -> None:
        """Return when `event` is set or at `deadline` (monotonic seconds), whichever first."""
        with trio.move_on_at(deadline):
            await event.wait()

    async def sleep_until(self, deadline: float) -> None:
        await trio.sleep_until(deadline)

    async def advance(self, ms: int) -> None:
        raise ClockError("ms: the clock is wall time (start kmock with --clock virtual)")

    def describe(self) -> dict[str, object]:
        return {"mode": "wall", "now_ms": self.now_ms(), "wall_ms": self.wall_ms()}


class _Timer:
    __slots__ = ("callback", "cancelled", "deadline")

    def __init__(self, deadline: float, callback: Callable[[], object]) -> None:
        self.deadline = deadline
        self.callback = callback
        self.cancelled = False


class VirtualClock(Clock):
    """A clock that moves only in `advance`."""

    virtual = True

    def __init__(self, *, virtual_timestamps: bool = False) -> None:
        self.records_wall_ms = virtual_timestamps
        self._now = float(int(time.monotonic()))  # seconds
        self._start_ms = self.now_ms()
        self._start_wall_ms = int(time.time() * 1000)
        self._heap: list[tuple[float, int, _Timer]] = []
        self._seq = itertools.count()
        self._lock: trio.Lock | None = None
        self.fired = 0  # timers fired by advance, for GET /v1/clock

    def now(self) -> float:
        return self._now

    def now_ms(self) -> int:
        return round(self._now * 1000)

    def reached(self, deadline_ms: float) -> bool:
        return self.now_ms() >= deadline_ms

    def wall_ms(self) -> int:
        return self._start_wall_ms + self.now_ms() - self._start_ms

    def record_ms(self) -> int:
        return self.wall_ms() if self.records_wall_ms else int(time.time() * 1000)

    def call_at(self, deadline: float, callback: Callable[[], object]) -> _Timer:
        """Call `callback` once `advance` reaches `deadline` (seconds); cancel with .cancelled."""
        timer = _Timer(deadline, callback)
        heapq.heappush(self._heap, (deadline, next(self._seq), timer))
        return timer

    async def wait(self, event: trio.Event, deadline: float) -> None:
        if deadline == math.inf:
            await event.wait()
            return
        if deadline <= self._now:
            await trio.lowlevel.checkpoint()
            return
        timer = self.call_at(deadline, event.set)
        try:
            await event.wait()
        finally:
            timer.cancelled = True

    async def sleep_until(self, deadline: float) -> None:
        await self.wait(trio.Event(), deadline)

    async def advance(self, ms: int) -> None:
        """Move the time `ms` on, firing every timer due on the way, in deadline order, each
        after the broker has settled from the one before."""
        if ms < 0:
            raise ClockError(f"ms: must be 0 or more, not {ms}")
        # trio.testing brings pytest and pdb with it (~9 MB): imported by the first advance,
        # not by every broker.
        from trio.testing import wait_all_tasks_blocked

        if self._lock is None:
            self._lock = trio.Lock()
        async with self._lock:  # two advances at once: one after the other
            target = (self.now_ms() + ms) / 1000
            while True:
                await wait_all_tasks_blocked()
                timer = self._next_due(target)
                if timer is None:
                    break
                self._now = max(self._now, timer.deadline)
                self.fired += 1
                timer.callback()
            self._now = max(self._now, target)
            await wait_all_tasks_blocked()

    def _next_due(self, target: float) -> _Timer | None:
        heap = self._heap
        while heap and heap[0][2].cancelled:
            heapq.heappop(heap)
        if not heap or heap[0][0] > target:
            return None
        timer = heapq.heappop(heap)[2]
        timer.cancelled = True
        return timer

    def pending(self) -> int:
        return sum(1 for _, _, t in self._heap if not t.cancelled)

    def describe(self) -> dict[str, object]:
        now_ms = self.now_ms()
        return {
            "mode": "virtual",
            "now_ms": now_ms,
            "elapsed_ms": now_ms - self._start_ms,
            "wall_ms": self.wall_ms(),
            "timers_pending": self.pending(),
            "timers_fired": self.fired,
        }


def make_clock(mode: str, timestamps: str = "wall") -> Clock:
    if mode == "virtual":
        return VirtualClock(virtual_timestamps=timestamps == "virtual")
    return Clock()
