"""TransactionRuntime: drives the pure transaction coordinator from the trio world, beside
the group coordinator's runtime (broker.runtime).

The coordinator (coordinator/transactions/) returns `Outcome(replies, records, markers)` and
never waits. This runtime:

  * issues a token per request and waits for the reply to it, unless it came at once;
  * appends `outcome.records` to __transaction_state (created on first need, as Kafka
    creates it: transaction.state.log.num.partitions partitions, compacted), waits until
    they are durable as the durability mode says (broker.durability), calls `on_appended`
    (or `on_append_failed`, whose replies replace the outcome's), then delivers the replies;
  * writes the markers: one COMMIT or ABORT control batch per partition of the
    transaction, including the group's __consumer_offsets partition for transactional
    offset commits (the group coordinator then applies or drops the pending offsets),
    waits for them to be durable, and reports them with `markers_written`; its outcome
    holds the CompleteCommit/CompleteAbort record, appended like any other. A marker that
    cannot be written is retried every MARKER_RETRY_S (Kafka's TransactionMarkerChannel-
    Manager retries until the partition's leader takes it);
  * answers the Produce path's questions (`verify_produce`): is this partition in the
    producer's transaction (KIP-890 part 1), or add it (part 2, Produce v12+ with
    transaction.version 2), as Kafka's AddPartitionsToTxnManager asks the coordinator;
  * runs its own timer task: sleep until `next_deadline_ms()` on the broker's clock (the
    coordinator's clock, see coordinator/transactions/coordinator.py), then `expire`,
    which aborts transactions past their timeout and expires idle transactional ids;
  * replays __transaction_state at start; the transaction APIs answer
    COORDINATOR_LOAD_IN_PROGRESS until then (the coordinator's own gate). Transactions
    caught between PrepareCommit/PrepareAbort and their completion get their markers
    again once the group coordinator is loaded too.

The coordinator epoch (written into markers) goes up by one at every start: kept in
`<log.dirs>/transaction-coordinator-epoch`, as Kafka's is the leader epoch of the
__transaction_state partition, which grows with every new leader.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, TypeVar, cast

import trio

from broker.coordinator_batch import append_records
from broker.log_replay import log_chunks
from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.coordinator import TransactionCoordinator
from coordinator.transactions.metadata import TopicPartition
from coordinator.transactions.outcome import Outcome, TxnMarker
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTransaction,
)
from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from protocol.records import (
    ControlRecordType,
    build_control_batch,
    decode_records,
    validate_batch,
)
from protocol.schema import DecodeError
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from broker.config import Config
    from broker.controls.clock import Clock
    from broker.durability import Durability
    from broker.producer_ids import ProducerIdAllocator
    from broker.runtime import CoordinatorRuntime
    from broker.topics import Topic, TopicRegistry
    from coordinator.transactions.records import TxnRecord
    from storage.log import Log

log = logging.getLogger("broker.transactions")

_Resp = TypeVar("_Resp")

MARKER_RETRY_S = 1.0
COORDINATOR_EPOCH_FILE = "transaction-coordinator-epoch"

# What a failed verification of a transactional Produce answers (Kafka's
# AddPartitionsToTxnManager and ReplicaManager): a fenced producer expects
# INVALID_PRODUCER_EPOCH; a partition missing from the transaction is INVALID_TXN_STATE for
# clients older than transaction version 2; the coordinator being busy is retriable, and
# reaches produce clients as NOT_ENOUGH_REPLICAS, which every client retries.
PRODUCE_VERIFICATION_ERRORS: dict[ErrorCode, ErrorCode] = {
    ErrorCode.PRODUCER_FENCED: ErrorCode.INVALID_PRODUCER_EPOCH,
    ErrorCode.TRANSACTION_ABORTABLE: ErrorCode.INVALID_TXN_STATE,
    ErrorCode.INVALID_PRODUCER_ID_MAPPING: ErrorCode.INVALID_TXN_STATE,
    ErrorCode.CONCURRENT_TRANSACTIONS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.COORDINATOR_NOT_AVAILABLE: ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_COORDINATOR: ErrorCode.NOT_ENOUGH_REPLICAS,
}
# Produce v12 is the first a transaction version 2 client sends (KIP-890 part 2).
FIRST_IMPLICIT_ADD_PRODUCE_VERSION = 12


class Broker(Protocol):
    """What the runtime uses of broker.broker.Broker."""

    config: Config
    topics: TopicRegistry
    durability: Durability
    producer_ids: ProducerIdAllocator
    data_dir: Path
    clock: Clock

    def wall_ms(self) -> int: ...


class _Parked:
    __slots__ = ("event", "response")

    def __init__(self) -> None:
        self.event = trio.Event()
        self.response: object = None


def next_coordinator_epoch(data_dir: os.PathLike[str]) -> int:
    """One more than at the last start (0 at the first), written before it is used."""
    path = os.path.join(data_dir, COORDINATOR_EPOCH_FILE)
    try:
        with open(path) as f:
            epoch = int(f.read().strip()) + 1
    except FileNotFoundError:
        epoch = 0
    except ValueError as e:
        raise OSError(f"{path}: not a coordinator epoch: {e}") from e
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(f"{epoch}\n")
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return epoch


class TransactionRuntime:
    def __init__(self, broker: Broker, groups: CoordinatorRuntime) -> None:
        self.broker = broker
        self.groups = groups
        config = TransactionConfig.from_settings(broker.config.__getitem__)
        existing = broker.topics.get(TRANSACTION_STATE_TOPIC)
        if existing is not None and len(existing.partitions) != (
            config.transaction_state_log_num_partitions
        ):
            # Kafka's setting must not change once the topic exists (ids would move to
            # other partitions); the topic as it is wins.
            log.warning(
                "%s has %d partitions, not transaction.state.log.num.partitions=%d: using %d",
                TRANSACTION_STATE_TOPIC,
                len(existing.partitions),
                config.transaction_state_log_num_partitions,
                len(existing.partitions),
            )
            config = config._replace(transaction_state_log_num_partitions=len(existing.partitions))
        self.config = config
        self.coordinator = TransactionCoordinator(
            self.config,
            broker.producer_ids.allocate,
            coordinator_epoch=next_coordinator_epoch(broker.data_dir),
        )
        self.loaded = trio.Event()
        # Set (and replaced) whenever records took effect: a transaction moved on. For
        # whoever waits for a state (tests, tools), instead of polling.
        self.changed = trio.Event()
        self.replayed_records = 0
        self.replay_errors = 0
        self._tokens = itertools.count(1)
        self._parked: dict[int, _Parked] = {}
        self._nursery: trio.Nursery | None = None

    def state_topic(self) -> Topic:
        """__transaction_state, created on first need (a transaction coordinator lookup
        or the first record to write), as Kafka creates it."""
        return self.broker.topics.transaction_state_topic(now_wall_ms=self.broker.wall_ms())

    # --- startup ---------------------------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            started = time.monotonic()
            topic = self.broker.topics.get(TRANSACTION_STATE_TOPIC)
            for p in topic.partitions if topic is not None else ():
                await self._replay_partition(p.log)
            await self.groups.replayed.wait()  # markers may go to __consumer_offsets
            outcome = self.coordinator.finish_load(self._now_ms())
            self.loaded.set()
            log.info(
                "replayed %d __transaction_state records (%d transactional ids) in %.0f ms",
                self.replayed_records,
                len(self.coordinator.transactional_ids()),
                (time.monotonic() - started) * 1000,
            )
            for marker in outcome.markers:
                nursery.start_soon(self._write_markers, marker)
            if outcome.records:
                nursery.start_soon(self.complete, outcome)
            await self._timer()

    async def _replay_partition(self, plog: Log) -> None:
        async for batches, first in log_chunks(plog):
            for header, batch in batches:
                if header.is_control:
                    continue
                try:
                    validate_batch(batch)
                    for record in decode_records(batch):
                        if record.offset < first or record.key is None:
                            continue
                        self.coordinator.replay(record.key, record.value)
                        self.replayed_records += 1
                except (KafkaError, DecodeError, ValueError) as e:
                    # As the group runtime: skip what cannot be read, say so, load the rest.
                    self.replay_errors += 1
                    log.error(
                        "skipped unreadable batch %d-%d of %s during replay: %s",
                        header.base_offset,
                        header.last_offset,
                        plog.path.name,
                        e,
                    )

    # --- the transaction APIs --------------------------------------------------------------

    async def init_producer_id(
        self, api_version: int, request: InitProducerIdRequest
    ) -> InitProducerIdResponse:
        return await self._call(
            lambda token, now: self.coordinator.init_producer_id(token, request, api_version, now)
        )

    async def add_partitions(
        self, api_version: int, request: AddPartitionsToTxnRequest
    ) -> AddPartitionsToTxnResponse:
        return await self._call(
            lambda token, now: self.coordinator.add_partitions(token, request, api_version, now)
        )

    async def add_offsets(
        self, api_version: int, request: AddOffsetsToTxnRequest
    ) -> AddOffsetsToTxnResponse:
        # KafkaApis: the group's partition of __consumer_offsets, from the group coordinator.
        self.groups.offsets_topic()
        partition: TopicPartition = (
            OFFSETS_TOPIC,
            self.groups.coordinator.partition_for(request.group_id),
        )
        return await self._call(
            lambda token, now: self.coordinator.add_offsets(
                token, request, api_version, now, offsets_partition=partition
            )
        )

    async def end_txn(self, api_version: int, request: EndTxnRequest) -> EndTxnResponse:
        return await self._call(
            lambda token, now: self.coordinator.end_txn(token, request, api_version, now)
        )

    async def verify_produce(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: list[TopicPartition],
        produce_version: int,
    ) -> dict[TopicPartition, ErrorCode]:
        """Whether a transactional Produce may append to `partitions`: the errors of those
        it may not (Kafka's ReplicaManager.appendRecords with transaction verification).

        Produce v12+ under transaction.version 2 adds the partitions itself (KIP-890 part
        2); older ones only verify that the client added them (part 1).
        """
        if (
            produce_version >= FIRST_IMPLICIT_ADD_PRODUCE_VERSION
            and self.config.transaction_version >= 2
        ):
            try:
                outcome = self.coordinator.add_partitions_implicitly(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    partitions,
                    self._now_ms(),
                )
            except KafkaError as e:
                code = PRODUCE_VERIFICATION_ERRORS.get(e.code, e.code)
                return dict.fromkeys(partitions, code)
            if outcome.records:
                failed = await self.complete(outcome)
                if failed is not None:
                    return dict.fromkeys(partitions, ErrorCode.NOT_ENOUGH_REPLICAS)
            return {}
        by_topic: dict[str, list[int]] = {}
        for topic, index in partitions:
            by_topic.setdefault(topic, []).append(index)
        request = AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnTransaction(
                    transactional_id=transactional_id,
                    producer_id=producer_id,
                    producer_epoch=producer_epoch,
                    verify_only=True,
                    topics=[
                        AddPartitionsToTxnTopic(name=t, partitions=ps) for t, ps in by_topic.items()
                    ],
                )
            ]
        )
        try:
            response = await self.add_partitions(5, request)
        except KafkaError as e:
            return dict.fromkeys(partitions, PRODUCE_VERIFICATION_ERRORS.get(e.code, e.code))
        errors: dict[TopicPartition, ErrorCode] = {}
        for result in response.results_by_transaction:
            for topic_result in result.topic_results:
                for p in topic_result.results_by_partition:
                    if p.partition_error_code != ErrorCode.NONE:
                        code = ErrorCode(p.partition_error_code)
                        errors[(topic_result.name, p.partition_index)] = (
                            PRODUCE_VERIFICATION_ERRORS.get(code, code)
                        )
        return errors

    # --- calls -----------------------------------------------------------------------------

    async def _call(self, verb: Callable[[int, int], Outcome]) -> _Resp:
        """Run a coordinator verb with a fresh token; wait for the reply to it."""
        token = next(self._tokens)
        slot = self._parked[token] = _Parked()
        try:
            outcome = verb(token, self._now_ms())
            await self.complete(outcome)
            # Most calls are answered by now (`complete` waits only for a strict-mode fsync):
            # no wait then, so that the request is answered in the step that read it
            # (broker.reactor) instead of handing the connection to a task of its own.
            if not slot.event.is_set():
                await slot.event.wait()
            return cast(_Resp, slot.response)
        finally:
            self._parked.pop(token, None)

    async def complete(self, outcome: Outcome) -> ErrorCode | None:
        """Append the outcome's records (durably), apply them, deliver the replies, then
        write the markers that follow. Returns the storage error if the append failed."""
        follow = Outcome()
        if outcome.records:
            try:
                await self._append(outcome)
            except (KafkaError, OSError) as e:
                code = e.code if isinstance(e, KafkaError) else ErrorCode.KAFKA_STORAGE_ERROR
                log.error("__transaction_state write failed: %s", e)
                failed = self.coordinator.on_append_failed(outcome, code, self._now_ms())
                self._deliver(failed)
                return code
            follow = self.coordinator.on_appended(outcome, self._now_ms())
            self.changed.set()
            self.changed = trio.Event()
        self._deliver(outcome)
        assert self._nursery is not None
        for marker in (*outcome.markers, *follow.markers):
            self._nursery.start_soon(self._write_markers, marker)
        if follow.records:
            self._nursery.start_soon(self.complete, Outcome(records=follow.records))
        return None

    def _deliver(self, outcome: Outcome) -> None:
        for reply in outcome.replies:
            slot = self._parked.get(reply.token)
            if slot is not None and not slot.event.is_set():
                slot.response = reply.response
                slot.event.set()

    async def _append(self, outcome: Outcome) -> None:
        """Each partition's records as one batch; wait until they are durable."""
        by_partition: dict[int, list[TxnRecord]] = {}
        for record in outcome.records:
            by_partition.setdefault(record.partition, []).append(record)
        written = append_records(self.state_topic(), self.broker.wall_ms(), by_partition)
        for plog, end in written:
            await self.broker.durability.wait_durable(plog, end)

    # --- markers ---------------------------------------------------------------------------

    async def _write_markers(self, marker: TxnMarker) -> None:
        """Write the marker's control batch to each of its partitions, durably; retry what
        fails; then report the partitions written (a partition of a deleted topic counts as
        written, as Kafka drops markers for partitions that no longer exist)."""
        commit = marker.control_type is ControlRecordType.COMMIT
        remaining = list(marker.partitions)
        while remaining:
            wall_ms = self.broker.wall_ms()
            batch = build_control_batch(
                marker.control_type,
                producer_id=marker.producer_id,
                producer_epoch=marker.producer_epoch,
                coordinator_epoch=marker.coordinator_epoch,
                timestamp=wall_ms,
            )
            written: list[TopicPartition] = []
            waits: list[tuple[TopicPartition, Log, int]] = []
            for tp in remaining:
                topic = self.broker.topics.get(tp[0])
                if topic is None or not 0 <= tp[1] < len(topic.partitions):
                    written.append(tp)
                    continue
                partition = topic.partitions[tp[1]]
                try:
                    partition.append(batch, wall_ms=wall_ms)
                except KafkaError as e:
                    if e.code is ErrorCode.KAFKA_STORAGE_ERROR:
                        log.warning("marker for %s-%d not written, will retry: %s", *tp, e)
                        continue
                    # A marker the log refuses for good (an older epoch than the producer
                    # already wrote there): retrying cannot help.
                    log.warning("marker for %s-%d refused: %s", *tp, e)
                    written.append(tp)
                    continue
                waits.append((tp, partition.log, partition.log.log_end_offset))
            for tp, plog, end in waits:
                try:
                    await self.broker.durability.wait_durable(plog, end)
                except KafkaError as e:
                    log.warning("marker for %s-%d not durable, will retry: %s", *tp, e)
                    continue
                written.append(tp)
                if tp[0] == OFFSETS_TOPIC:
                    self.groups.coordinator.complete_transaction(marker.producer_id, commit)
            if written:
                outcome = self.coordinator.markers_written(
                    marker.transactional_id,
                    marker.producer_id,
                    marker.producer_epoch,
                    written,
                    self._now_ms(),
                )
                if outcome.records or outcome.replies or outcome.markers:
                    await self.complete(outcome)
            remaining = [tp for tp in remaining if tp not in written]
            if remaining:
                await trio.sleep(MARKER_RETRY_S)

    # --- timers ----------------------------------------------------------------------------

    def _now_ms(self) -> int:
        """The coordinator's time: the date, in epoch ms (coordinator/transactions), as the
        broker's clock gives it (broker.controls.clock: virtual with `--clock virtual`)."""
        return self.broker.clock.wall_ms()

    async def _timer(self) -> None:
        """Run `expire` at the coordinator's deadlines. They are its two periodic checks
        (Kafka's scheduled abortTimedOutTransactions and removeExpiredTransactionalIds),
        set when the load finishes and moved on only by `expire` itself: no request brings
        them nearer, so no request wakes this task (a wake-up per transactional request
        cost more than the request's own work)."""
        clock = self.broker.clock
        while True:
            deadline_ms = self.coordinator.next_deadline_ms()
            assert deadline_ms is not None  # None only before the load, which `run` awaits
            delay_s = max(0.0, (deadline_ms - clock.wall_ms()) / 1000)
            await clock.sleep_until(clock.now() + delay_s)
            now_ms = self._now_ms()
            if now_ms >= deadline_ms:
                outcome = self.coordinator.expire(now_ms)
                if outcome.records or outcome.markers:
                    assert self._nursery is not None
                    self._nursery.start_soon(self.complete, outcome)
