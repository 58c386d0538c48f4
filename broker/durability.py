"""Group commit: acknowledge a write only once an fsync covers it, sharing fsyncs.

Three modes, from `log.flush.interval.messages` / `log.flush.interval.ms` (per topic
`flush.messages` / `flush.ms`):

  always    (flush.messages=1)  every write is fsynced before it is acknowledged, on its
                                own (in `Log.append`).
  interval  (flush.ms=N, N>=0)  group commit (kmock's default, N=5). A write that somebody
                                waits for (acks=all, an OffsetCommit) starts an fsync round
                                at once, or as soon as the running round ends: every write
                                made meanwhile shares that next round, so under load many
                                writes share each fsync (PERF-NOTES §4: 50-100x the
                                throughput of an fsync per write) and at low load a write
                                waits for one fsync only. A write nobody waits for
                                (acks=0/1) is fsynced within N ms. This is Kafka's meaning of
                                log.flush.interval.ms, the longest a message stays in memory
                                before it is flushed; flushing sooner when a client waits
                                costs fsyncs, never data. `group.commit.delay.ms` (kmock
                                only, default 0) holds back a round for waiters until that
                                long after the previous one began, trading latency for fewer
                                fsyncs, as PostgreSQL's commit_delay does.
  none      (flush.ms=-1)       never fsync; Kafka's own default, which relies on replication.

Whatever the mode, a write is in the OS page cache before it is acknowledged, so a crash of
the kmock process (SIGKILL included) loses nothing that was acknowledged; only an OS crash or
power loss can lose the writes not yet fsynced (acks=0/1 writes in interval mode, and
everything in none mode).

All logs share one fsync loop: each round takes the logs that have waiters and flushes
them with `storage.flush_logs`, in one worker-thread call, which on Linux is one syncfs per
filesystem however many partitions are dirty (a group commit across partitions, e.g. the 50
of __consumer_offsets: one journal commit instead of fifty fdatasyncs and fifty thread hops).
`Log.flush()`/`flush_logs` are safe against concurrent appends from the trio thread, so the
event loop keeps serving while the disk works.
"""

from __future__ import annotations

import logging
import math

import trio

from broker.controls.clock import Clock
from protocol.errors import ErrorCode, KafkaError
from storage import Log, flush_logs

log = logging.getLogger("broker.durability")


class Durability:
    def __init__(
        self, nursery: trio.Nursery, delay_s: float = 0.0, clock: Clock | None = None
    ) -> None:
        self._nursery = nursery
        self._delay_s = delay_s  # group.commit.delay.ms
        # The broker's clock (broker.controls.clock): with a virtual one, flush.ms and
        # group.commit.delay.ms pass only when it is advanced.
        self._clock = clock or Clock()
        # The logs to flush in the next round, and the event that round sets: everyone
        # waiting for a round waits on the same event.
        self._logs: set[Log] = set()
        self._round = trio.Event()
        self._waited_for = False  # somebody waits for the next round: start it at once
        self._last_sync = -math.inf
        self._running = False
        # The loop's wait for the next round: when it ends, and the event that ends it early.
        self._due = math.inf
        self._woken: trio.Event | None = None

    def _wait_for(self, plog: Log, waited_for: bool) -> trio.Event:
        self._logs.add(plog)
        self._waited_for |= waited_for
        if not self._running:
            self._running = True
            self._nursery.start_soon(self._sync_loop)
        elif self._woken is not None:
            due = self._last_sync + (
                self._delay_s if waited_for else plog.config.flush_interval_ms / 1000
            )
            if due < self._due:
                self._woken.set()  # a waiter, or a log with a shorter flush.ms: recompute
        return self._round

    async def wait_durable(self, plog: Log, end_offset: int) -> None:
        """Return once everything before `end_offset` in `plog` has been fsynced.

        Raises:
          KafkaError: KAFKA_STORAGE_ERROR, the fsync failed.
        """
        if plog.config.flush_mode == "none" or plog.flushed_offset >= end_offset:
            return
        await self._wait_for(plog, True).wait()
        if plog.flushed_offset < end_offset:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"fsync of {plog.path} failed")

    def note_written(self, plog: Log, end_offset: int) -> None:
        """Schedule an fsync for a write nobody waits for (acks=0/1), bounding the loss window."""
        if plog.config.flush_mode == "none" or plog.flushed_offset >= end_offset:
            return
        self._wait_for(plog, False)

    async def _sync_loop(self) -> None:
        try:
            while self._logs:
                if self._waited_for:
                    wait_s = self._delay_s
                else:
                    wait_s = min(p.config.flush_interval_ms for p in self._logs) / 1000
                due = self._last_sync + wait_s
                if due > self._clock.now():
                    self._due, self._woken = due, trio.Event()
                    await self._clock.wait(self._woken, due)
                    self._due, self._woken = math.inf, None
                    continue  # due now, or woken to recompute when
                await trio.lowlevel.checkpoint()  # writes made meanwhile join this round
                self._last_sync = self._clock.now()
                self._waited_for = False
                logs, self._logs = self._logs, set()
                done, self._round = self._round, trio.Event()
                failed = await trio.to_thread.run_sync(flush_logs, list(logs))
                for plog, e in failed.items():
                    # KAFKA_STORAGE_ERROR: the log is offline until reopened.
                    log.error("fsync of %s failed: %s", plog.path, e)
                # Every waiter of the round is woken: its write preceded the round, so it is
                # durable now unless the flush failed (or the log was closed meanwhile), which
                # wait_durable reports.
                done.set()
        finally:
            self._running = False
            self._due, self._woken = math.inf, None
