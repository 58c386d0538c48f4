"""Group and transaction requests at a broker that is not their coordinator.

With several brokers (broker.cluster_state) the coordinator of a group is the leader of
the group's __consumer_offsets partition, and that of a transactional id the leader of its
__transaction_state partition. A request for a key this broker does not coordinate is
answered NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while a moved coordinator loads,
COORDINATOR_NOT_AVAILABLE while nobody leads the partition), as Kafka's
GroupCoordinatorService and TransactionCoordinator answer, through the API's error
response: the handler is not run.

`wrap` puts the check in front of each coordinator API's handler in the route table; with
a single broker the check is skipped. APIs that name several keys (DescribeGroups,
DeleteGroups, ConsumerGroupDescribe, OffsetFetch v8+, DescribeTransactions) are answered
per key, as Kafka's GroupCoordinatorService runs one operation per __consumer_offsets
partition and fails each on its own (and TransactionCoordinator.handleDescribeTransactions
per id): a key coordinated elsewhere gets NOT_COORDINATOR (or the other codes above) in its
own entry, built by the API's error_response; the handler serves the others, and the
entries keep the request's order. ListGroups and ListTransactions list, at
each broker, the groups and transactions it coordinates, as Kafka's brokers do (admin clients
ask every broker and merge).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages import (
    consumer_group_describe,
    delete_groups,
    describe_groups,
    describe_transactions,
    offset_fetch,
)
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.describe_transactions import DescribeTransactionsRequest
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.join_group import JoinGroupRequest
from protocol.messages.leave_group import LeaveGroupRequest
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.list_transactions import ListTransactionsRequest
from protocol.messages.offset_commit import OffsetCommitRequest
from protocol.messages.offset_delete import OffsetDeleteRequest
from protocol.messages.offset_fetch import OffsetFetchRequest
from protocol.messages.sync_group import SyncGroupRequest
from protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from protocol.schema import Message

__all__ = ["coordinator_check", "wrap"]

GROUP, TRANSACTION = "group", "transaction"


def _one_group(r: Any, v: int) -> list[str]:
    return [r.group_id]


def _offset_fetch(r: Any, v: int) -> list[str]:
    return [g.group_id for g in r.groups] if v >= 8 else [r.group_id]


def _add_partitions(r: Any, v: int) -> list[str]:
    # v4+ is sent by brokers (KIP-890 verification) inside this process: not checked.
    return [r.v3_and_below_transactional_id] if v <= 3 else []


def _transactional_id(r: Any, v: int) -> list[str]:
    # InitProducerId without a transactional id goes to any broker.
    return [] if r.transactional_id is None else [r.transactional_id]


# request class -> (coordinator kind, the keys it names)
KEYS: dict[type[Message], tuple[str, Callable[[Any, int], list[str]]]] = {
    JoinGroupRequest: (GROUP, _one_group),
    SyncGroupRequest: (GROUP, _one_group),
    HeartbeatRequest: (GROUP, _one_group),
    LeaveGroupRequest: (GROUP, _one_group),
    OffsetCommitRequest: (GROUP, _one_group),
    OffsetDeleteRequest: (GROUP, _one_group),
    TxnOffsetCommitRequest: (GROUP, _one_group),
    ConsumerGroupHeartbeatRequest: (GROUP, _one_group),
    OffsetFetchRequest: (GROUP, _offset_fetch),
    DescribeGroupsRequest: (GROUP, lambda r, v: list(r.groups)),
    DeleteGroupsRequest: (GROUP, lambda r, v: list(r.groups_names)),
    ConsumerGroupDescribeRequest: (GROUP, lambda r, v: list(r.group_ids)),
    InitProducerIdRequest: (TRANSACTION, _transactional_id),
    AddPartitionsToTxnRequest: (TRANSACTION, _add_partitions),
    AddOffsetsToTxnRequest: (TRANSACTION, _transactional_id),
    EndTxnRequest: (TRANSACTION, _transactional_id),
    DescribeTransactionsRequest: (TRANSACTION, lambda r, v: list(r.transactional_ids)),
}


@dataclasses.dataclass(frozen=True)
class PerKey:
    """An API answered per key: the request's list of keys (entries with `item_key`, or the
    keys themselves), the response's list of entries and their key field, the error
    response that builds an entry for a refused key."""

    request_field: str
    item_key: str | None
    response_field: str
    response_key: str
    error_response: Callable[[Any, ErrorCode, int], Any]
    since: int = 0  # OffsetFetch names several groups from v8


PER_KEY: dict[type[Message], PerKey] = {
    DescribeGroupsRequest: PerKey(
        "groups", None, "groups", "group_id", describe_groups.error_response
    ),
    DeleteGroupsRequest: PerKey(
        "groups_names", None, "results", "group_id", delete_groups.error_response
    ),
    ConsumerGroupDescribeRequest: PerKey(
        "group_ids", None, "groups", "group_id", consumer_group_describe.error_response
    ),
    OffsetFetchRequest: PerKey(
        "groups", "group_id", "groups", "group_id", offset_fetch.error_response, since=8
    ),
    DescribeTransactionsRequest: PerKey(
        "transactional_ids",
        None,
        "transaction_states",
        "transactional_id",
        describe_transactions.error_response,
    ),
}


# request class -> (coordinator kind, the response's list field, the key of each entry): the
# listing APIs, whose answers a broker filters down to what it coordinates.
LISTINGS: dict[type[Message], tuple[str, str, str]] = {
    ListGroupsRequest: (GROUP, "groups", "group_id"),
    ListTransactionsRequest: (TRANSACTION, "transaction_states", "transactional_id"),
}


def coordinator_check(ctx: RequestContext, kind: str, key: str) -> ErrorCode:
    """What a request for `key` meets at the broker it came to (NONE: it coordinates it)."""
    broker = ctx.broker
    if kind == GROUP:
        topic = broker.coordinator.offsets_topic()
        index = broker.coordinator.coordinator.partition_for(key)
    else:
        if not key:
            return ErrorCode.NONE  # the handler's own answer (INVALID_REQUEST)
        topic = broker.transactions.state_topic()
        index = broker.transactions.coordinator.partition_for(key)
    if not 0 <= index < len(topic.partitions):
        return ErrorCode.NONE
    return broker.cluster.coordinator_error(topic.partitions[index], ctx.node_id)


def wrap(request: type[Message], handler: Any) -> Any:
    """`handler`, behind the coordinator check when `request` is a coordinator API."""
    if request in LISTINGS:
        return _listing(handler, *LISTINGS[request])
    entry = KEYS.get(request)
    if entry is None:
        return handler
    kind, keys = entry
    per_key = PER_KEY.get(request)
    if per_key is not None:
        return _per_key(handler, kind, per_key)

    async def guarded(ctx: RequestContext, body: Any) -> Any:
        if ctx.broker.cluster.multi:
            _refuse_whole(ctx, kind, keys(body, ctx.api_version))
        return await handler(ctx, body)

    guarded.__wrapped__ = handler  # type: ignore[attr-defined]
    return guarded


def _per_key(handler: Any, kind: str, spec: PerKey) -> Any:
    """`handler` for an API answered per key: the keys this broker coordinates go to the
    handler (which is not called when there are none), the others are answered with their
    own code."""

    async def per_key(ctx: RequestContext, body: Any) -> Any:
        version = ctx.api_version
        if not ctx.broker.cluster.multi or version < spec.since:
            if ctx.broker.cluster.multi:  # OffsetFetch v0-7: one group, refused whole
                _refuse_whole(ctx, kind, [body.group_id])
            return await handler(ctx, body)
        items = list(getattr(body, spec.request_field))
        codes = [coordinator_check(ctx, kind, _item_key(spec, item)) for item in items]
        served = [item for item, code in zip(items, codes, strict=True) if code == ErrorCode.NONE]
        answered: dict[str, list[Any]] = {}
        response = None
        if served or not items:
            response = await handler(ctx, dataclasses.replace(body, **{spec.request_field: served}))
            for entry in getattr(response, spec.response_field):
                answered.setdefault(getattr(entry, spec.response_key), []).append(entry)
        if response is None:
            response = spec.error_response(body, ErrorCode.NONE, version)
        entries = []
        for item, code in zip(items, codes, strict=True):
            key = _item_key(spec, item)
            if code == ErrorCode.NONE and answered.get(key):
                entries.append(answered[key].pop(0))
                continue
            one = dataclasses.replace(body, **{spec.request_field: [item]})
            entries.extend(getattr(spec.error_response(one, code, version), spec.response_field))
        return dataclasses.replace(response, **{spec.response_field: entries})

    per_key.__wrapped__ = handler  # type: ignore[attr-defined]
    return per_key


def _item_key(spec: PerKey, item: Any) -> str:
    return str(item if spec.item_key is None else getattr(item, spec.item_key))


def _refuse_whole(ctx: RequestContext, kind: str, keys: list[str]) -> None:
    for key in keys:
        code = coordinator_check(ctx, kind, key)
        if code != ErrorCode.NONE:
            raise KafkaError(code, f"{kind} coordinator of {key!r} is not broker {ctx.node_id}")


def _listing(handler: Any, kind: str, field: str, key: str) -> Any:
    async def listed(ctx: RequestContext, body: Any) -> Any:
        response = await handler(ctx, body)
        if not ctx.broker.cluster.multi:
            return response
        kept = [
            entry
            for entry in getattr(response, field)
            if coordinator_check(ctx, kind, getattr(entry, key)) == ErrorCode.NONE
        ]
        return dataclasses.replace(response, **{field: kept})

    listed.__wrapped__ = handler  # type: ignore[attr-defined]
    return listed
