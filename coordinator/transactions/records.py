"""The transaction coordinator's records in __transaction_state: what transitions write and
replay reads back.

The byte formats are Kafka's own (transaction-records/*.json), declared and encoded in
`protocol.transaction_log`; this module maps a `TxnTransit` to a TransactionLogValue and a
value back to a `TransactionMetadata`, as Kafka's TransactionLog.valueToBytes and
TransactionLog.read do.

    key                                   value
    TransactionLogKey v0 (transactional)  TransactionLogValue v1 with transaction.version 2
                                          (Kafka 4.x's default), v0 below it; null: the id
                                          expired (a tombstone)

What a record holds, and what is lost: producer id (and, from v1, the previous and next
ids), epoch, timeout, state, partitions (null for Empty), start and last-update times, and
the client's transaction version. The last epoch is not stored (Kafka neither): a producer
retrying InitProducerId across a restart is fenced rather than answered again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from coordinator.transactions.metadata import TransactionMetadata, TxnTransit
from coordinator.transactions.state import TransactionState
from protocol.transaction_log import (
    PartitionsSchema,
    TransactionLogValue,
    encode_key,
    encode_value,
)

__all__ = ["TxnRecord", "metadata_from_value", "value_from_transit", "value_version_for"]


@dataclass(frozen=True, slots=True)
class TxnRecord:
    """One __transaction_state record: its partition, key and value (None: a tombstone)."""

    partition: int
    transactional_id: str
    value: TransactionLogValue | None
    value_version: int = -1  # the version `value` is written with (-1 for a tombstone)

    def key_bytes(self) -> bytes:
        return encode_key(self.transactional_id)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        return encode_value(self.value, self.value_version)


def value_version_for(transaction_version: int) -> int:
    """TransactionVersion.transactionLogValueVersion: 1 from transaction.version 2, else 0."""
    return 1 if transaction_version >= 2 else 0


def value_from_transit(transit: TxnTransit) -> TransactionLogValue:
    """Kafka's TransactionLog.valueToBytes, before encoding. Partitions are sorted so that the
    same state always gives the same bytes."""
    partitions: list[PartitionsSchema] | None = None
    if transit.state is not TransactionState.EMPTY:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for topic, partition in sorted(transit.topic_partitions):
            by_topic[topic].append(partition)
        partitions = [PartitionsSchema(topic=t, partition_ids=p) for t, p in by_topic.items()]
    return TransactionLogValue(
        producer_id=transit.producer_id,
        previous_producer_id=transit.previous_producer_id,
        next_producer_id=transit.next_producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.txn_timeout_ms,
        transaction_status=transit.state.id,
        transaction_partitions=partitions,
        transaction_last_update_timestamp_ms=transit.txn_last_update_timestamp,
        transaction_start_timestamp_ms=transit.txn_start_timestamp,
        client_transaction_version=transit.client_transaction_version,
    )


def metadata_from_value(transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
    """Kafka's TransactionLog.read: the last epoch is unknown (-1); an Empty transaction has
    no partitions whatever the record says.

    Raises:
      ValueError: a transaction_status Kafka does not define.
    """
    state = TransactionState.from_id(value.transaction_status)
    partitions: set[tuple[str, int]] = set()
    if state is not TransactionState.EMPTY:
        for schema in value.transaction_partitions or ():
            partitions.update((schema.topic, p) for p in schema.partition_ids)
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=value.producer_id,
        previous_producer_id=value.previous_producer_id,
        next_producer_id=value.next_producer_id,
        producer_epoch=value.producer_epoch,
        txn_timeout_ms=value.transaction_timeout_ms,
        state=state,
        topic_partitions=partitions,
        txn_start_timestamp=value.transaction_start_timestamp_ms,
        txn_last_update_timestamp=value.transaction_last_update_timestamp_ms,
        client_transaction_version=value.client_transaction_version,
    )
