"""Group and transaction requests at a broker that is not their coordinator.

With several brokers (broker.cluster_state) the coordinator of a group is the leader of
the group's __consumer_offsets partition, and that of a transactional id the leader of its
__transaction_state partition. A request for a key this broker does not coordinate is
answered NOT_COORDINATOR (COORDINATOR_LOAD_IN_PROGRESS while a moved coordinator loads,
COORDINATOR_NOT_AVAILABLE while nobody leads the partition), as Kafka's
GroupCoordinatorService and TransactionCoordinator answer, through the API's error
response: the handler is not run.

`wrap` puts the check in front of each coordinator API's handler in the route table; with
a single broker the check is skipped: the dispatch site calls the handler itself there
(broker.routes.Route.alone). APIs that name several keys (DescribeGroups,
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
from typing import Any, NamedTuple

from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError

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


# route name (broker.routes) -> (coordinator kind, the keys its request names)
KEYS: dict[str, tuple[str, Callable[[Any, int], list[str]]]] = {
    "JoinGroup": (GROUP, _one_group),
    "SyncGroup": (GROUP, _one_group),
    "Heartbeat": (GROUP, _one_group),
    "LeaveGroup": (GROUP, _one_group),
    "OffsetCommit": (GROUP, _one_group),
    "OffsetDelete": (GROUP, _one_group),
    "TxnOffsetCommit": (GROUP, _one_group),
    "ConsumerGroupHeartbeat": (GROUP, _one_group),
    "OffsetFetch": (GROUP, _offset_fetch),
    "DescribeGroups": (GROUP, lambda r, v: list(r.groups)),
    "DeleteGroups": (GROUP, lambda r, v: list(r.groups_names)),
    "ConsumerGroupDescribe": (GROUP, lambda r, v: list(r.group_ids)),
    "InitProducerId": (TRANSACTION, _transactional_id),
    "AddPartitionsToTxn": (TRANSACTION, _add_partitions),
    "AddOffsetsToTxn": (TRANSACTION, _transactional_id),
    "EndTxn": (TRANSACTION, _transactional_id),
    "DescribeTransactions": (TRANSACTION, lambda r, v: list(r.transactional_ids)),
}


class PerKey(NamedTuple):
    """An API answered per key: the request's list of keys (entries with `item_key`, or the
    keys themselves), the response's list of entries and their key field. An entry for a
    refused key is built by the API's error response (the route's)."""

    request_field: str
    item_key: str | None
    response_field: str
    response_key: str
    since: int = 0  # OffsetFetch names several groups from v8


PER_KEY: dict[str, PerKey] = {
    "DescribeGroups": PerKey("groups", None, "groups", "group_id"),
    "DeleteGroups": PerKey("groups_names", None, "results", "group_id"),
    "ConsumerGroupDescribe": PerKey("group_ids", None, "groups", "group_id"),
    "OffsetFetch": PerKey("groups", "group_id", "groups", "group_id", since=8),
    "DescribeTransactions": PerKey(
        "transactional_ids", None, "transaction_states", "transactional_id"
    ),
}


# route name -> (coordinator kind, the response's list field, the key of each entry): the
# listing APIs, whose answers a broker filters down to what it coordinates.
LISTINGS: dict[str, tuple[str, str, str]] = {
    "ListGroups": (GROUP, "groups", "group_id"),
    "ListTransactions": (TRANSACTION, "transaction_states", "transactional_id"),
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


def wrap(route: Any, handler: Any) -> Any:
    """`handler`, behind the coordinator check when `route` (broker.routes.Route) is a
    coordinator API's."""
    if route.name in LISTINGS:
        return _listing(handler, *LISTINGS[route.name])
    entry = KEYS.get(route.name)
    if entry is None:
        return handler
    kind, keys = entry
    per_key = PER_KEY.get(route.name)
    if per_key is not None:
        return _per_key(handler, kind, per_key, route.error_response)

    async def guarded(ctx: RequestContext, body: Any) -> Any:
        if ctx.broker.cluster.multi:
            _refuse_whole(ctx, kind, keys(body, ctx.api_version))
        return await handler(ctx, body)

    guarded.__wrapped__ = handler  # type: ignore[attr-defined]
    return guarded


def _per_key(
    handler: Any,
    kind: str,
    spec: PerKey,
    error_response: Callable[[Any, ErrorCode, int], Any],
) -> Any:
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
            response = error_response(body, ErrorCode.NONE, version)
        entries = []
        for item, code in zip(items, codes, strict=True):
            key = _item_key(spec, item)
            if code == ErrorCode.NONE and answered.get(key):
                entries.append(answered[key].pop(0))
                continue
            one = dataclasses.replace(body, **{spec.request_field: [item]})
            entries.extend(getattr(error_response(one, code, version), spec.response_field))
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
