"""Group commit: acknowledge a write only once an fsync covers it, sharing fsyncs.

Three modes, from `log.flush.interval.messages` / `log.flush.interval.ms` (per topic
`flush.messages` / `flush.ms`):

  always    (flush.messages=1)  every acks=all write waits for an fsync that started after
                                it was written; writes arriving during an fsync share the next.
  interval  (flush.ms=N, N>=0)  fsyncs run at most every N ms while there is unflushed data;
                                acks=all waits for the one covering its records (kmock's
                                default, N=5: a few ms of latency, 50-100x the throughput of
                                an fsync per write, PERF-NOTES §4).
  none      (flush.ms=-1)       never fsync; Kafka's own default, which relies on replication.

Whatever the mode, a write is in the OS page cache before it is acknowledged, so a crash of
the kmock process (SIGKILL included) loses nothing that was acknowledged; only an OS crash or
power loss can lose the writes not yet fsynced (acks=0/1 writes in interval mode, and
everything in none mode).

The fsync itself runs in a worker thread (`Log.sync()` is safe against concurrent appends
from the trio thread), so the event loop keeps serving while the disk works.
"""

from __future__ import annotations

import logging

import trio

from protocol.errors import ErrorCode, KafkaError
from storage import Log

log = logging.getLogger("broker.durability")


class _LogSync:
    """Fsync state of one log: what is durable, who waits, and whether a sync is running."""

    __slots__ = ("log", "durable_offset", "waiters", "running", "interval_s", "last_sync")

    def __init__(self, plog: Log) -> None:
        self.log = plog
        self.durable_offset = plog.log_end_offset
        self.waiters: list[tuple[int, trio.Event]] = []
        self.running = False
        self.interval_s = plog.config.flush_interval_ms / 1000
        self.last_sync = -1e9


class Durability:
    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self._logs: dict[int, _LogSync] = {}
        self.failed: BaseException | None = None

    def _state(self, plog: Log) -> _LogSync:
        s = self._logs.get(id(plog))
        if s is None or s.log is not plog:
            s = self._logs[id(plog)] = _LogSync(plog)
        return s

    async def wait_durable(self, plog: Log, end_offset: int) -> None:
        """Return once everything before `end_offset` in `plog` has been fsynced.

        Raises:
          KafkaError: KAFKA_STORAGE_ERROR, the fsync failed.
        """
        mode = plog.config.flush_mode
        if mode == "none":
            return
        s = self._state(plog)
        if s.durable_offset >= end_offset:
            return
        ev = trio.Event()
        s.waiters.append((end_offset, ev))
        if not s.running:
            s.running = True
            self._nursery.start_soon(self._sync_loop, s)
        await ev.wait()
        if s.durable_offset < end_offset:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"fsync of {plog.path} failed")

    def note_written(self, plog: Log, end_offset: int) -> None:
        """Schedule an fsync for a write nobody waits for (acks=0/1), bounding the loss window."""
        if plog.config.flush_mode == "none":
            return
        s = self._state(plog)
        if s.durable_offset >= end_offset:
            return
        s.waiters.append((end_offset, trio.Event()))
        if not s.running:
            s.running = True
            self._nursery.start_soon(self._sync_loop, s)

    async def _sync_loop(self, s: _LogSync) -> None:
        try:
            while s.waiters:
                wait = s.last_sync + s.interval_s - trio.current_time()
                if wait > 0:
                    await trio.sleep(wait)
                target = s.log.log_end_offset
                s.last_sync = trio.current_time()
                ok = True
                try:
                    await trio.to_thread.run_sync(s.log.sync)
                except KafkaError as e:  # KAFKA_STORAGE_ERROR: the log is offline until reopened
                    log.error("fsync of %s failed: %s", s.log.path, e)
                    ok = False
                if ok:
                    s.durable_offset = max(s.durable_offset, target)
                done = [w for w in s.waiters if not ok or w[0] <= s.durable_offset]
                s.waiters = [w for w in s.waiters if ok and w[0] > s.durable_offset]
                for _, ev in done:
                    ev.set()
        finally:
            s.running = False
