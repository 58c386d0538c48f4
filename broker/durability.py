"""When logs are fsynced, and which answers wait for it: Kafka's durability by default,
group commit in the strict mode.

kmock.durability=kafka (the default), as Kafka (LogManager, UnifiedLog):
  A write is answered once it is in the OS page cache: a crash of the kmock process
  (SIGKILL included) loses nothing acknowledged, and an OS crash or power loss loses what
  the page cache had not written back. Logs are fsynced
    * at segment roll (storage.Log._roll) and at shutdown (Broker.close);
    * per `log.flush.interval.messages` (topic `flush.messages`): the append that leaves that
      many messages unflushed fsyncs before it returns, so before its answer
      (storage.Log.append, Kafka's UnifiedLog.append); 1 = every write;
    * per `log.flush.interval.ms` (topic `flush.ms`): a log is fsynced within that many ms of
      a write, by the loop below. Kafka's LogManager checks logs every
      log.flush.scheduler.interval.ms; kmock checks each when it is due.
  Kafka's defaults are kept: Long.MAX_VALUE messages, and flush.ms unset, which falls back to
  log.flush.scheduler.interval.ms, also Long.MAX_VALUE: never on a timer. Kafka relies on
  replication for what the page cache may lose; a single broker has none, so this mode's
  window of loss on an OS crash is everything not yet written back (Linux: about 30 s,
  vm.dirty_expire_centisecs).

kmock.durability=strict (kmock only): group commit.
  An acks=all Produce and an OffsetCommit are answered only after an fsync covers their
  write. Such a write starts an fsync round at once, or as soon as the running round ends:
  every write made meanwhile shares that next round, so under load many writes share each
  fsync (PERF-NOTES §4: 50-100x the throughput of an fsync per write) and at low load a write
  waits for one fsync only. `group.commit.delay.ms` (default 0) holds back a round for
  waiters until that long after the previous one began, trading latency for fewer fsyncs, as
  PostgreSQL's commit_delay does. acks=0/1 writes follow log.flush.interval.* as above. The
  cost: each acks=all round trip waits for an fsync (well under 1 ms on an idle SSD, several
  ms on a busy or rotating disk), and the fsyncs take disk time from everything else; the
  gain: an OS crash or power loss loses nothing acknowledged with acks=all.

All logs share one fsync loop: each round takes the logs that are due and flushes them with
`storage.flush_logs`, in one worker-thread call, which on Linux is one syncfs per filesystem
however many partitions are dirty (a group commit across partitions, e.g. the 50 of
__consumer_offsets: one journal commit instead of fifty fdatasyncs and fifty thread hops).
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
        self,
        nursery: trio.Nursery,
        *,
        strict: bool = False,
        delay_s: float = 0.0,
        clock: Clock | None = None,
    ) -> None:
        self._nursery = nursery
        self.strict = strict  # kmock.durability=strict
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

    def waits_for(self, plog: Log, end_offset: int) -> bool:
        """Whether the answer to a write up to `end_offset` that its client waits for
        (acks=all) must wait for an fsync: in the strict mode, until one covers it."""
        return self.strict and plog.flushed_offset < end_offset

    async def wait_durable(self, plog: Log, end_offset: int) -> None:
        """For a write its client waits for (an acks=all Produce, an OffsetCommit): in the
        strict mode, return once everything before `end_offset` in `plog` has been fsynced;
        otherwise only schedule the fsync flush.ms asks for (`note_written`).

        Raises:
          KafkaError: KAFKA_STORAGE_ERROR, the fsync failed.
        """
        if not self.waits_for(plog, end_offset):
            self.note_written(plog, end_offset)
            return
        await self._wait_for(plog, True).wait()
        if plog.flushed_offset < end_offset:
            raise KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"fsync of {plog.path} failed")

    def note_written(self, plog: Log, end_offset: int | None = None) -> None:
        """Schedule the fsync that flush.ms asks for after a write up to `end_offset`
        (None: the log's end) (none by default)."""
        if plog.config.flush_mode != "interval":
            return
        if plog.flushed_offset >= (plog.log_end_offset if end_offset is None else end_offset):
            return
        self._wait_for(plog, False)

    async def _sync_loop(self) -> None:
        try:
            while self._logs:
                if self._waited_for:
                    wait_s = self._delay_s
                else:
                    wait_s = min((p.config.flush_interval_ms for p in self._logs), default=0) / 1000
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
