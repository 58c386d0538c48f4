"""What the transaction coordinator returns.

`Outcome` is its answer to every call: replies to send (`Reply`, shared with the group
coordinator), __transaction_state records to append first, and transaction markers to write
once those records are durable. Its records are `TxnRecord`s, not the group coordinator's
CoordinatorRecords, and it carries markers, so it is a class of its own.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from coordinator.outcome import Reply
from coordinator.transactions.metadata import TopicPartition
from coordinator.transactions.records import TxnRecord
from protocol.records import ControlRecordType

__all__ = ["Outcome", "Reply", "TxnMarker", "partition_for"]


@dataclass(frozen=True, slots=True)
class TxnMarker:
    """COMMIT or ABORT control batches to write, one per partition (Kafka's TxnMarkerEntry)."""

    transactional_id: str
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int
    control_type: ControlRecordType
    partitions: tuple[TopicPartition, ...]


@dataclass(frozen=True, slots=True)
class Outcome:
    replies: tuple[Reply, ...] = ()
    records: tuple[TxnRecord, ...] = ()  # to append to __transaction_state first
    markers: tuple[TxnMarker, ...] = ()  # to write once `records` are durable


@functools.lru_cache(maxsize=65536)
def partition_for(transactional_id: str, num_partitions: int) -> int:
    """Kafka's `Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions`.

    Java's String.hashCode runs over UTF-16 code units in int32 arithmetic; Utils.abs maps
    Integer.MIN_VALUE to 0.
    """
    units = transactional_id.encode("utf-16-be")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + (units[i] << 8 | units[i + 1])) & 0xFFFFFFFF
    if h >= 2**31:
        h -= 2**32
    return (0 if h == -(2**31) else abs(h)) % num_partitions
