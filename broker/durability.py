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
import weakref

import trio

from protocol.errors import ErrorCode, KafkaError
from storage import Log

log = logging.getLogger("broker.durability")


class _LogSync:
    """Fsync state of one log while writes wait for it: who waits, and when it last synced.
    What is durable is the log's own `flushed_offset`. The state exists only while its sync
    loop runs, so the logs of deleted topics are not kept alive here."""

    __slots__ = ("interval_s", "last_sync", "log", "waiters")

    def __init__(self, plog: Log, last_sync: float) -> None:
        self.log = plog
        self.waiters: list[tuple[int, trio.Event]] = []
        self.interval_s = plog.config.flush_interval_ms / 1000
        self.last_sync = last_sync


class Durability:
    def __init__(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery
        self._active: dict[int, _LogSync] = {}  # id(log) -> state, while its loop runs
        # When each log was last synced, kept after its loop ends so that the interval
        # holds across bursts; weak, so that a deleted log can go.
        self._last_sync: weakref.WeakKeyDictionary[Log, float] = weakref.WeakKeyDictionary()

    def _wait_for(self, plog: Log, end_offset: int) -> trio.Event:
        s = self._active.get(id(plog))
        if s is None:
            s = self._active[id(plog)] = _LogSync(plog, self._last_sync.get(plog, -1e9))
            self._nursery.start_soon(self._sync_loop, s)
        ev = trio.Event()
        s.waiters.append((end_offset, ev))
        return ev

    async def wait_durable(self, plog: Log, end_offset: int) -> None:
        """Return once everything before `end_offset` in `plog` has been fsynced.

        Raises:
          KafkaError: KAFKA_STORAGE_ERROR, the fsync failed.
        """
        if plog.config.flush_mode == "none" or plog.flushed_offset >= end_offset:
            return
        await self._wait_for(plog, end_offset).wait()
        if plog.flushed_offset < end_offset:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"fsync of {plog.path} failed")

    def note_written(self, plog: Log, end_offset: int) -> None:
        """Schedule an fsync for a write nobody waits for (acks=0/1), bounding the loss window."""
        if plog.config.flush_mode == "none" or plog.flushed_offset >= end_offset:
            return
        self._wait_for(plog, end_offset)

    async def _sync_loop(self, s: _LogSync) -> None:
        plog = s.log
        try:
            while s.waiters:
                wait = s.last_sync + s.interval_s - trio.current_time()
                if wait > 0:
                    await trio.sleep(wait)
                s.last_sync = trio.current_time()
                ok = True
                try:
                    await trio.to_thread.run_sync(plog.sync)
                except KafkaError as e:  # KAFKA_STORAGE_ERROR: the log is offline until reopened
                    log.error("fsync of %s failed: %s", plog.path, e)
                    ok = False
                durable = plog.flushed_offset
                done = [w for w in s.waiters if not ok or w[0] <= durable]
                s.waiters = [w for w in s.waiters if ok and w[0] > durable]
                for _, ev in done:
                    ev.set()
        finally:
            self._active.pop(id(plog), None)
            self._last_sync[plog] = s.last_sync
