"""What the transaction coordinator returns and is configured with.

`Outcome` is the coordinator's answer to every call: replies to send, __transaction_state
records to append first, and transaction markers to write once those records are durable.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from coordinator.transactions.metadata import TV_2, TopicPartition
from coordinator.transactions.records import TxnRecord
from protocol.records import ControlRecordType

__all__ = ["Outcome", "Reply", "TransactionConfig", "TxnMarker", "partition_for"]


@dataclass(frozen=True, slots=True)
class TransactionConfig:
    transaction_max_timeout_ms: int = 900000  # transaction.max.timeout.ms
    transactional_id_expiration_ms: int = 604800000  # transactional.id.expiration.ms
    # transaction.abort.timed.out.transaction.cleanup.interval.ms
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10000
    # transaction.remove.expired.transaction.cleanup.interval.ms
    transaction_remove_expired_transaction_cleanup_interval_ms: int = 3600000
    transaction_state_log_num_partitions: int = 50  # transaction.state.log.num.partitions
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions (AddOffsetsToTxn)
    # The transaction.version feature level: 2 (Kafka 4.x's default) bumps the epoch per
    # transaction for clients that use EndTxn v5, and writes TransactionLogValue v1.
    transaction_version: int = TV_2


@dataclass(frozen=True, slots=True)
class Reply:
    token: int  # opaque, issued by the broker per request
    response: object  # a protocol response dataclass


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
