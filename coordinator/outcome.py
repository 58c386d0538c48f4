"""What every coordinator returns: the replies to send and the records to append first.

Shared by both group types (classic, and KIP-848 consumer groups), as Kafka's
`CoordinatorResult(records, response)` is shared by its coordinator shards.

The broker issues an opaque token per request. A call returns an `Outcome`: `replies` for
any tokens it can answer now (its own, or parked ones of other requests), `records` for
__consumer_offsets that must be appended before those replies go out.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from coordinator.consumer.records import ConsumerGroupRecord
from coordinator.records import CoordinatorRecord, OffsetCommitRecord
from protocol.errors import ErrorCode

__all__ = [
    "AnyRecord",
    "GenerationStarted",
    "Outcome",
    "OutcomeBuilder",
    "Reply",
    "RequestContext",
    "append_error",
]

# A record of either group type; both have the interface the broker appends through.
AnyRecord = CoordinatorRecord | OffsetCommitRecord | ConsumerGroupRecord


@dataclass(frozen=True, slots=True)
class RequestContext:
    api_version: int
    client_id: str
    client_host: str
    # With an authorizer: whether the request's principal may DESCRIBE a topic. A regex
    # subscription resolves only to such topics (Kafka's GroupMetadataManager.
    # filterTopicDescribeAuthorizedTopics, with the context of the member whose heartbeat
    # resolves it). None: no authorizer.
    describable: Callable[[str], bool] | None = None


class Reply(NamedTuple):
    """The response to the request of `token`. Immutable; a NamedTuple rather than a frozen
    dataclass, whose __init__ sets each field through object.__setattr__ (one per call)."""

    token: int  # opaque, issued by the broker per request
    response: object  # a protocol response dataclass


@dataclass(frozen=True, slots=True)
class GenerationStarted:
    """A group's join phase ended and its next generation began (a rebalance completed)."""

    group_id: str
    generation_id: int
    members: int
    protocol_type: str | None
    protocol_name: str | None
    leader_id: str | None


class Outcome(NamedTuple):
    """What a call decided. Immutable; a NamedTuple as `Reply` is (one is made per call)."""

    replies: tuple[Reply, ...] = ()
    records: tuple[AnyRecord, ...] = ()  # to append to __consumer_offsets first
    # What the broker reports (logs, metrics) without reading the coordinator's state:
    # groups that started a new generation, and groups that died (deleted, or their last
    # offset expired), in the order it happened.
    generations: tuple[GenerationStarted, ...] = ()
    dead_groups: tuple[str, ...] = ()


class OutcomeBuilder:
    """Replies and records collected while handling one call."""

    __slots__ = ("dead_groups", "generations", "records", "replies")

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.records: list[AnyRecord] = []
        self.generations: list[GenerationStarted] = []
        self.dead_groups: list[str] = []

    def reply(self, token: int, response: object) -> None:
        self.replies.append(Reply(token, response))

    def outcome(self) -> Outcome:
        return Outcome(
            tuple(self.replies),
            tuple(self.records),
            tuple(self.generations),
            tuple(self.dead_groups),
        )


_E = ErrorCode
# Codes of a failed append that a coordinator's client is told as another code.
_APPEND_ERRORS = {
    _E.UNKNOWN_TOPIC_OR_PARTITION: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_ENOUGH_REPLICAS: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_ENOUGH_REPLICAS_AFTER_APPEND: _E.COORDINATOR_NOT_AVAILABLE,
    _E.REQUEST_TIMED_OUT: _E.COORDINATOR_NOT_AVAILABLE,
    _E.NOT_LEADER_OR_FOLLOWER: _E.NOT_COORDINATOR,
    _E.KAFKA_STORAGE_ERROR: _E.NOT_COORDINATOR,
    _E.MESSAGE_TOO_LARGE: _E.UNKNOWN_SERVER_ERROR,
    _E.RECORD_LIST_TOO_LARGE: _E.UNKNOWN_SERVER_ERROR,
}


def append_error(code: ErrorCode) -> ErrorCode:
    """What a coordinator's client is told when the append of its records fails, the
    same for both coordinators (Kafka's TransactionStateManager.appendTransactionToLog;
    GroupCoordinatorService.handleOperationException adds INVALID_FETCH_SIZE, see
    writes.group_write_error): the client may retry, or find the coordinator again."""
    return _APPEND_ERRORS.get(code, code)
