"""The write bookkeeping: what happens when a record is durable, or is not.

A call's records go out in its `Outcome`; the broker appends them and then reports back
(`on_appended` or `on_append_failed`). Some records carry an effect that waits for that
answer: an offset commit changes memory only once durable, a SyncGroup's assignment fails
its replies if lost, and so on. `Writes` keeps each such record's effect until the answer
comes, keyed by the record object itself (Kafka keeps the same in its CoordinatorRuntime's
deferred events, completed when the high watermark passes the write).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

from coordinator.classic.group import Group, OffsetAndMetadata, Parked, TopicPartition
from coordinator.outcome import AnyRecord, OutcomeBuilder, append_error
from coordinator.records import CoordinatorRecord, OffsetCommitRecord
from protocol.errors import ErrorCode
from protocol.messages.sync_group import SyncGroupRequest

__all__ = [
    "AssignmentWrite",
    "CommitWrite",
    "Effect",
    "StaticMemberWrite",
    "TombstoneWrite",
    "TxnCommitWrite",
    "UndoWrite",
    "Writes",
    "group_write_error",
]


@dataclass(eq=False, slots=True)
class CommitWrite:
    """An offset commit: applied to memory once durable, unless a deletion cancelled it."""

    group: Group
    partition: TopicPartition
    offset: OffsetAndMetadata
    token: int
    cancelled: bool = False


@dataclass(frozen=True, slots=True)
class AssignmentWrite:
    """The leader's assignment; the parked SyncGroups answered with it stand or fall with it."""

    group: Group
    generation_id: int
    parked: tuple[Parked[SyncGroupRequest], ...]


@dataclass(frozen=True, slots=True)
class StaticMemberWrite:
    """A static member replaced without a rebalance; undone if the record is not durable."""

    group: Group
    group_instance_id: str
    old_member_id: str
    new_member_id: str
    old_protocols: list[tuple[str, bytes]]
    old_rebalance_timeout_ms: int
    old_session_timeout_ms: int
    leader_before: str | None
    token: int
    api_version: int


@dataclass(frozen=True, slots=True)
class TombstoneWrite:
    """Tombstones: a Dead `group` leaves memory once they are written (durable or not)."""

    group: Group | None
    # The DeleteGroups/OffsetDelete reply that depends on them, and that reply should they
    # not be written, given the error (None: expiry, which nobody waits for).
    reply: tuple[int, Callable[[ErrorCode], object]] | None


@dataclass(frozen=True, slots=True)
class TxnCommitWrite:
    """A TxnOffsetCommit: once durable, the offset is pending until its transaction's
    marker reaches the group's partition (PendingTxnOffsets)."""

    group_id: str
    partition: TopicPartition
    offset: OffsetAndMetadata
    producer_id: int
    token: int


@dataclass(frozen=True, slots=True)
class UndoWrite:
    """Changes made in memory before their records are written (a consumer group applies
    its records as it builds them, and a conversion swaps group objects): undone should
    the records not be written, as Kafka's runtime reverts its state to the last written
    offset."""

    undo: Callable[[int], None]  # given now_ms
    # The reply that depends on the records, and that reply should they not be written,
    # given the error (None: a timer, which nobody waits for).
    reply: tuple[int, Callable[[ErrorCode], object]] | None


Effect = (
    CommitWrite | AssignmentWrite | StaticMemberWrite | TombstoneWrite | TxnCommitWrite | UndoWrite
)


_E = ErrorCode


class Writes:
    """Records on their way to the log, and the effect each has once the append answers."""

    __slots__ = ("_effects",)

    def __init__(self) -> None:
        # id(record) -> (record, what to do once it is durable or failed).
        self._effects: dict[int, tuple[AnyRecord, Effect]] = {}

    def emit(
        self,
        out: OutcomeBuilder,
        record: CoordinatorRecord | OffsetCommitRecord,
        effect: Effect | None = None,
    ) -> None:
        out.records.append(record)
        if effect is not None:
            self._effects[id(record)] = (record, effect)

    def track(self, record: AnyRecord, effect: Effect) -> None:
        """`emit` for a caller that collects its records itself."""
        self._effects[id(record)] = (record, effect)

    def emit_all(
        self, out: OutcomeBuilder, records: list[CoordinatorRecord], effect: Effect
    ) -> None:
        """Records that stand or fall together: the effect rides on the last one."""
        for record in records[:-1]:
            self.emit(out, record)
        if records:
            self.emit(out, records[-1], effect)

    def attach(self, record: AnyRecord, effect: Effect) -> None:
        """Give a record already in an outcome an effect (it has none yet)."""
        assert id(record) not in self._effects, "one effect per record"
        self._effects[id(record)] = (record, effect)

    def take(self, record: object) -> Effect | None:
        """The record's effect, now that its append has answered (None if it has none)."""
        # An entry keeps its record alive, so no other live object has its id: the entry
        # found under id(record) is the record's own.
        entry = self._effects.pop(id(record), None)
        return None if entry is None else entry[1]

    def cancel_commits(self, group: Group, partitions: Iterable[TopicPartition]) -> None:
        """Commits of these partitions on their way to the log must not take effect."""
        wanted = set(partitions)
        for _, effect in self._effects.values():
            if (
                isinstance(effect, CommitWrite)
                and effect.group is group
                and effect.partition in wanted
            ):
                effect.cancelled = True

    def regroup(self, old: Group, new: Group) -> None:
        """A group's offsets moved to another Group object (a group converted between
        the classic and the consumer protocol): commits on their way follow them."""
        for _, effect in self._effects.values():
            if isinstance(effect, CommitWrite) and effect.group is old:
                effect.group = new


def group_write_error(code: ErrorCode) -> ErrorCode:
    """A failed __consumer_offsets write, as Kafka reports it to group requests
    (GroupCoordinatorService.handleOperationException)."""
    if code is _E.INVALID_FETCH_SIZE:
        return _E.UNKNOWN_SERVER_ERROR
    return append_error(code)
