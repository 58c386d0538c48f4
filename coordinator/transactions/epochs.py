"""The epoch and fencing rules of InitProducerId and EndTxn, which decide whether a request
may move a transaction and to what (Kafka's TransactionCoordinator.
prepareInitProducerIdTransit, endTransaction and endTransactionWithTV1).

Each function checks a request against one `TransactionMetadata` and either raises the
`KafkaError` to answer with or prepares the transition (see `metadata`).
"""

from __future__ import annotations

from collections.abc import Callable

from coordinator.transactions.metadata import (
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    IllegalTransition,
    TransactionMetadata,
    TxnTransit,
    supports_epoch_bump,
)
from coordinator.transactions.state import TransactionState
from protocol.errors import ErrorCode, KafkaError

__all__ = ["end_transaction", "prepare_init"]

_S = TransactionState
_E = ErrorCode
_SHORT_MAX = 2**15 - 1


def prepare_init(
    metadata: TransactionMetadata,
    timeout_ms: int,
    expected: tuple[int, int] | None,
    now_ms: int,
    allocate_producer_id: Callable[[], int],
) -> TxnTransit:
    """InitProducerId for an existing id: epoch + 1, a new producer id when the epoch is
    exhausted, or a fence when a transaction is open (Kafka's prepareInitProducerIdTransit).

    Args:
      expected: the producer id and epoch the request carries (v3+), or None.

    Raises:
      KafkaError: CONCURRENT_TRANSACTIONS, PRODUCER_FENCED.
    """
    if metadata.has_pending_transition:
        raise KafkaError(_E.CONCURRENT_TRANSACTIONS, f"{metadata.transactional_id}: pending")
    if expected is not None:
        expected_id, expected_epoch = expected
        # Fence unless the metadata was just created, the id matches (its epoch is
        # checked when bumped), or this retries a bump that rotated the producer id.
        valid = (
            metadata.producer_epoch == NO_PRODUCER_EPOCH
            or expected_id == metadata.producer_id
            or (expected_id == metadata.previous_producer_id and expected_epoch >= _SHORT_MAX - 1)
        )
        if not valid:
            raise KafkaError(
                _E.PRODUCER_FENCED,
                f"{metadata.transactional_id}: producer id {expected_id} was replaced "
                f"by {metadata.producer_id}",
            )
    state = metadata.state
    if state in (_S.PREPARE_ABORT, _S.PREPARE_COMMIT):
        raise KafkaError(_E.CONCURRENT_TRANSACTIONS, f"{metadata.transactional_id}: {state}")
    if state in (_S.COMPLETE_ABORT, _S.COMPLETE_COMMIT, _S.EMPTY):
        if metadata.is_producer_epoch_exhausted() and (
            expected is None or expected[1] == metadata.producer_epoch
        ):
            return metadata.prepare_producer_id_rotation(
                allocate_producer_id(), timeout_ms, now_ms, expected is not None
            )
        return metadata.prepare_increment_producer_epoch(
            timeout_ms, None if expected is None else expected[1], now_ms
        )
    if state is _S.ONGOING:
        return metadata.prepare_fence_producer_epoch()
    # Dead and PrepareEpochFence are only ever pending, never a state a request meets.
    raise IllegalTransition(  # pragma: no cover
        f"{metadata.transactional_id}: InitProducerId in {state}"
    )


def end_transaction(
    metadata: TransactionMetadata,
    producer_id: int,
    producer_epoch: int,
    *,
    commit: bool,
    from_client: bool,
    client_transaction_version: int,
    now_ms: int,
    allocate_producer_id: Callable[[], int],
) -> tuple[TxnTransit | None, bool]:
    """Kafka's endTransaction (transaction version 2) and endTransactionWithTV1.

    Returns:
      (the PrepareCommit/PrepareAbort transit, whether it fences the producer), or
      (None, False) when the transaction already ended this way and NONE is the answer.

    Raises:
      KafkaError: INVALID_PRODUCER_ID_MAPPING, PRODUCER_FENCED, CONCURRENT_TRANSACTIONS,
        INVALID_TXN_STATE.
    """
    tid = metadata.transactional_id
    state = metadata.state
    is_fence = metadata.pending_state is _S.PREPARE_EPOCH_FENCE
    v2 = supports_epoch_bump(client_transaction_version)
    if v2:
        retry_on_overflow = (
            not is_fence
            and metadata.previous_producer_id == producer_id
            and producer_epoch == _SHORT_MAX - 1
            and metadata.producer_epoch == 0
        )
        retry_on_bump = not is_fence and metadata.producer_epoch == producer_epoch + 1
        if is_fence:
            valid = (
                not from_client or producer_epoch == metadata.producer_epoch
            ) and producer_epoch >= metadata.producer_epoch
        elif state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            valid = retry_on_bump
        elif state in (_S.COMPLETE_COMMIT, _S.COMPLETE_ABORT):
            valid = retry_on_bump or retry_on_overflow or producer_epoch == metadata.producer_epoch
        else:
            valid = producer_epoch == metadata.producer_epoch
        is_retry = retry_on_bump or retry_on_overflow
    else:
        retry_on_overflow = is_retry = False
        valid = not (
            (from_client and producer_epoch != metadata.producer_epoch)
            or producer_epoch < metadata.producer_epoch
        )
    if metadata.producer_id != producer_id and not retry_on_overflow:
        raise KafkaError(_E.INVALID_PRODUCER_ID_MAPPING, f"{tid}: producer id {producer_id}")
    if not valid:
        raise KafkaError(
            _E.PRODUCER_FENCED,
            f"{tid}: epoch {producer_epoch}, current {metadata.producer_epoch}",
        )
    if metadata.has_pending_transition and not is_fence:
        raise KafkaError(_E.CONCURRENT_TRANSACTIONS, f"{tid}: {metadata.pending_state} pending")

    def invalid() -> KafkaError:  # made only when raised: formatting `state` is not free
        return KafkaError(
            _E.INVALID_TXN_STATE, f"{tid}: {'commit' if commit else 'abort'} in {state}"
        )

    def prepare(new_state: TransactionState, no_partition_added: bool) -> TxnTransit:
        next_producer_id = NO_PRODUCER_ID
        if v2 and not is_fence and metadata.is_producer_epoch_exhausted():
            next_producer_id = allocate_producer_id()
        if new_state is _S.PREPARE_ABORT and is_fence:
            # The fence's epoch becomes the transaction's, as Kafka sets it in memory
            # before writing the abort.
            metadata.pending_state = None
            metadata.producer_epoch = producer_epoch
            metadata.last_producer_epoch = NO_PRODUCER_EPOCH
        return metadata.prepare_abort_or_commit(
            new_state,
            client_transaction_version,
            next_producer_id,
            now_ms,
            no_partition_added,
        )

    if state is _S.ONGOING:
        return prepare(_S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT, False), is_fence
    if state is _S.COMPLETE_COMMIT:
        if commit:
            if v2 and not is_retry:
                raise invalid()
            return None, False
        if not v2 or is_retry:
            raise invalid()
        return prepare(_S.PREPARE_ABORT, True), False
    if state is _S.COMPLETE_ABORT:
        if commit:
            raise invalid()
        if not v2 or is_retry:
            return None, False
        return prepare(_S.PREPARE_ABORT, True), False
    if state is _S.PREPARE_COMMIT:
        raise KafkaError(_E.CONCURRENT_TRANSACTIONS, f"{tid}: committing") if commit else invalid()
    if state is _S.PREPARE_ABORT:
        raise invalid() if commit else KafkaError(_E.CONCURRENT_TRANSACTIONS, f"{tid}: aborting")
    if state is _S.EMPTY:
        if v2 and not commit:
            return prepare(_S.PREPARE_ABORT, True), False
        raise invalid()
    # Dead and PrepareEpochFence are only ever pending, never a state a request meets.
    raise IllegalTransition(f"{tid}: EndTxn in {state}")  # pragma: no cover
