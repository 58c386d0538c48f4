"""Offsets committed inside a transaction, waiting for its marker (the transactional part
of Kafka's OffsetMetadataManager: pendingTransactionalOffsets and openTransactions).

A TxnOffsetCommit writes ordinary OffsetCommit records to __consumer_offsets, but in a
transactional batch of the producer. Until the transaction's marker reaches the group's
partition they are pending: OffsetFetch does not show them, and with require_stable it
answers UNSTABLE_OFFSET_COMMIT for their partitions. A COMMIT marker makes them committed,
each replacing the committed offset unless that one stands later in the log (a plain
OffsetCommit written after the transactional one wins, as in Kafka's
replayEndTransactionMarker); an ABORT marker drops them. Replay of __consumer_offsets does
the same with the batches and markers it reads.

Generic over the offset value, so that the group coordinator keeps its own type
(OffsetAndMetadata) and this module knows nothing of groups but their ids.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

from coordinator.transactions.metadata import TopicPartition

__all__ = ["PendingOffset", "PendingTxnOffsets"]

V = TypeVar("V")


@dataclass(frozen=True, slots=True)
class PendingOffset(Generic[V]):
    group_id: str
    partition: TopicPartition
    offset: V
    record_offset: int  # where its record stands in __consumer_offsets


class PendingTxnOffsets(Generic[V]):
    def __init__(self) -> None:
        # producer id -> (group id, partition) -> the latest pending offset.
        self._by_producer: dict[int, dict[tuple[str, TopicPartition], PendingOffset[V]]] = {}

    def add(
        self,
        producer_id: int,
        group_id: str,
        partition: TopicPartition,
        offset: V,
        record_offset: int,
    ) -> None:
        """A transactional offset commit is durable (or was replayed) at `record_offset`."""
        pending = self._by_producer.setdefault(producer_id, {})
        pending[(group_id, partition)] = PendingOffset(group_id, partition, offset, record_offset)

    def has_pending(self, group_id: str, partition: TopicPartition | None = None) -> bool:
        """Whether a transaction holds an offset of the group (of `partition`, if given):
        OffsetFetch with require_stable answers UNSTABLE_OFFSET_COMMIT then."""
        for pending in self._by_producer.values():
            for gid, tp in pending:
                if gid == group_id and (partition is None or tp == partition):
                    return True
        return False

    def producers(self, group_id: str) -> set[int]:
        """Producers with an open transaction holding offsets of the group."""
        return {
            pid
            for pid, pending in self._by_producer.items()
            if any(gid == group_id for gid, _ in pending)
        }

    def complete(self, producer_id: int, commit: bool) -> list[PendingOffset[V]]:
        """The producer's marker reached the partition: forget its pending offsets.

        Returns:
          With a COMMIT marker, the offsets to make committed (each only if the committed
          one's record stands earlier in the log: compare `record_offset`); with ABORT,
          none.
        """
        pending = self._by_producer.pop(producer_id, {})
        return list(pending.values()) if commit else []

    def drop_group(self, group_id: str) -> None:
        """The group is gone (deleted, expired): its pending offsets go with it."""
        for producer_id in list(self._by_producer):
            pending = self._by_producer[producer_id]
            for key in [k for k in pending if k[0] == group_id]:
                del pending[key]
            if not pending:
                del self._by_producer[producer_id]

    def __iter__(self) -> Iterator[tuple[int, PendingOffset[V]]]:
        for producer_id, pending in self._by_producer.items():
            for offset in pending.values():
                yield producer_id, offset
