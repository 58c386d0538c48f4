"""The transaction coordinator (exactly-once) as a pure, synchronous state machine.

Owns: transactional ids, their producer ids and epochs, the transaction state machine
(`state.TRANSITIONS`), transaction timeouts and the expiry of idle ids, the
__transaction_state records it writes (`records`), their replay at startup, and the
COMMIT/ABORT markers it asks the broker to write.
Must not import: trio, `storage`, `broker`, or anything that reads a clock or does I/O;
time comes in as `now_ms` (wall-clock milliseconds, see `coordinator`), producer ids from
a callable passed in.
"""

from coordinator.transactions.coordinator import (
    Outcome,
    Reply,
    TransactionConfig,
    TransactionCoordinator,
    TxnMarker,
    partition_for,
)
from coordinator.transactions.metadata import (
    IllegalTransition,
    TransactionMetadata,
    TxnTransit,
)
from coordinator.transactions.records import TxnRecord
from coordinator.transactions.state import TRANSITIONS, TransactionState

__all__ = [
    "TRANSITIONS",
    "IllegalTransition",
    "Outcome",
    "Reply",
    "TransactionConfig",
    "TransactionCoordinator",
    "TransactionMetadata",
    "TransactionState",
    "TxnMarker",
    "TxnRecord",
    "TxnTransit",
    "partition_for",
]
