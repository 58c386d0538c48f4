"""Builders for transaction coordinator tests: one client action each, time as int literals.

`Broker` plays the broker's part faithfully: it appends every record (keeping them, for
replay), applies `on_appended`, writes the markers it is asked for and reports them, until
nothing is left to do. Tests that need to stop half-way call the coordinator directly.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from coordinator.transactions.config import TransactionConfig
from coordinator.transactions.coordinator import TransactionCoordinator
from coordinator.transactions.outcome import Outcome, TxnMarker
from coordinator.transactions.records import TxnRecord
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnTopic,
)
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.init_producer_id import InitProducerIdRequest

FIRST_PRODUCER_ID = 1000
T0 = 1_700_000_000_000  # wall-clock ms
TIMEOUT_MS = 60000

_tokens = itertools.count(1)


def token() -> int:
    return next(_tokens)


def reply(outcome: Outcome, tok: int) -> Any:
    (response,) = [r.response for r in outcome.replies if r.token == tok]
    return response


def code_of(fn: Any, *args: Any, **kwargs: Any) -> ErrorCode:
    with pytest.raises(KafkaError) as e:
        fn(*args, **kwargs)
    return e.value.code


@dataclass
class Broker:
    """A coordinator and the durable log of its records."""

    config: TransactionConfig = field(default_factory=TransactionConfig)
    coordinator_epoch: int = 0
    log: list[TxnRecord] = field(default_factory=list)
    markers: list[TxnMarker] = field(default_factory=list)
    next_producer_id: int = FIRST_PRODUCER_ID
    coordinator: TransactionCoordinator = field(init=False)

    def __post_init__(self) -> None:
        self.coordinator = TransactionCoordinator(
            self.config, self.allocate, coordinator_epoch=self.coordinator_epoch
        )
        self.coordinator.finish_load(T0)

    def allocate(self) -> int:
        self.next_producer_id += 1
        return self.next_producer_id - 1

    def append(self, outcome: Outcome, now_ms: int, *, write_markers: bool = True) -> Outcome:
        """Append the outcome's records, then settle what follows; returns `outcome`."""
        pending = [outcome]
        while pending:
            current = pending.pop()
            self.log.extend(current.records)
            follow = self.coordinator.on_appended(current, now_ms) if current.records else None
            for nxt in (current, follow):
                if nxt is None:
                    continue
                for marker in nxt.markers:
                    self.markers.append(marker)
                    if write_markers:
                        pending.append(
                            self.coordinator.markers_written(
                                marker.transactional_id,
                                marker.producer_id,
                                marker.producer_epoch,
                                marker.partitions,
                                now_ms,
                            )
                        )
            if follow is not None and follow.records:
                pending.append(Outcome(records=follow.records, markers=()))
        return outcome

    # --- client actions ------------------------------------------------------------------

    def init(
        self,
        transactional_id: str = "txn",
        now_ms: int = T0,
        *,
        version: int = 5,
        timeout_ms: int = TIMEOUT_MS,
        producer_id: int = -1,
        producer_epoch: int = -1,
        **kw: Any,
    ) -> Any:
        tok = token()
        request = InitProducerIdRequest(
            transactional_id=transactional_id,
            transaction_timeout_ms=timeout_ms,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
        )
        outcome = self.coordinator.init_producer_id(tok, request, version, now_ms)
        return reply(self.append(outcome, now_ms, **kw), tok)

    def add(
        self,
        producer: Any,
        partitions: dict[str, list[int]] | None = None,
        now_ms: int = T0,
        *,
        transactional_id: str = "txn",
        version: int = 3,
        **kw: Any,
    ) -> Any:
        partitions = {"orders": [0]} if partitions is None else partitions
        tok = token()
        request = AddPartitionsToTxnRequest(
            v3_and_below_transactional_id=transactional_id,
            v3_and_below_producer_id=producer.producer_id,
            v3_and_below_producer_epoch=producer.producer_epoch,
            v3_and_below_topics=[
                AddPartitionsToTxnTopic(name=t, partitions=p) for t, p in partitions.items()
            ],
        )
        outcome = self.coordinator.add_partitions(tok, request, version, now_ms)
        return reply(self.append(outcome, now_ms, **kw), tok)

    def add_offsets(
        self,
        producer: Any,
        group_id: str = "g",
        now_ms: int = T0,
        *,
        version: int = 4,
        offsets_partition: tuple[str, int] = ("__consumer_offsets", 7),
    ) -> Any:
        tok = token()
        request = AddOffsetsToTxnRequest(
            transactional_id="txn",
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            group_id=group_id,
        )
        return reply(
            self.append(
                self.coordinator.add_offsets(
                    tok, request, version, now_ms, offsets_partition=offsets_partition
                ),
                now_ms,
            ),
            tok,
        )

    def end(
        self,
        producer: Any,
        committed: bool = True,
        now_ms: int = T0,
        *,
        transactional_id: str = "txn",
        version: int = 5,
        **kw: Any,
    ) -> Any:
        tok = token()
        request = EndTxnRequest(
            transactional_id=transactional_id,
            producer_id=producer.producer_id,
            producer_epoch=producer.producer_epoch,
            committed=committed,
        )
        outcome = self.coordinator.end_txn(tok, request, version, now_ms)
        return reply(self.append(outcome, now_ms, **kw), tok)

    def expire(self, now_ms: int, **kw: Any) -> Outcome:
        return self.append(self.coordinator.expire(now_ms), now_ms, **kw)

    def state(self, transactional_id: str = "txn") -> Any:
        metadata = self.coordinator.transaction(transactional_id)
        return None if metadata is None else metadata.state

    def replayed(self) -> TransactionCoordinator:
        """A new coordinator that replays this one's log."""
        fresh = TransactionCoordinator(self.config, self.allocate)
        for record in self.log:
            fresh.replay(record.key_bytes(), record.value_bytes())
        return fresh
