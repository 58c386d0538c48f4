"""TransactionCoordinator: Kafka's transaction coordinator as a pure, synchronous state machine.

Every request verb takes a token (issued by the broker per request), the request dataclass,
its version and `now_ms`, and returns an `Outcome`: the replies, the __transaction_state
records to append before the replies go out, and the transaction markers to write. The
broker appends `outcome.records`, then calls `on_appended` (or `on_append_failed`, which
returns replacement replies for the same tokens), delivers the replies, and writes the
markers of the outcome `on_appended` returned. When every partition of a marker has its
control batch, it calls `markers_written`, whose outcome holds the CompleteCommit or
CompleteAbort record. Timers are data: the broker sleeps until `next_deadline_ms()` and
calls `expire`.

`now_ms` is wall-clock milliseconds here (Kafka's `time.milliseconds()`), not the monotonic
clock the group coordinator uses: transaction start and update times are written to
__transaction_state and compared with the clock again after a restart, when they decide
timeouts and the expiry of idle transactional ids.

Requests refused as a whole raise `KafkaError` (the dispatch calls the API's
`error_response`); per-partition and per-transaction answers are set in the response.

Where kmock differs from Kafka, and why:

- One broker leads every partition of __transaction_state, so the coordinator epoch is fixed
  for the life of the coordinator (a constructor argument: the broker passes a number that
  grows across restarts, so that markers of an older incarnation are recognisable).
- Kafka sends markers with WriteTxnMarkers and removes each partition as its leader acks.
  Here the broker writes the control batches itself and reports them with
  `markers_written`, all at once or a few partitions at a time. It must retry a marker
  until it is written, or report a partition that no longer exists as written (Kafka drops
  markers for deleted partitions the same way).
- If the CompleteCommit/CompleteAbort record cannot be written, Kafka retries at once; we
  retry at the next timeout check (transaction.abort.timed.out.transaction.cleanup.
  interval.ms), so that a failing disk is not hammered.
- Kafka's TransactionCoordinator is one per broker and asks the TransactionStateManager which
  partitions it owns; this one owns every partition.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import Enum

from coordinator.outcome import Reply, append_error
from coordinator.transactions.answers import (
    describe_transactions,
    fail_end_txn,
    fail_v3_add,
    fail_v4_add,
    list_transactions,
    partitions,
    refit_fenced,
    txn_result,
    verify,
    with_error,
)
from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.epochs import end_transaction, prepare_init
from coordinator.transactions.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    TV_0,
    TV_2,
    TopicPartition,
    TransactionMetadata,
    TxnTransit,
)
from coordinator.transactions.outcome import Outcome, TxnMarker, partition_for
from coordinator.transactions.records import (
    TxnRecord,
    metadata_from_value,
    value_from_transit,
    value_version_for,
)
from coordinator.transactions.state import TransactionState
from protocol.consumer_offsets import UnknownRecordKey
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest, AddOffsetsToTxnResponse
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    topic_results,
)
from protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
)
from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse
from protocol.messages.init_producer_id import InitProducerIdRequest, InitProducerIdResponse
from protocol.messages.list_transactions import ListTransactionsRequest, ListTransactionsResponse
from protocol.records import ControlRecordType
from protocol.transaction_log import TransactionLogKey, decode_record

__all__ = ["TransactionCoordinator"]

_S = TransactionState
_E = ErrorCode


class _After(Enum):
    """What a durable record leads to."""

    NOTHING = "nothing"
    SEND_MARKERS = "send markers"
    FORGET = "forget"  # a tombstone: the id is gone


# Replaces a reply's response with its failed form, given the code to report.
_OnError = Callable[[object, ErrorCode], object]


@dataclass(eq=False, slots=True)
class _Effect:
    metadata: TransactionMetadata
    transit: TxnTransit
    after: _After = _After.NOTHING
    token: int | None = None
    on_error: _OnError | None = None
    is_epoch_fence: bool = False


@dataclass(slots=True)
class _Out:
    replies: list[Reply] = field(default_factory=list)
    records: list[TxnRecord] = field(default_factory=list)
    markers: list[TxnMarker] = field(default_factory=list)

    def outcome(self) -> Outcome:
        return Outcome(tuple(self.replies), tuple(self.records), tuple(self.markers))


class TransactionCoordinator:
    """Every transactional id of every __transaction_state partition, and their timers.

    Args:
      config: the transaction.* settings.
      allocate_producer_id: returns a new producer id each call (the broker's allocator,
        shared with idempotent producers); may raise KafkaError.
      coordinator_epoch: written into every marker (see the module notes).
    """

    def __init__(
        self,
        config: TransactionConfig,
        allocate_producer_id: Callable[[], int],
        *,
        coordinator_epoch: int = 0,
    ) -> None:
        self.config = config
        self.coordinator_epoch = coordinator_epoch
        self._allocate_producer_id = allocate_producer_id
        self._txns: dict[str, TransactionMetadata] = {}
        self._loaded: dict[str, TransactionMetadata] = {}
        self._loading = True
        # id(record) -> (record, what follows once it is durable or has failed).
        self._effects: dict[int, tuple[TxnRecord, _Effect]] = {}
        self._abort_check_ms: int | None = None
        self._expiry_check_ms: int | None = None

    # --- lookups ---------------------------------------------------------------------------

    def partition_for(self, transactional_id: str) -> int:
        return partition_for(transactional_id, self.config.transaction_state_log_num_partitions)

    def transaction(self, transactional_id: str) -> TransactionMetadata | None:
        """A transactional id's state, for tests and admin tools (read it, do not change it)."""
        return self._txns.get(transactional_id)

    def transactional_ids(self) -> list[str]:
        return [t for t, m in self._txns.items() if m.state is not _S.DEAD]

    def _check_loaded(self) -> None:
        if self._loading:
            raise KafkaError(_E.COORDINATOR_LOAD_IN_PROGRESS, "__transaction_state is loading")

    def _validate_timeout(self, timeout_ms: int) -> None:
        if not 0 < timeout_ms <= self.config.transaction_max_timeout_ms:
            raise KafkaError(
                _E.INVALID_TRANSACTION_TIMEOUT,
                f"transaction.timeout.ms {timeout_ms} is not in (0, "
                f"transaction.max.timeout.ms {self.config.transaction_max_timeout_ms}]",
            )

    def _metadata(self, transactional_id: str, producer_id: int) -> TransactionMetadata:
        if not transactional_id:
            raise KafkaError(_E.INVALID_REQUEST, "empty transactional id")
        metadata = self._txns.get(transactional_id)
        if metadata is None or metadata.producer_id != producer_id:
            raise KafkaError(
                _E.INVALID_PRODUCER_ID_MAPPING,
                f"transactional id {transactional_id!r} has no producer id {producer_id}",
            )
        return metadata

    # --- InitProducerId --------------------------------------------------------------------

    def init_producer_id(
        self, token: int, request: InitProducerIdRequest, version: int, now_ms: int
    ) -> Outcome:
        """A producer id and epoch for a transactional producer (Kafka's
        handleInitProducerId); a producer without a transactional id gets a fresh id at
        epoch 0."""
        self._check_loaded()
        out = _Out()
        transactional_id = request.transactional_id
        if transactional_id is None:
            out.replies.append(
                Reply(
                    token,
                    InitProducerIdResponse(
                        producer_id=self._allocate_producer_id(), producer_epoch=0
                    ),
                )
            )
            return out.outcome()
        if not transactional_id:
            raise KafkaError(_E.INVALID_REQUEST, "empty transactional id")
        self._validate_timeout(request.transaction_timeout_ms)
        expected: tuple[int, int] | None = None
        if (request.producer_id, request.producer_epoch) != (NO_PRODUCER_ID, NO_PRODUCER_EPOCH):
            if request.producer_id == NO_PRODUCER_ID or request.producer_epoch == NO_PRODUCER_EPOCH:
                raise KafkaError(
                    _E.INVALID_REQUEST,
                    f"producer id {request.producer_id} with epoch {request.producer_epoch}",
                )
            expected = (request.producer_id, request.producer_epoch)
        metadata = self._txns.get(transactional_id)
        if metadata is None:
            metadata = TransactionMetadata(
                transactional_id=transactional_id,
                producer_id=self._allocate_producer_id(),
                txn_timeout_ms=request.transaction_timeout_ms,
                txn_last_update_timestamp=now_ms,
            )
            self._txns[transactional_id] = metadata
        try:
            transit = prepare_init(
                metadata,
                request.transaction_timeout_ms,
                expected,
                now_ms,
                self._allocate_producer_id,
            )
        except KafkaError as e:
            raise refit_fenced(e, version, 4) from None

        def failed(response: object, code: ErrorCode) -> object:
            return InitProducerIdResponse(error_code=code, producer_id=-1, producer_epoch=-1)

        if transit.state is _S.PREPARE_EPOCH_FENCE:
            # Abort the open transaction with the bumped epoch and let the producer retry:
            # by then the epoch is bumped once more, past the one the fence used.
            abort, is_fence = self._abort(metadata, transit, now_ms)
            response = InitProducerIdResponse(
                error_code=_E.CONCURRENT_TRANSACTIONS, producer_id=-1, producer_epoch=-1
            )
            out.replies.append(Reply(token, response))
            self._emit(
                out,
                _Effect(metadata, abort, _After.SEND_MARKERS, token, failed, is_fence),
            )
            return out.outcome()
        out.replies.append(
            Reply(
                token,
                InitProducerIdResponse(
                    producer_id=transit.producer_id, producer_epoch=transit.producer_epoch
                ),
            )
        )
        self._emit(out, _Effect(metadata, transit, _After.NOTHING, token, failed))
        return out.outcome()

    # --- AddPartitionsToTxn, AddOffsetsToTxn -----------------------------------------------

    def add_partitions(
        self, token: int, request: AddPartitionsToTxnRequest, version: int, now_ms: int
    ) -> Outcome:
        """Add partitions to transactions: v0-3 one producer's own transaction; v4+ a batch,
        each either added or, with verify_only, checked (Kafka's
        handleAddPartitionsToTransaction and handleVerifyPartitionsInTransaction).

        The broker answers partitions of unknown topics itself (UNKNOWN_TOPIC_OR_PARTITION,
        the others OPERATION_NOT_ATTEMPTED, as KafkaApis does) and passes only the rest.
        """
        self._check_loaded()
        out = _Out()
        if version < 4:
            try:
                effect = self._add(
                    request.v3_and_below_transactional_id,
                    request.v3_and_below_producer_id,
                    request.v3_and_below_producer_epoch,
                    partitions(request.v3_and_below_topics),
                    TV_0,
                    now_ms,
                )
            except KafkaError as e:
                raise refit_fenced(e, version, 2) from None
            topics = request.v3_and_below_topics
            out.replies.append(
                Reply(
                    token,
                    AddPartitionsToTxnResponse(
                        results_by_topic_v3_and_below=topic_results(topics, _E.NONE)
                    ),
                )
            )
            if effect is not None:
                effect.token = token
                effect.on_error = functools.partial(fail_v3_add, topics)
                self._emit(out, effect)
            return out.outcome()
        results = []
        effects = []
        for txn in request.transactions:
            if txn.verify_only:
                results.append(
                    verify(
                        self._txns,
                        txn.transactional_id,
                        txn.producer_id,
                        txn.producer_epoch,
                        txn.topics,
                    )
                )
                continue
            try:
                effect = self._add(
                    txn.transactional_id,
                    txn.producer_id,
                    txn.producer_epoch,
                    partitions(txn.topics),
                    TV_0,
                    now_ms,
                )
            except KafkaError as e:
                results.append(txn_result(txn.transactional_id, txn.topics, e.code))
                continue
            results.append(txn_result(txn.transactional_id, txn.topics, _E.NONE))
            if effect is not None:
                effect.token = token
                effect.on_error = functools.partial(fail_v4_add, txn.transactional_id, txn.topics)
                effects.append(effect)
        out.replies.append(Reply(token, AddPartitionsToTxnResponse(results_by_transaction=results)))
        for effect in effects:
            self._emit(out, effect)
        return out.outcome()

    def add_offsets(
        self,
        token: int,
        request: AddOffsetsToTxnRequest,
        version: int,
        now_ms: int,
        *,
        offsets_partition: TopicPartition,
    ) -> Outcome:
        """Add the group's __consumer_offsets partition to the transaction (Kafka's
        handleAddOffsetsToTxnRequest).

        Args:
          offsets_partition: the group's partition of __consumer_offsets, which the broker
            asks the group coordinator for, as KafkaApis does (`partitionFor(groupId)`).
        """
        self._check_loaded()
        try:
            effect = self._add(
                request.transactional_id,
                request.producer_id,
                request.producer_epoch,
                frozenset({offsets_partition}),
                TV_0,
                now_ms,
            )
        except KafkaError as e:
            raise refit_fenced(e, version, 2) from None
        out = _Out()
        out.replies.append(Reply(token, AddOffsetsToTxnResponse()))
        if effect is not None:
            effect.token = token
            effect.on_error = with_error
            self._emit(out, effect)
        return out.outcome()

    def add_partitions_implicitly(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> Outcome:
        """A transactional Produce with transaction.version 2 adds its partition itself
        (KIP-890 part 2: the partition leader's AddPartitionsToTxn for the client, with the
        client's transaction version).

        Returns:
          The record to append before the Produce may proceed (none if the partitions are
          already in the transaction).

        Raises:
          KafkaError: the checks of AddPartitionsToTxn.
        """
        self._check_loaded()
        out = _Out()
        effect = self._add(
            transactional_id, producer_id, producer_epoch, frozenset(partitions), TV_2, now_ms
        )
        if effect is not None:
            self._emit(out, effect)
        return out.outcome()

    def _add(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartition],
        client_transaction_version: int,
        now_ms: int,
    ) -> _Effect | None:
        metadata = self._metadata(transactional_id, producer_id)
        if metadata.producer_epoch != producer_epoch:
            raise KafkaError(
                _E.PRODUCER_FENCED,
                f"{transactional_id}: epoch {producer_epoch}, current {metadata.producer_epoch}",
            )
        if metadata.has_pending_transition or metadata.state in (
            _S.PREPARE_COMMIT,
            _S.PREPARE_ABORT,
        ):
            raise KafkaError(_E.CONCURRENT_TRANSACTIONS, f"{transactional_id}: ending")
        if metadata.state is _S.ONGOING and partitions <= metadata.topic_partitions:
            return None
        transit = metadata.prepare_add_partitions(partitions, now_ms, client_transaction_version)
        return _Effect(metadata, transit)

    # --- EndTxn ----------------------------------------------------------------------------

    def end_txn(self, token: int, request: EndTxnRequest, version: int, now_ms: int) -> Outcome:
        """Commit or abort (Kafka's handleEndTransaction). EndTxn v5 speaks transaction
        version 2: the epoch goes up with every transaction and the reply carries it."""
        self._check_loaded()
        client_transaction_version = TV_2 if version >= 5 else TV_0
        if not request.transactional_id:
            raise KafkaError(_E.INVALID_REQUEST, "empty transactional id")
        metadata = self._txns.get(request.transactional_id)
        if metadata is None:
            raise KafkaError(
                _E.INVALID_PRODUCER_ID_MAPPING,
                f"unknown transactional id {request.transactional_id!r}",
            )
        try:
            transit, is_fence = end_transaction(
                metadata,
                request.producer_id,
                request.producer_epoch,
                commit=request.committed,
                from_client=True,
                client_transaction_version=client_transaction_version,
                now_ms=now_ms,
                allocate_producer_id=self._allocate_producer_id,
            )
        except KafkaError as e:
            raise refit_fenced(e, version, 2) from None
        out = _Out()
        if transit is None:  # already ended this way: a retry
            out.replies.append(
                Reply(
                    token,
                    EndTxnResponse(
                        producer_id=metadata.producer_id, producer_epoch=metadata.producer_epoch
                    ),
                )
            )
            return out.outcome()
        out.replies.append(
            Reply(
                token,
                EndTxnResponse(
                    producer_id=transit.producer_id, producer_epoch=transit.producer_epoch
                ),
            )
        )
        self._emit(
            out,
            _Effect(metadata, transit, _After.SEND_MARKERS, token, fail_end_txn, is_fence),
        )
        return out.outcome()

    # --- markers ---------------------------------------------------------------------------

    def markers_written(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartition],
        now_ms: int,
    ) -> Outcome:
        """Control batches of a marker are in `partitions`. When none is left, the
        transaction completes: the outcome holds its CompleteCommit/CompleteAbort record.
        A report for a transaction that moved on (another epoch) is ignored."""
        metadata = self._txns.get(transactional_id)
        out = _Out()
        if (
            metadata is None
            or metadata.state not in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT)
            or (metadata.producer_id, metadata.producer_epoch) != (producer_id, producer_epoch)
        ):
            return out.outcome()
        metadata.topic_partitions.difference_update(partitions)
        self._maybe_complete(metadata, now_ms, out)
        return out.outcome()

    def _maybe_complete(self, metadata: TransactionMetadata, now_ms: int, out: _Out) -> None:
        if metadata.topic_partitions or metadata.has_pending_transition:
            return
        self._emit(out, _Effect(metadata, metadata.prepare_complete(now_ms)))

    def _markers(self, metadata: TransactionMetadata, now_ms: int, out: _Out) -> None:
        """Markers for a transaction whose PrepareCommit/PrepareAbort is durable (Kafka's
        addTxnMarkersToSend): for every partition still without one, or the completion at
        once when there is none."""
        if not metadata.topic_partitions:
            self._maybe_complete(metadata, now_ms, out)
            return
        control_type = (
            ControlRecordType.COMMIT
            if metadata.state is _S.PREPARE_COMMIT
            else ControlRecordType.ABORT
        )
        out.markers.append(
            TxnMarker(
                transactional_id=metadata.transactional_id,
                producer_id=metadata.producer_id,
                producer_epoch=metadata.producer_epoch,
                coordinator_epoch=self.coordinator_epoch,
                control_type=control_type,
                partitions=tuple(sorted(metadata.topic_partitions)),
            )
        )

    # --- DescribeTransactions, ListTransactions --------------------------------------------

    def describe_transactions(
        self, request: DescribeTransactionsRequest
    ) -> DescribeTransactionsResponse:
        self._check_loaded()
        return describe_transactions(self._txns, request)

    def list_transactions(
        self, request: ListTransactionsRequest, now_ms: int
    ) -> ListTransactionsResponse:
        self._check_loaded()
        return list_transactions(self._txns, request, now_ms)

    # --- timers ----------------------------------------------------------------------------

    def next_deadline_ms(self) -> int | None:
        """When `expire` has work next; None before the load finished."""
        deadlines = [d for d in (self._abort_check_ms, self._expiry_check_ms) if d is not None]
        return min(deadlines, default=None)

    def expire(self, now_ms: int) -> Outcome:
        """Abort transactions past their timeout (every transaction.abort.timed.out.
        transaction.cleanup.interval.ms) and expire idle transactional ids (every
        transaction.remove.expired.transaction.cleanup.interval.ms), as Kafka's scheduled
        abortTimedOutTransactions and removeExpiredTransactionalIds do."""
        out = _Out()
        config = self.config
        if self._abort_check_ms is not None and now_ms >= self._abort_check_ms:
            self._abort_check_ms = (
                now_ms + config.transaction_abort_timed_out_transaction_cleanup_interval_ms
            )
            for metadata in list(self._txns.values()):
                if metadata.has_pending_transition:
                    continue
                if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
                    self._maybe_complete(metadata, now_ms, out)  # a completion that failed
                elif (
                    metadata.state is _S.ONGOING
                    and metadata.txn_start_timestamp + metadata.txn_timeout_ms < now_ms
                ):
                    self._abort_timed_out(metadata, now_ms, out)
        if self._expiry_check_ms is not None and now_ms >= self._expiry_check_ms:
            self._expiry_check_ms = (
                now_ms + config.transaction_remove_expired_transaction_cleanup_interval_ms
            )
            horizon = now_ms - config.transactional_id_expiration_ms
            for metadata in list(self._txns.values()):
                if (
                    not metadata.has_pending_transition
                    and metadata.state.is_expiration_allowed
                    and metadata.txn_last_update_timestamp <= horizon
                ):
                    self._emit(out, _Effect(metadata, metadata.prepare_dead(), _After.FORGET))
        return out.outcome()

    def _abort_timed_out(self, metadata: TransactionMetadata, now_ms: int, out: _Out) -> None:
        transit, is_fence = self._abort(metadata, metadata.prepare_fence_producer_epoch(), now_ms)
        self._emit(out, _Effect(metadata, transit, _After.SEND_MARKERS, is_epoch_fence=is_fence))

    def _abort(
        self, metadata: TransactionMetadata, fence: TxnTransit, now_ms: int
    ) -> tuple[TxnTransit, bool]:
        """The coordinator aborts the open transaction with the fenced epoch (Kafka's
        TransactionCoordinator.endTransaction with isFromClient = false, from
        handleInitProducerId's epoch fence and abortTimedOutTransactions): the abort's
        transition, and whether it is an epoch fence."""
        transit, is_fence = end_transaction(
            metadata,
            fence.producer_id,
            fence.producer_epoch,
            commit=False,
            from_client=False,
            client_transaction_version=self.config.transaction_version,
            now_ms=now_ms,
            allocate_producer_id=self._allocate_producer_id,
        )
        assert transit is not None, "an Ongoing transaction always has something to abort"
        return transit, is_fence

    # --- replay ----------------------------------------------------------------------------

    def replay(self, key_bytes: bytes, value_bytes: bytes | None) -> None:
        """Fold one __transaction_state record into the state being loaded (the later record
        of an id wins; a tombstone removes it). Unknown record types are skipped, as Kafka
        skips them.

        Raises:
          DecodeError: a malformed record; ValueError: an unknown transaction status.
        """
        key, value = decode_record(key_bytes, value_bytes)
        if isinstance(key, UnknownRecordKey):
            return
        assert isinstance(key, TransactionLogKey)
        if value is None:
            self._loaded.pop(key.transactional_id, None)
        else:
            self._loaded[key.transactional_id] = metadata_from_value(key.transactional_id, value)

    def finish_load(self, now_ms: int) -> Outcome:
        """Install what replay built and start answering. Transactions that were between
        PrepareCommit/PrepareAbort and their completion get their markers again (Kafka's
        loadTransactionsForTxnTopicPartition); writing a marker twice is harmless."""
        self._txns.update(self._loaded)
        self._loaded = {}
        self._loading = False
        self._abort_check_ms = (
            now_ms + self.config.transaction_abort_timed_out_transaction_cleanup_interval_ms
        )
        self._expiry_check_ms = (
            now_ms + self.config.transaction_remove_expired_transaction_cleanup_interval_ms
        )
        out = _Out()
        for metadata in self._txns.values():
            if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
                self._markers(metadata, now_ms, out)
        return out.outcome()

    # --- what happens when a record is durable, or is not ----------------------------------

    def _emit(self, out: _Out, effect: _Effect) -> None:
        metadata = effect.metadata
        if effect.transit.state is _S.DEAD:
            value, version = None, -1
        else:
            value = value_from_transit(effect.transit)
            version = value_version_for(self.config.transaction_version)
        record = TxnRecord(
            self.partition_for(metadata.transactional_id),
            metadata.transactional_id,
            value,
            version,
        )
        self._effects[id(record)] = (record, effect)
        out.records.append(record)

    def _take_effect(self, record: TxnRecord) -> _Effect | None:
        entry = self._effects.pop(id(record), None)
        if entry is None or entry[0] is not record:
            return None
        return entry[1]

    def on_appended(self, outcome: Outcome, now_ms: int) -> Outcome:
        """The outcome's records are durable: apply their transitions.

        Returns:
          What follows: the markers of transactions now in PrepareCommit/PrepareAbort (and
          the completion record of those without partitions).
        """
        out = _Out()
        for record in outcome.records:
            effect = self._take_effect(record)
            if effect is None:
                continue
            metadata = effect.metadata
            if effect.after is _After.FORGET:
                if self._txns.get(metadata.transactional_id) is metadata:
                    del self._txns[metadata.transactional_id]
                continue
            metadata.complete_transition(effect.transit)
            if effect.after is _After.SEND_MARKERS:
                self._markers(metadata, now_ms, out)
        return out.outcome()

    def on_append_failed(self, outcome: Outcome, code: ErrorCode, now_ms: int) -> Outcome:
        """The outcome's records could not be written (`code`, a storage error): their
        transitions are abandoned. A failed fence keeps its bumped epoch for the next try
        (Kafka's hasFailedEpochFence).

        Returns:
          Replacement replies for the outcome's tokens, carrying the error a client is told
          (COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR, ...; Kafka's appendTransactionToLog).
        """
        error = append_error(code)
        replacements: dict[int, list[_OnError]] = {}
        for record in outcome.records:
            effect = self._take_effect(record)
            if effect is None:
                continue
            effect.metadata.abandon_transition()
            if effect.is_epoch_fence:
                effect.metadata.has_failed_epoch_fence = True
            if effect.token is not None and effect.on_error is not None:
                replacements.setdefault(effect.token, []).append(effect.on_error)
        replies = []
        for reply in outcome.replies:
            response = reply.response
            for on_error in replacements.get(reply.token, ()):
                response = on_error(response, error)
            replies.append(Reply(reply.token, response))
        return Outcome(replies=tuple(replies))
