"""CommitBatches: the offset commits that one pass of trio's scheduler decides for one
__consumer_offsets partition go into the log as one batch.

Kafka's CoordinatorRuntime collects the records of several writes into one
CoordinatorBatch and appends it when it is full or group.coordinator.append.linger.ms
(default 5) after its first write; it does not collect transactional writes. kmock's
linger is one pass of trio's scheduler, so that a lone commit waits for no timer:

  * the first commit of a partition in a pass opens the partition's batch, adds its
    records and yields once (a cancel-shielded checkpoint: the pass goes on, every task
    already runnable runs before it resumes);
  * the commits of that partition decided meanwhile, in this pass or in the next one
    before it resumes, add their records behind it and wait;
  * when it resumes, it appends the batch, applies the outcomes in the order they were
    decided (their order in the log), which delivers their replies, and wakes the others.

What this keeps:
  * a reply is never sent, and memory never shows an offset, before its record is in the
    log: the outcomes are applied only after the append, as before;
  * the log keeps the order of decisions: a batch holds one partition's records in
    decision order, and any other write to that partition (a SyncGroup's assignment, a
    DeleteGroups over several partitions, the timer's expiry, a TxnOffsetCommit) first
    appends the open batch (`flush`, called by the runtime's `_append`), so replay
    rebuilds what memory holds;
  * a crash loses nothing acknowledged: what a batch holds before its append is not
    answered yet;
  * a batch stays below the partition's max.message.bytes: a commit that would take it
    over appends it first and opens the next; a commit too large by itself fails alone;
  * a batch that cannot be written fails each of its commits (KAFKA_STORAGE_ERROR), as
    one commit's failed append did.

The waits cannot be cancelled: each is over within a pass or two, and a decided commit
must be written or failed, or its group would count it pending forever. Only offset
commits and tombstones answered once written are collected: in the strict durability
mode each commit still appends at once and waits for its group commit (broker.durability),
and a partition with a write waiting for its fsync takes no batch until that write is
applied.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Protocol

import trio

from protocol.errors import KafkaError
from protocol.records import build_batch

if TYPE_CHECKING:
    from broker.durability import Durability
    from broker.topics import TopicRegistry
    from coordinator.coordinator import GroupCoordinator
    from coordinator.outcome import Outcome

# Per record of a batch, at most: length, attributes, timestamp and offset deltas, key and
# value lengths, header count (varints at their widest).
_RECORD_OVERHEAD = 32
_BATCH_OVERHEAD = 61  # the v2 batch header


class _Broker(Protocol):
    topics: TopicRegistry
    durability: Durability

    def wall_ms(self) -> int: ...


class _Runtime(Protocol):
    """What the batches use of broker.runtime.CoordinatorRuntime."""

    @property
    def broker(self) -> _Broker: ...

    coordinator: GroupCoordinator

    def has_pending(self, pid: int) -> bool: ...
    def apply(self, outcome: Outcome) -> None: ...
    def fail(self, outcome: Outcome, e: KafkaError | OSError) -> None: ...
    def report(self, outcome: Outcome) -> None: ...
    def log_append_failed(self, e: KafkaError | OSError) -> None: ...


class _OpenBatch:
    __slots__ = ("done", "limit", "outcomes", "records", "size", "waiters")

    def __init__(self, limit: int) -> None:
        self.outcomes: list[Outcome] = []  # in decision order
        self.records: list[tuple[bytes, bytes | None]] = []  # encoded (key, value)
        self.size = _BATCH_OVERHEAD
        self.limit = limit  # the partition's max.message.bytes
        self.waiters: list[trio.lowlevel.Task] = []
        self.done = False


def _abort_failed(_: object) -> trio.lowlevel.Abort:
    return trio.lowlevel.Abort.FAILED


class CommitBatches:
    def __init__(self, runtime: _Runtime) -> None:
        self.runtime = runtime
        # The batch each __consumer_offsets partition collects in this pass.
        self.open: dict[int, _OpenBatch] = {}

    def partition(self, outcome: Outcome, producer: tuple[int, int] | None) -> int | None:
        """The partition whose batch the outcome's records can join, or None: they go
        into the log at once. Those that join are offset commits and tombstones of one
        partition, answered once written, outside a transaction."""
        records = outcome.records
        runtime = self.runtime
        if not records or producer is not None or runtime.broker.durability.strict:
            return None
        partition_for = runtime.coordinator.partition_for
        pid = partition_for(records[0].group_id)
        if len(records) == 1:  # the usual case: one commit
            if not records[0].is_offset_commit:
                return None
        else:
            for record in records:
                if not record.is_offset_commit or partition_for(record.group_id) != pid:
                    return None
        return None if runtime.has_pending(pid) else pid

    async def join(self, outcome: Outcome, pid: int) -> None:
        """Add the outcome's records to partition `pid`'s batch; return once that batch is
        in the log and the outcome applied (or failed)."""
        if outcome.generations or outcome.dead_groups:
            self.runtime.report(outcome)
        encoded = []
        size = 0
        for record in outcome.records:
            key, value = record.key_bytes(), record.value_bytes()
            encoded.append((key, value))
            size += len(key) + (len(value) if value is not None else 0) + _RECORD_OVERHEAD
        batch = self.open.get(pid)
        if batch is not None and batch.size + size > batch.limit:
            self.flush(pid)  # full: this outcome opens the next one
            batch = None
        leader = batch is None
        if batch is None:
            broker = self.runtime.broker
            topic = broker.topics.offsets_topic(now_wall_ms=broker.wall_ms())
            batch = self.open[pid] = _OpenBatch(topic.partitions[pid].log.config.max_message_bytes)
        batch.outcomes.append(outcome)
        batch.records += encoded
        batch.size += size
        if leader:
            await trio.lowlevel.cancel_shielded_checkpoint()
            if not batch.done:
                self.flush(pid)
        else:
            batch.waiters.append(trio.lowlevel.current_task())
            await trio.lowlevel.wait_task_rescheduled(_abort_failed)

    def flush_all(self, partitions: Iterable[int]) -> None:
        """Append the open batches of these partitions (before another write to them)."""
        for pid in partitions:
            if pid in self.open:
                self.flush(pid)

    def flush(self, pid: int) -> None:
        """Append partition `pid`'s batch, apply its outcomes in order, wake its waiters."""
        batch = self.open.pop(pid)
        batch.done = True
        runtime = self.runtime
        try:
            broker = runtime.broker
            wall_ms = broker.wall_ms()
            partition = broker.topics.offsets_topic(now_wall_ms=wall_ms).partitions[pid]
            try:
                partition.append(
                    build_batch([(k, v, (), wall_ms) for k, v in batch.records]), wall_ms=wall_ms
                )
            except (KafkaError, OSError) as e:
                runtime.log_append_failed(e)
                for outcome in batch.outcomes:
                    runtime.fail(outcome, e)
                return
            broker.durability.note_written(partition.log, partition.log.log_end_offset)
            for outcome in batch.outcomes:
                runtime.apply(outcome)
        finally:
            for task in batch.waiters:
                trio.lowlevel.reschedule(task)
