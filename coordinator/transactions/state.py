"""Transaction states, the transition table, and how each state answers each request.

Theory of operation
===================

A transactional id lives in one of eight states (Kafka's TransactionState.java). A state
changes in two steps, as in Kafka's TransactionMetadata: `prepare_*` checks the move against
`TRANSITIONS` (the states it may come from, Kafka's validPreviousStates), records it as the
pending state and returns the new values (a `TxnTransit`) without applying them; the
coordinator writes them to __transaction_state; once the record is durable
`complete_transition` applies them. While a transition is pending every request that would
start another gets CONCURRENT_TRANSACTIONS. A failed write clears the pending state.

    Empty, CompleteCommit,
    CompleteAbort      ── AddPartitionsToTxn / AddOffsetsToTxn ─────────▶ Ongoing
    Ongoing            ── more partitions ──────────────────────────────▶ Ongoing
                       ── EndTxn(commit) ───────────────────────────────▶ PrepareCommit
                       ── EndTxn(abort), a timeout, a new producer ─────▶ PrepareAbort
    PrepareCommit      ── markers written to every partition ───────────▶ CompleteCommit
    PrepareAbort       ── markers written to every partition ───────────▶ CompleteAbort
    Empty, Complete*   ── InitProducerId (epoch + 1) ───────────────────▶ Empty
                       ── EndTxn(abort) with transaction.version 2 ─────▶ PrepareAbort
                       ── transactional.id.expiration.ms without use ───▶ Dead (a tombstone)
    Ongoing            ── fencing (InitProducerId, timeout) ────────────▶ PrepareEpochFence

PrepareEpochFence is only ever pending, never written: fencing bumps the epoch and moves on
to PrepareAbort at once (Kafka's prepareFenceProducerEpoch then endTransaction(ABORT)).
Dead is pending until its tombstone is durable, and then the id is forgotten.

Epochs: InitProducerId bumps the epoch (a new producer with the same transactional id fences
the old one, whose requests then meet PRODUCER_FENCED). With transaction.version 2 (EndTxn
v5, KIP-890 part 2) EndTxn also bumps it, so every transaction has its own epoch and a late
write of the previous one is fenced; a retried EndTxn is recognised by epoch + 1. An epoch
about to overflow moves the id to a new producer id.

How each state answers, after the checks every request meets first (an empty id:
INVALID_REQUEST; an unknown id: INVALID_PRODUCER_ID_MAPPING; another producer id:
INVALID_PRODUCER_ID_MAPPING; another epoch: PRODUCER_FENCED; a pending transition:
CONCURRENT_TRANSACTIONS):

    InitProducerId
        Empty, Complete*          epoch + 1 (or a new producer id), Empty
        Ongoing                   fence: abort with epoch + 1, CONCURRENT_TRANSACTIONS (retry)
        Prepare*                  CONCURRENT_TRANSACTIONS
    AddPartitionsToTxn, AddOffsetsToTxn
        Empty, Complete*          Ongoing, started now
        Ongoing                   partitions added (nothing written when already there)
        Prepare*                  CONCURRENT_TRANSACTIONS
    AddPartitionsToTxn v4+ verify_only
        Prepare*                  CONCURRENT_TRANSACTIONS
        others                    NONE for partitions in the transaction,
                                  TRANSACTION_ABORTABLE for the rest
    EndTxn                        commit                         abort
        Ongoing                   PrepareCommit, markers         PrepareAbort, markers
        PrepareCommit             CONCURRENT_TRANSACTIONS        INVALID_TXN_STATE
        PrepareAbort              INVALID_TXN_STATE              CONCURRENT_TRANSACTIONS
        CompleteCommit            NONE (v1: same epoch;          INVALID_TXN_STATE (v1);
                                  v2: a retry) else              v2: PrepareAbort, or
                                  INVALID_TXN_STATE              INVALID_TXN_STATE if a retry
        CompleteAbort             INVALID_TXN_STATE              NONE (v1; v2 retry);
                                                                 v2: PrepareAbort
        Empty                     INVALID_TXN_STATE              v1: INVALID_TXN_STATE;
                                                                 v2: PrepareAbort
    Timeout (Ongoing past transaction.timeout.ms): fence, PrepareAbort, markers.
    DescribeTransactions: the state; Dead and unknown ids: TRANSACTIONAL_ID_NOT_FOUND.
"""

from __future__ import annotations

from enum import Enum

__all__ = ["TRANSITIONS", "TransactionState"]


class TransactionState(Enum):
    """Kafka's TransactionState; `str()` gives Kafka's name (DescribeTransactions and
    ListTransactions), `id` the byte stored in TransactionLogValue.transaction_status."""

    EMPTY = "Empty"
    ONGOING = "Ongoing"
    PREPARE_COMMIT = "PrepareCommit"
    PREPARE_ABORT = "PrepareAbort"
    COMPLETE_COMMIT = "CompleteCommit"
    COMPLETE_ABORT = "CompleteAbort"
    DEAD = "Dead"
    PREPARE_EPOCH_FENCE = "PrepareEpochFence"

    def __str__(self) -> str:
        return self.value

    @property
    def id(self) -> int:
        return _IDS[self]

    @classmethod
    def from_id(cls, state_id: int) -> TransactionState:
        """Raises ValueError for an id Kafka does not define."""
        for state, i in _IDS.items():
            if i == state_id:
                return state
        raise ValueError(f"unknown transaction state id {state_id}")

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        try:
            return cls(name)
        except ValueError:
            return None

    @property
    def is_expiration_allowed(self) -> bool:
        """Whether an idle transactional id in this state may expire (Kafka's
        expirationAllowed): only when no transaction is in flight."""
        return self in (_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT)


_S = TransactionState

_IDS = {
    _S.EMPTY: 0,
    _S.ONGOING: 1,
    _S.PREPARE_COMMIT: 2,
    _S.PREPARE_ABORT: 3,
    _S.COMPLETE_COMMIT: 4,
    _S.COMPLETE_ABORT: 5,
    _S.DEAD: 6,
    _S.PREPARE_EPOCH_FENCE: 7,
}

# new state -> the states a transaction may move there from (Kafka's validPreviousStates).
TRANSITIONS: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset(
        {_S.ONGOING, _S.PREPARE_EPOCH_FENCE, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}
    ),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}
