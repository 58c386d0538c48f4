"""The transaction coordinator (exactly-once) as a pure, synchronous state machine.

Owns: transactional ids, their producer ids and epochs, the transaction state machine,
transaction timeouts and the expiry of idle ids, the __transaction_state records it writes,
their replay at startup, and the COMMIT/ABORT markers it asks the broker to write.
Must not import: trio, `storage`, `broker`, or anything that reads a clock or does I/O;
time comes in as `now_ms` (wall-clock milliseconds, see `coordinator`), producer ids from a
callable passed in.

    coordinator.py   TransactionCoordinator, the verbs (Kafka's TransactionCoordinator)
    state.py         TransactionState and TRANSITIONS, the one transition table
    metadata.py      TransactionMetadata: one id's state and its two-step transitions
    epochs.py        the epoch and fencing rules of InitProducerId and EndTxn
    answers.py       responses it builds, and their failed forms
    pending_offsets.py  offsets of TxnOffsetCommit waiting for their marker (for the group
                     coordinator's OffsetManager)
    outcome.py       Outcome, TxnMarker, partition_for
    records.py       the __transaction_state records it writes and replays
    config.py        TransactionConfig and the one table of its settings and defaults

Import from the module that owns a name: this package imports nothing, as `coordinator`.
"""
