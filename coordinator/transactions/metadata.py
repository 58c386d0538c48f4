"""One transactional id's state: Kafka's TransactionMetadata, with its two-step transitions.

`prepare_*` computes the next values as a `TxnTransit`, checks the move against
`state.TRANSITIONS` and marks it pending; nothing else changes until `complete_transition`
applies the transit once its record is durable. This is the one place a state changes.

The pure, no-I/O rule holds: time comes in as `now_ms` arguments; producer ids are passed in.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from coordinator.transactions.state import TRANSITIONS, TransactionState
from protocol.errors import ErrorCode, KafkaError

__all__ = [
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "IllegalTransition",
    "TopicPartition",
    "TransactionMetadata",
    "TxnTransit",
    "is_epoch_exhausted",
]

NO_PRODUCER_ID = -1  # RecordBatch.NO_PRODUCER_ID
NO_PRODUCER_EPOCH = -1  # RecordBatch.NO_PRODUCER_EPOCH
_SHORT_MAX = 2**15 - 1
# transaction.version feature levels: 2 bumps the epoch per transaction (KIP-890 part 2).
TV_0 = 0
TV_2 = 2

TopicPartition = tuple[str, int]

_S = TransactionState


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka keeps Short.MAX_VALUE free so that it can always fence a producer once more."""
    return producer_epoch >= _SHORT_MAX - 1


def supports_epoch_bump(client_transaction_version: int) -> bool:
    return client_transaction_version >= TV_2


class IllegalTransition(Exception):
    """A move `TRANSITIONS` forbids, or a second transition while one is pending: a bug in
    the coordinator, never a client's fault (Kafka throws IllegalStateException)."""


@dataclass(frozen=True, slots=True)
class TxnTransit:
    """The values a transition will give a transaction (Kafka's TxnTransitMetadata)."""

    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    state: TransactionState
    topic_partitions: frozenset[TopicPartition]
    txn_start_timestamp: int
    txn_last_update_timestamp: int
    client_transaction_version: int


@dataclass(eq=False, slots=True)
class TransactionMetadata:
    transactional_id: str
    producer_id: int
    previous_producer_id: int = NO_PRODUCER_ID
    next_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 60000
    state: TransactionState = _S.EMPTY
    topic_partitions: set[TopicPartition] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    client_transaction_version: int = TV_0
    pending_state: TransactionState | None = None
    # A fence whose record could not be written: its bumped epoch was never returned to a
    # client, so the next fence reuses it instead of bumping again (Kafka's
    # hasFailedEpochFence).
    has_failed_epoch_fence: bool = False

    # --- predicates -------------------------------------------------------------------------

    @property
    def has_pending_transition(self) -> bool:
        return self.pending_state is not None

    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def snapshot(self) -> TxnTransit:
        """The current values as a transit (for replay and tests)."""
        return dataclasses.replace(
            self._transit(self.state), previous_producer_id=self.previous_producer_id
        )

    # --- prepare ----------------------------------------------------------------------------

    def prepare_fence_producer_epoch(self) -> TxnTransit:
        """PrepareEpochFence with epoch + 1 (unless a failed fence already bumped it)."""
        bump = not self.has_failed_epoch_fence and self.producer_epoch != _SHORT_MAX
        epoch = self.producer_epoch + 1 if bump else self.producer_epoch
        return self.prepare_transition(self._transit(_S.PREPARE_EPOCH_FENCE, producer_epoch=epoch))

    def prepare_increment_producer_epoch(
        self, txn_timeout_ms: int, expected_producer_epoch: int | None, now_ms: int
    ) -> TxnTransit:
        """InitProducerId on an idle id: Empty with epoch + 1 (Kafka's
        prepareIncrementProducerEpoch, including its retry and fencing rules).

        Raises:
          KafkaError: PRODUCER_FENCED when the producer's expected epoch is neither the
            current one nor the one before the last bump.
        """
        if self.is_producer_epoch_exhausted():
            raise IllegalTransition(f"{self.transactional_id}: producer epochs exhausted")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif (
            self.producer_epoch == NO_PRODUCER_EPOCH
            or expected_producer_epoch == self.producer_epoch
        ):
            epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            # A retry of a bump whose answer was lost: the same epoch again.
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            raise KafkaError(
                ErrorCode.PRODUCER_FENCED,
                f"transactional id {self.transactional_id}: expected epoch "
                f"{expected_producer_epoch}, current {self.producer_epoch}",
            )
        return self.prepare_transition(
            self._transit(
                _S.EMPTY,
                producer_epoch=epoch,
                last_producer_epoch=last_epoch,
                txn_timeout_ms=txn_timeout_ms,
                topic_partitions=frozenset(),
                txn_start_timestamp=-1,
                txn_last_update_timestamp=now_ms,
            )
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, txn_timeout_ms: int, now_ms: int, record_last_epoch: bool
    ) -> TxnTransit:
        """InitProducerId when the epoch is exhausted: a new producer id at epoch 0."""
        if self.state in (_S.ONGOING, _S.PREPARE_ABORT, _S.PREPARE_COMMIT):
            raise IllegalTransition(f"{self.transactional_id}: rotating during a transaction")
        return self.prepare_transition(
            self._transit(
                _S.EMPTY,
                producer_id=new_producer_id,
                producer_epoch=0,
                last_producer_epoch=self.producer_epoch if record_last_epoch else -1,
                txn_timeout_ms=txn_timeout_ms,
                topic_partitions=frozenset(),
                txn_start_timestamp=-1,
                txn_last_update_timestamp=now_ms,
            )
        )

    def prepare_add_partitions(
        self, partitions: frozenset[TopicPartition], now_ms: int, client_transaction_version: int
    ) -> TxnTransit:
        """Ongoing with `partitions` added; a transaction starting now starts its clock."""
        starting = self.state in (_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT)
        return self.prepare_transition(
            self._transit(
                _S.ONGOING,
                topic_partitions=frozenset(self.topic_partitions) | partitions,
                txn_start_timestamp=now_ms if starting else self.txn_start_timestamp,
                txn_last_update_timestamp=now_ms,
                client_transaction_version=client_transaction_version,
            )
        )

    def prepare_abort_or_commit(
        self,
        new_state: TransactionState,
        client_transaction_version: int,
        next_producer_id: int,
        now_ms: int,
        no_partition_added: bool,
    ) -> TxnTransit:
        """PrepareCommit or PrepareAbort; with transaction.version 2 the epoch goes up by one
        (Kafka's prepareAbortOrCommit)."""
        if supports_epoch_bump(client_transaction_version):
            overflowing_abort = self.producer_epoch == _SHORT_MAX and new_state is _S.PREPARE_ABORT
            epoch = self.producer_epoch if overflowing_abort else self.producer_epoch + 1
            last_epoch = self.producer_epoch
        else:
            epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        return self.prepare_transition(
            self._transit(
                new_state,
                producer_epoch=epoch,
                last_producer_epoch=last_epoch,
                next_producer_id=next_producer_id,
                txn_start_timestamp=now_ms if no_partition_added else self.txn_start_timestamp,
                txn_last_update_timestamp=now_ms,
                client_transaction_version=client_transaction_version,
            )
        )

    def prepare_complete(self, now_ms: int) -> TxnTransit:
        """CompleteCommit or CompleteAbort once every marker is written; an epoch that
        overflowed moves to the next producer id at epoch 0."""
        self.has_failed_epoch_fence = False
        state = _S.COMPLETE_COMMIT if self.state is _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        rotate = (
            supports_epoch_bump(self.client_transaction_version)
            and self.next_producer_id != NO_PRODUCER_ID
        )
        return self.prepare_transition(
            self._transit(
                state,
                producer_id=self.next_producer_id if rotate else self.producer_id,
                producer_epoch=0 if rotate else self.producer_epoch,
                next_producer_id=NO_PRODUCER_ID,
                topic_partitions=frozenset(),
                txn_last_update_timestamp=now_ms,
            )
        )

    def prepare_dead(self) -> TxnTransit:
        return self.prepare_transition(self._transit(_S.DEAD, topic_partitions=frozenset()))

    # --- complete ---------------------------------------------------------------------------

    def complete_transition(self, transit: TxnTransit) -> None:
        """Apply `transit`, the pending transition, now that its record is durable."""
        if self.pending_state is not transit.state:
            raise IllegalTransition(
                f"{self.transactional_id}: completing {transit.state}, pending {self.pending_state}"
            )
        self.producer_id = transit.producer_id
        self.previous_producer_id = transit.previous_producer_id
        self.next_producer_id = transit.next_producer_id
        self.producer_epoch = transit.producer_epoch
        self.last_producer_epoch = transit.last_producer_epoch
        self.txn_timeout_ms = transit.txn_timeout_ms
        self.topic_partitions = set(transit.topic_partitions)
        self.txn_start_timestamp = transit.txn_start_timestamp
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.client_transaction_version = transit.client_transaction_version
        self.state = transit.state
        self.pending_state = None

    def abandon_transition(self) -> None:
        """The pending transition's record could not be written: forget it."""
        self.pending_state = None

    # --- internals --------------------------------------------------------------------------

    def _transit(self, state: TransactionState, **changes: object) -> TxnTransit:
        transit = TxnTransit(
            producer_id=self.producer_id,
            # Every transition records the id it leaves as the previous one (Kafka's
            # prepareTransitionTo passes this.producerId as prevProducerId).
            previous_producer_id=self.producer_id,
            next_producer_id=self.next_producer_id,
            producer_epoch=self.producer_epoch,
            last_producer_epoch=self.last_producer_epoch,
            txn_timeout_ms=self.txn_timeout_ms,
            state=state,
            topic_partitions=frozenset(self.topic_partitions),
            txn_start_timestamp=self.txn_start_timestamp,
            txn_last_update_timestamp=self.txn_last_update_timestamp,
            client_transaction_version=self.client_transaction_version,
        )
        return dataclasses.replace(transit, **changes)  # type: ignore[arg-type]

    def prepare_transition(self, transit: TxnTransit) -> TxnTransit:
        """Check the move to `transit` against TRANSITIONS and mark it pending (Kafka's
        prepareTransitionTo): the one check every `prepare_*` goes through.

        Raises:
          IllegalTransition: a transition is already pending, the move is not in the table,
            or the producer id or epoch would be invalid.
        """
        if self.pending_state is not None:
            raise IllegalTransition(
                f"{self.transactional_id}: {transit.state} while {self.pending_state} is pending"
            )
        if transit.producer_id < 0:
            raise IllegalTransition(f"{self.transactional_id}: producer id {transit.producer_id}")
        if transit.state is not _S.DEAD and transit.producer_epoch < 0:
            raise IllegalTransition(
                f"{self.transactional_id}: producer epoch {transit.producer_epoch}"
            )
        if self.state not in TRANSITIONS[transit.state]:
            raise IllegalTransition(
                f"{self.transactional_id}: {self.state} cannot move to {transit.state}"
            )
        self.pending_state = transit.state
        return transit
