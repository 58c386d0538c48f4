"""Idempotent-producer state of one partition: duplicate detection and sequence checks.

For each producer id the log remembers the current epoch and the last five batches it
appended (Kafka's ProducerStateEntry, NUM_BATCHES_TO_RETAIN = 5), each as (first sequence,
last sequence, base offset, last offset). A producer keeps at most five requests in flight,
so a retry is always one of those five.

The rules, as in Kafka's ProducerAppendInfo (3.x/4.x) for batches written by clients:

* An epoch lower than the current one: INVALID_PRODUCER_EPOCH (a zombie producer).
* A batch whose (epoch, first sequence, last sequence) equals one of the cached five is a
  retry of a batch already in the log: it is not written again, and is acknowledged with
  the offsets it got the first time.
* A new epoch must start at sequence 0 when the producer already has an epoch:
  OUT_OF_ORDER_SEQUENCE_NUMBER otherwise.
* Within an epoch, the first sequence must follow the last one (wrapping from int32 max
  to 0): OUT_OF_ORDER_SEQUENCE_NUMBER otherwise.
* A producer id the partition has no state for is accepted at any sequence. That is
  KIP-360 (Kafka 2.5+): its state may have been removed with its batches by retention or
  DeleteRecords, and answering UNKNOWN_PRODUCER_ID (the old behaviour) made clients reset.

Persistence is the log itself: `Log.open` replays every batch header (no checks, as Kafka
loads state from its log), so the state survives restarts exactly as far as the batches
do. Kafka also writes `.snapshot` files so that it does not have to read every header on
start; we don't (yet). When retention removes a producer's batches, its state goes too
(`evict_below`). Kafka also expires idle producers after producer.id.expiration.ms; we
keep them until their batches go. Transactions: transactional batches are checked like
idempotent ones; open transactions (for the last stable offset) are not tracked here.
"""

from __future__ import annotations

from typing import NamedTuple

from protocol.errors import ErrorCode, KafkaError
from protocol.records import BatchHeader

__all__ = ["BatchMetadata", "ProducerAppend", "ProducerEntry", "ProducerStateManager"]

# Kafka's ProducerStateEntry.NUM_BATCHES_TO_RETAIN; also max.in.flight.requests.per.connection
# for an idempotent producer.
NUM_BATCHES_TO_RETAIN = 5
_INT32_MAX = 2**31 - 1


class BatchMetadata(NamedTuple):
    first_seq: int
    last_seq: int
    base_offset: int
    last_offset: int
    max_timestamp: int


class ProducerEntry:
    """What the partition knows of one producer id."""

    __slots__ = ("batches", "producer_epoch")

    def __init__(
        self, producer_epoch: int = -1, batches: list[BatchMetadata] | None = None
    ) -> None:
        self.producer_epoch = producer_epoch
        self.batches: list[BatchMetadata] = batches or []

    def copy(self) -> ProducerEntry:
        return ProducerEntry(self.producer_epoch, list(self.batches))

    @property
    def last_seq(self) -> int:
        return self.batches[-1].last_seq if self.batches else -1

    @property
    def last_offset(self) -> int:
        return self.batches[-1].last_offset if self.batches else -1

    def find_duplicate(self, header: BatchHeader) -> BatchMetadata | None:
        if header.producer_epoch != self.producer_epoch:
            return None
        for batch in self.batches:
            if batch.first_seq == header.base_sequence and batch.last_seq == header.last_sequence:
                return batch
        return None

    def add(self, header: BatchHeader) -> None:
        """Record a batch that is in the log (offsets assigned)."""
        if header.producer_epoch != self.producer_epoch:
            self.producer_epoch = header.producer_epoch
            self.batches.clear()
        if header.base_sequence >= 0 and not header.is_control:
            self.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    header.last_sequence,
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                )
            )
            del self.batches[:-NUM_BATCHES_TO_RETAIN]


def _in_sequence(last_seq: int, next_seq: int) -> bool:
    return next_seq == last_seq + 1 or (next_seq == 0 and last_seq == _INT32_MAX)


class ProducerStateManager:
    """Producer entries of one partition, keyed by producer id."""

    def __init__(self) -> None:
        self.producers: dict[int, ProducerEntry] = {}

    def replay(self, header: BatchHeader) -> None:
        """Take in a batch read from the log, without checks (recovery, compaction)."""
        if header.producer_id < 0:
            return
        entry = self.producers.get(header.producer_id)
        if entry is None:
            entry = self.producers[header.producer_id] = ProducerEntry()
        entry.add(header)

    def begin_append(self) -> ProducerAppend:
        """Start checking the batches of one append; commit only once they are written."""
        return ProducerAppend(self)

    def evict_below(self, log_start_offset: int) -> None:
        """Forget producers whose batches are all below the log start offset (Kafka's
        onLogStartOffsetIncremented)."""
        for producer_id in [
            p for p, e in self.producers.items() if e.last_offset < log_start_offset
        ]:
            del self.producers[producer_id]


class ProducerAppend:
    """The producer-state changes of one append, applied by `commit` after the write.

    Checks run against the state as it will be after the earlier batches of the same
    append, so several batches of one producer in one call chain correctly, and a failed
    write leaves the manager untouched.
    """

    def __init__(self, manager: ProducerStateManager) -> None:
        self._manager = manager
        self._updated: dict[int, ProducerEntry] = {}

    def _current(self, producer_id: int) -> ProducerEntry | None:
        entry = self._updated.get(producer_id)
        return entry if entry is not None else self._manager.producers.get(producer_id)

    def check(self, header: BatchHeader) -> BatchMetadata | None:
        """Check a client batch before it is written.

        Returns:
            The cached batch it duplicates (already in the log), or None to write it.

        Raises:
            KafkaError: INVALID_PRODUCER_EPOCH or OUT_OF_ORDER_SEQUENCE_NUMBER.
        """
        if header.producer_id < 0:
            return None
        entry = self._current(header.producer_id)
        if entry is None:
            return None  # KIP-360: no state, any sequence is accepted
        producer = f"producer {header.producer_id}"
        if header.producer_epoch < entry.producer_epoch:
            raise KafkaError(
                ErrorCode.INVALID_PRODUCER_EPOCH,
                f"{producer}: epoch {header.producer_epoch} is older than "
                f"the current epoch {entry.producer_epoch}",
            )
        if header.base_sequence < 0 or header.is_control:
            return None  # transaction markers carry no sequence
        duplicate = entry.find_duplicate(header)
        if duplicate is not None:
            return duplicate
        if header.producer_epoch != entry.producer_epoch:
            if header.base_sequence != 0 and entry.producer_epoch >= 0:
                raise KafkaError(
                    ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                    f"{producer}: new epoch {header.producer_epoch} starts at "
                    f"sequence {header.base_sequence}, not 0",
                )
        elif not _in_sequence(entry.last_seq, header.base_sequence):
            raise KafkaError(
                ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                f"{producer} epoch {header.producer_epoch}: sequence {header.base_sequence} "
                f"does not follow {entry.last_seq}",
            )
        return None

    def add(self, header: BatchHeader) -> None:
        """Record a batch that this append will write (offsets assigned)."""
        if header.producer_id < 0:
            return
        entry = self._updated.get(header.producer_id)
        if entry is None:
            current = self._manager.producers.get(header.producer_id)
            entry = self._updated[header.producer_id] = (
                current.copy() if current is not None else ProducerEntry()
            )
        entry.add(header)

    def commit(self) -> None:
        self._manager.producers.update(self._updated)
