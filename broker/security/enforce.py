"""What each API asks of the authorizer, and how a refusal is answered: Kafka 4.1's KafkaApis
(ControllerApis for the topic APIs a broker forwards to its controller), API by API.

A request is checked in one of three ways, as Kafka checks it:
- whole: JoinGroup needs READ on its group, EndTxn WRITE on its transactional id, ...; a
  refusal is the API's error response with the code (KafkaError, answered by the dispatch);
- per resource (`_split`): the topics of a Produce, the groups of DescribeGroups, the
  resources of DescribeConfigs, ...; the handler serves the request narrowed to the allowed
  entries and each denied entry gets its own answer with the code (TOPIC_, GROUP_, CLUSTER_
  or TRANSACTIONAL_ID_AUTHORIZATION_FAILED), built by the API's error_response for just the
  denied entries. When nothing is allowed the handler is not called at all (Kafka answers
  at once: a Fetch does not wait, an OffsetCommit touches no group);
- filtered: Metadata or DescribeTopicPartitions for every topic, ListGroups,
  ListTransactions and the topics of DescribeTransactions leave out what the principal may
  not DESCRIBE.
The authorized-operations fields (Metadata, DescribeCluster, DescribeGroups,
ConsumerGroupDescribe, DescribeTopicPartitions) are computed from the ACLs (Kafka's
AuthHelper.authorizedOperations); without an authorizer nothing here runs and the handlers
report every operation the resource type supports, as Kafka does.

A Produce with acks=0 has no response to carry a refusal: Kafka closes the connection after
serving the allowed topics, and `Refused` tells the dispatch to do the same.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from broker.security.acls import AclOperation, ResourceType
from broker.security.authz import ANONYMOUS, CLUSTER, Authz, authz
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
)
from protocol.messages.fetch import FetchableTopicResponse, PartitionData
from protocol.messages.metadata import MetadataResponseTopic
from protocol.messages.offset_delete import (
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
)
from protocol.messages.offset_fetch import (
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
)
from protocol.records import BATCH_HEADER_SIZE, MAGIC, parse_batch_header
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

__all__ = ["Refused", "handle"]

T, G, C = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
X = ResourceType.TRANSACTIONAL_ID
Op = AclOperation
TOPIC_FAILED = ErrorCode.TOPIC_AUTHORIZATION_FAILED
GROUP_FAILED = ErrorCode.GROUP_AUTHORIZATION_FAILED
CLUSTER_FAILED = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
TXN_FAILED = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
INTERNAL_TOPICS = frozenset((OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC))
ZERO_UUID = uuid.UUID(int=0)
NOT_REQUESTED = -(2**31)  # an authorized-operations field's value when not asked for

Handler = Callable[[Any, Any], Awaitable[Any]]
ErrorResponse = Callable[[Any, ErrorCode, int], Any]
Verdict = Callable[[Any], ErrorCode | None]  # an entry -> None (allowed) or its code


class Refused(Exception):
    """The request has no response to carry its refusal (Produce with acks=0): the
    connection must be closed, as Kafka's KafkaApis.handleProduceRequest closes it."""


class _Call:
    """One request on its way to its handler, and the principal asking."""

    __slots__ = ("ctx", "error_response", "handler", "host", "principal", "request", "state")

    def __init__(
        self, ctx: Any, request: Any, handler: Handler, error_response: ErrorResponse
    ) -> None:
        self.ctx = ctx
        self.request = request
        self.handler = handler
        self.error_response = error_response
        self.state: Authz = authz(ctx.broker)
        self.principal = self.state.principals.get(ctx.connection_id, ANONYMOUS)
        self.host = ctx.client_host.lstrip("/")

    @property
    def version(self) -> int:
        return int(self.ctx.api_version)

    def may(self, op: AclOperation, rtype: ResourceType, name: str) -> bool:
        return self.state.allowed(self.principal, self.host, op, rtype, name)

    def require(self, op: AclOperation, rtype: ResourceType, name: str, code: ErrorCode) -> None:
        if not self.may(op, rtype, name):
            raise KafkaError(code, f"{self.principal} may not {op.name} {rtype.name} {name}")

    def operations(self, rtype: ResourceType, name: str) -> int:
        return self.state.operations(self.principal, self.host, rtype, name)

    def topic(self, op: AclOperation, name: str | None, topic_id: Any = None) -> ErrorCode | None:
        """TOPIC_AUTHORIZATION_FAILED unless `op` is allowed on the topic (named, or by id;
        an id no topic has is left to the handler, which answers UNKNOWN_TOPIC_ID)."""
        if not name and topic_id is not None:
            name = self.state.topic_names(topic_id)
        if not name:
            return None
        return None if self.may(op, T, name) else TOPIC_FAILED

    async def serve(self, request: Any = None) -> Any:
        return await self.handler(self.ctx, self.request if request is None else request)

    def refusal(self, request: Any, code: ErrorCode) -> Any:
        return self.error_response(request, code, self.version)


async def handle(ctx: Any, request: Any, handler: Handler, error_response: ErrorResponse) -> Any:
    """`handler`'s answer to `request`, with what the connection's principal may not do
    refused as Kafka refuses it (see the module docstring). Raises KafkaError for a request
    refused whole, Refused when the refusal cannot be answered."""
    if not authz(ctx.broker).enabled:
        return await handler(ctx, request)
    api = APIS.get(type(request).__name__)
    if api is None:
        return await handler(ctx, request)
    return await api(_Call(ctx, request, handler, error_response))


# --- serving the allowed part -------------------------------------------------------------


def _with(request: Any, field: str, items: list[Any]) -> Any:
    return dataclasses.replace(request, **{field: items})


def _merged(response: Any, field: str, extra: list[Any]) -> Any:
    """`response` with `extra` entries added to its list `field`."""
    if response is None:
        raise Refused("a Produce with acks=0 named a topic the principal may not WRITE")
    finish = getattr(response, "finish", None)
    if finish is not None:  # a Deferred (broker.handlers): merge once it is ready

        async def merged() -> Any:
            return _merged(await finish(), field, extra)

        return type(response)(merged)
    return dataclasses.replace(response, **{field: [*getattr(response, field), *extra]})


async def _split(
    c: _Call,
    field: str,
    verdict: Verdict,
    answer_field: str,
    *,
    entries: Callable[[Any, ErrorCode], list[Any]] | None = None,
) -> Any:
    """Serve the entries of `request.<field>` that `verdict` allows; answer each other one
    with its code in the response's `answer_field` (the API's error_response for the denied
    entries, or `entries(denied_request, code)` where that does not carry them). With none
    allowed the handler is not called."""
    request = c.request
    items = getattr(request, field)
    codes = [verdict(item) for item in items]
    if not any(codes):
        return await c.serve(request)
    denied: dict[ErrorCode, list[Any]] = {}
    for item, code in zip(items, codes, strict=True):
        if code is not None:
            denied.setdefault(code, []).append(item)
    extra: list[Any] = []
    for code, group in denied.items():
        narrowed = _with(request, field, group)
        extra += (
            entries(narrowed, code)
            if entries is not None
            else getattr(c.refusal(narrowed, code), answer_field)
        )
    allowed = [item for item, code in zip(items, codes, strict=True) if code is None]
    if allowed:
        response = await c.serve(_with(request, field, allowed))
    elif getattr(request, "acks", None) == 0:
        raise Refused("a Produce with acks=0 named only topics the principal may not WRITE")
    else:
        response = c.refusal(_with(request, field, []), ErrorCode.NONE)
    return _merged(response, answer_field, extra)


def _topics(c: _Call, op: AclOperation, name: str = "name") -> Verdict:
    return lambda t: c.topic(op, getattr(t, name), getattr(t, "topic_id", None))


# --- topics -------------------------------------------------------------------------------


def _has_transactional_records(request: Any) -> bool:
    """Kafka's RequestUtils.hasTransactionalRecords: the first batch of some partition is
    transactional (message format v2; older formats have no transactions)."""
    for topic in request.topic_data:
        for partition in topic.partition_data:
            records = partition.records
            if records is None or len(records) < BATCH_HEADER_SIZE or records[16] != MAGIC:
                continue
            if parse_batch_header(records).is_transactional:
                return True
    return False


async def _produce(c: _Call) -> Any:
    # KafkaApis.handleProduceRequest: transactional records need WRITE on the transactional
    # id, refusing the request whole; then WRITE per topic.
    r = c.request
    tid = r.transactional_id
    if _has_transactional_records(r) and (tid is None or not c.may(Op.WRITE, X, tid)):
        if r.acks == 0:
            raise Refused(f"{c.principal} may not WRITE TRANSACTIONAL_ID {tid}")
        raise KafkaError(TXN_FAILED, f"{c.principal} may not WRITE TRANSACTIONAL_ID {tid}")
    return await _split(c, "topic_data", _topics(c, Op.WRITE), "responses")


def _fetch_entries(request: Any, code: ErrorCode) -> list[Any]:
    # FetchResponse.partitionResponse: the code, high watermark -1, no records.
    return [
        FetchableTopicResponse(
            topic=t.topic,
            topic_id=t.topic_id,
            partitions=[
                PartitionData(partition_index=p.partition, error_code=code, high_watermark=-1)
                for p in t.partitions
            ],
        )
        for t in request.topics
    ]


async def _fetch(c: _Call) -> Any:
    # KafkaApis.handleFetchRequest: a follower's fetch needs CLUSTER_ACTION (every partition
    # TOPIC_AUTHORIZATION_FAILED without it), a consumer's READ per topic.
    r = c.request
    verdict: Verdict
    if r.replica_id >= 0 or r.replica_state.replica_id >= 0:
        code = None if c.may(Op.CLUSTER_ACTION, C, CLUSTER) else TOPIC_FAILED
        verdict = lambda t: code  # noqa: E731
    else:
        verdict = _topics(c, Op.READ, "topic")
    return await _split(c, "topics", verdict, "responses", entries=_fetch_entries)


async def _offset_for_leader_epoch(c: _Call) -> Any:
    if c.may(Op.CLUSTER_ACTION, C, CLUSTER):
        return await c.serve()
    return await _split(c, "topics", _topics(c, Op.DESCRIBE, "topic"), "topics")


def _per_topic(op: AclOperation, answer_field: str = "topics") -> Callable[[_Call], Any]:
    async def check(c: _Call) -> Any:
        return await _split(c, "topics", _topics(c, op), answer_field)

    return check


async def _create_topics(c: _Call) -> Any:
    # ControllerApis.createTopics: CREATE on the cluster allows every topic, else CREATE per
    # topic; a created topic's configs are shown only with DESCRIBE_CONFIGS on it.
    if c.may(Op.CREATE, C, CLUSTER):
        response = await c.serve()
    else:
        response = await _split(c, "topics", _topics(c, Op.CREATE), "topics")
    if c.version < 5:
        return response
    topics = [
        t
        if t.error_code or c.may(Op.DESCRIBE_CONFIGS, T, t.name)
        else dataclasses.replace(t, configs=None, topic_config_error_code=TOPIC_FAILED)
        for t in response.topics
    ]
    return dataclasses.replace(response, topics=topics)


async def _delete_topics(c: _Call) -> Any:
    # ControllerApis.deleteTopics: DELETE per topic (by name, or by id once resolved).
    if c.version >= 6:
        return await _split(c, "topics", _topics(c, Op.DELETE), "responses")
    return await _split(c, "topic_names", lambda n: c.topic(Op.DELETE, n), "responses")


# DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: the resource types (Kafka's
# ConfigResource.Type codes) and what each is checked on (KafkaApis.authorizeConfigResource).
_CONFIG_RESOURCES = {
    2: (T, TOPIC_FAILED),  # TOPIC
    4: (C, CLUSTER_FAILED),  # BROKER
    8: (C, CLUSTER_FAILED),  # BROKER_LOGGER
    16: (C, CLUSTER_FAILED),  # CLIENT_METRICS
    32: (G, GROUP_FAILED),  # GROUP
}


def _configs(op: AclOperation, answer_field: str) -> Callable[[_Call], Any]:
    async def check(c: _Call) -> Any:
        def verdict(resource: Any) -> ErrorCode | None:
            kind = _CONFIG_RESOURCES.get(resource.resource_type)
            if kind is None:
                return None  # the handler answers for an unknown resource type
            rtype, code = kind
            name = CLUSTER if rtype is C else resource.resource_name
            return None if c.may(op, rtype, name) else code

        return await _split(c, "resources", verdict, answer_field)

    return check


# --- groups and offsets -------------------------------------------------------------------


def _whole(*needs: tuple[AclOperation, ResourceType, str, ErrorCode]) -> Any:
    """A check of the whole request: each (operation, type, the request's field naming the
    resource or "" for the cluster, code) in order."""

    async def check(c: _Call) -> Any:
        for op, rtype, field, code in needs:
            c.require(op, rtype, getattr(c.request, field) if field else CLUSTER, code)
        return await c.serve()

    return check


async def _offset_commit(c: _Call) -> Any:
    # KafkaApis.handleOffsetCommitRequest: READ on the group for the whole request, then
    # READ per topic.
    c.require(Op.READ, G, c.request.group_id, GROUP_FAILED)
    return await _split(c, "topics", _topics(c, Op.READ), "topics")


async def _txn_offset_commit(c: _Call) -> Any:
    # KafkaApis.handleTxnOffsetCommitRequest: the transactional id, the group, then topics.
    r = c.request
    c.require(Op.WRITE, X, r.transactional_id, TXN_FAILED)
    c.require(Op.READ, G, r.group_id, GROUP_FAILED)
    return await _split(c, "topics", _topics(c, Op.READ), "topics")


async def _offset_delete(c: _Call) -> Any:
    # KafkaApis.handleOffsetDeleteRequest: DELETE on the group, then READ per topic. The
    # coordinator is asked even with no topic left; an answer with a group error replaces
    # the refused topics (OffsetDeleteResponse.Builder.merge).
    r = c.request
    c.require(Op.DELETE, G, r.group_id, GROUP_FAILED)
    allowed = [t for t in r.topics if c.may(Op.READ, T, t.name)]
    refused = [
        OffsetDeleteResponseTopic(
            name=t.name,
            partitions=[
                OffsetDeleteResponsePartition(
                    partition_index=p.partition_index, error_code=TOPIC_FAILED
                )
                for p in t.partitions
            ],
        )
        for t in r.topics
        if not c.may(Op.READ, T, t.name)
    ]
    response = await c.serve(dataclasses.replace(r, topics=allowed))
    if response.error_code or not refused:
        return response
    return dataclasses.replace(response, topics=[*response.topics, *refused])


def _denied_offsets(c: _Call, topics: list[Any]) -> list[Any]:
    """The answer for named topics the principal may not DESCRIBE: offset -1 and
    TOPIC_AUTHORIZATION_FAILED on each partition (KafkaApis.fetchOffsetsForGroup)."""
    v8 = c.version >= 8
    topic_cls = OffsetFetchResponseTopics if v8 else OffsetFetchResponseTopic
    partition_cls = OffsetFetchResponsePartitions if v8 else OffsetFetchResponsePartition
    return [
        topic_cls(
            name=t.name,
            partitions=[
                partition_cls(
                    partition_index=p, committed_offset=-1, metadata="", error_code=TOPIC_FAILED
                )
                for p in t.partition_indexes
            ],
        )
        for t in topics
        if not c.may(Op.DESCRIBE, T, t.name)
    ]


def _offsets_shown(c: _Call, named: list[Any] | None, answered: list[Any], code: int) -> list[Any]:
    """A group's answered topics as the principal may see them: asked for all topics, those
    it may not DESCRIBE are left out; asked by name, the denied ones are added. Nothing is
    added to a group answered with an error."""
    if code:
        return answered
    if named is None:
        return [t for t in answered if c.may(Op.DESCRIBE, T, t.name)]
    return [*answered, *_denied_offsets(c, named)]


async def _offset_fetch(c: _Call) -> Any:
    # KafkaApis.handleOffsetFetchRequest: DESCRIBE on each group (before v8 the one group:
    # the request is refused; v8+: that group is answered GROUP_AUTHORIZATION_FAILED), then
    # DESCRIBE per topic (fetchOffsetsForGroup, fetchAllOffsetsForGroup).
    r = c.request

    def allowed(topics: list[Any] | None) -> list[Any] | None:
        return None if topics is None else [t for t in topics if c.may(Op.DESCRIBE, T, t.name)]

    if c.version < 8:
        c.require(Op.DESCRIBE, G, r.group_id, GROUP_FAILED)
        if r.topics is not None and not allowed(r.topics):
            response = c.refusal(dataclasses.replace(r, topics=[]), ErrorCode.NONE)
        else:
            response = await c.serve(dataclasses.replace(r, topics=allowed(r.topics)))
        shown = _offsets_shown(c, r.topics, response.topics, response.error_code)
        return dataclasses.replace(response, topics=shown)
    asked, refused = [], []
    for g in r.groups:
        if c.may(Op.DESCRIBE, G, g.group_id):
            asked.append(g)
        else:
            refused.append(OffsetFetchResponseGroup(group_id=g.group_id, error_code=GROUP_FAILED))
    groups = []
    if asked:
        narrowed = [dataclasses.replace(g, topics=allowed(g.topics)) for g in asked]
        response = await c.serve(dataclasses.replace(r, groups=narrowed))
        named = {g.group_id: g.topics for g in asked}
        groups = [
            dataclasses.replace(
                g, topics=_offsets_shown(c, named.get(g.group_id), g.topics, g.error_code)
            )
            for g in response.groups
        ]
    else:
        response = c.refusal(dataclasses.replace(r, groups=[]), ErrorCode.NONE)
    return dataclasses.replace(response, groups=[*groups, *refused])


def _group_ops(c: _Call, groups: list[Any]) -> list[Any]:
    """The described groups with the operations the ACLs allow, where the handler reported
    them (as without an authorizer): Kafka sets them on the groups described without error
    and leaves the others' at "not requested"."""
    return [
        g
        if g.authorized_operations == NOT_REQUESTED
        else dataclasses.replace(
            g,
            authorized_operations=NOT_REQUESTED if g.error_code else c.operations(G, g.group_id),
        )
        for g in groups
    ]


async def _describe_groups(c: _Call) -> Any:
    # KafkaApis.handleDescribeGroupsRequest: DESCRIBE per group; the authorized operations
    # of each described group when asked.
    response = await _split(c, "groups", _groups(c, Op.DESCRIBE), "groups")
    if not c.request.include_authorized_operations:
        return response
    return dataclasses.replace(response, groups=_group_ops(c, response.groups))


def _assigned_topics(group: Any) -> Iterable[str]:
    for m in group.members:
        for assignment in (m.assignment, m.target_assignment):
            for tp in assignment.topic_partitions:
                yield tp.topic_name


async def _consumer_group_describe(c: _Call) -> Any:
    # KafkaApis.handleConsumerGroupDescribe: DESCRIBE per group; a group whose members'
    # assignments (current or target) hold a topic the principal may not DESCRIBE is answered
    # TOPIC_AUTHORIZATION_FAILED ("clients are not allowed to see topics that are not
    # authorized for Describe"); the authorized operations when asked.
    response = await _split(c, "group_ids", _groups(c, Op.DESCRIBE), "groups")
    groups = []
    for g in response.groups:
        hidden = any(n and not c.may(Op.DESCRIBE, T, n) for n in _assigned_topics(g))
        if not g.error_code and hidden:
            g = type(g)(
                error_code=TOPIC_FAILED,
                error_message="The group has described topic(s) that the client is not "
                "authorized to describe.",
                group_id=g.group_id,
            )
        groups.append(g)
    if c.request.include_authorized_operations:
        groups = _group_ops(c, groups)
    return dataclasses.replace(response, groups=groups)


def _groups(c: _Call, op: AclOperation) -> Verdict:
    return lambda group_id: None if c.may(op, G, group_id) else GROUP_FAILED


async def _list_groups(c: _Call) -> Any:
    # KafkaApis.handleListGroupsRequest: every group with DESCRIBE on the cluster, else the
    # groups the principal may DESCRIBE.
    response = await c.serve()
    if c.may(Op.DESCRIBE, C, CLUSTER):
        return response
    kept = [g for g in response.groups if c.may(Op.DESCRIBE, G, g.group_id)]
    return dataclasses.replace(response, groups=kept)


async def _find_coordinator(c: _Call) -> Any:
    # KafkaApis.handleFindCoordinatorRequest: DESCRIBE on each key's group or transactional
    # id (v4+: each key answered on its own).
    r = c.request
    kinds = {0: (G, GROUP_FAILED), 1: (X, TXN_FAILED)}
    if r.key_type not in kinds:
        return await c.serve()
    rtype, code = kinds[r.key_type]
    if c.version < 4:
        c.require(Op.DESCRIBE, rtype, r.key, code)
        return await c.serve()
    verdict: Verdict = lambda key: None if c.may(Op.DESCRIBE, rtype, key) else code  # noqa: E731
    return await _split(c, "coordinator_keys", verdict, "coordinators")


async def _consumer_group_heartbeat(c: _Call) -> Any:
    # KafkaApis.handleConsumerGroupHeartbeatRequest: READ on the group, then DESCRIBE on
    # every subscribed topic name (TOPIC_AUTHORIZATION_FAILED for the request).
    r = c.request
    c.require(Op.READ, G, r.group_id, GROUP_FAILED)
    for name in r.subscribed_topic_names or ():
        c.require(Op.DESCRIBE, T, name, TOPIC_FAILED)
    return await c.serve()


# --- transactions -------------------------------------------------------------------------


async def _init_producer_id(c: _Call) -> Any:
    # KafkaApis.handleInitProducerIdRequest: WRITE on the transactional id; without one
    # (idempotence), IDEMPOTENT_WRITE on the cluster or WRITE on any topic (Kafka 3.x+).
    r = c.request
    if r.transactional_id is not None:
        c.require(Op.WRITE, X, r.transactional_id, TXN_FAILED)
    elif not c.may(Op.IDEMPOTENT_WRITE, C, CLUSTER) and not c.state.allowed_on_any(
        c.principal, c.host, Op.WRITE, T
    ):
        raise KafkaError(CLUSTER_FAILED, f"{c.principal} may not write idempotently")
    return await c.serve()


def _txn_topic_results(
    c: _Call, topics: list[AddPartitionsToTxnTopic]
) -> list[AddPartitionsToTxnTopicResult] | None:
    """KafkaApis.handleAddPartitionsToTxnRequest: unless WRITE is allowed on every topic
    (never on an internal one), the answer for every partition: TOPIC_AUTHORIZATION_FAILED
    where denied, UNKNOWN_TOPIC_OR_PARTITION where missing, OPERATION_NOT_ATTEMPTED for the
    rest. None when every topic is allowed."""
    allowed = {
        t.name for t in topics if t.name not in INTERNAL_TOPICS and c.may(Op.WRITE, T, t.name)
    }
    if all(t.name in allowed for t in topics):
        return None
    registry = c.ctx.broker.topics

    def code(name: str, index: int) -> ErrorCode:
        if name not in allowed:
            return TOPIC_FAILED
        topic = registry.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        return ErrorCode.OPERATION_NOT_ATTEMPTED

    return [
        AddPartitionsToTxnTopicResult(
            name=t.name,
            results_by_partition=[
                AddPartitionsToTxnPartitionResult(
                    partition_index=p, partition_error_code=code(t.name, p)
                )
                for p in t.partitions
            ],
        )
        for t in topics
    ]


async def _add_partitions_to_txn(c: _Call) -> Any:
    # v0-3 (producers): WRITE on the transactional id, then on each topic. v4+ (brokers
    # verifying a transaction) need CLUSTER_ACTION only: "only request versions less than 4
    # need write authorization since they come from clients" (KafkaApis).
    r = c.request
    if c.version >= 4:
        c.require(Op.CLUSTER_ACTION, C, CLUSTER, CLUSTER_FAILED)
        return await c.serve()
    c.require(Op.WRITE, X, r.v3_and_below_transactional_id, TXN_FAILED)
    results = _txn_topic_results(c, r.v3_and_below_topics)
    if results is None:
        return await c.serve()
    return AddPartitionsToTxnResponse(results_by_topic_v3_and_below=results)


async def _describe_transactions(c: _Call) -> Any:
    # KafkaApis.handleDescribeTransactionsRequest: DESCRIBE per transactional id; of each
    # transaction's topics only those the principal may DESCRIBE.
    verdict: Verdict = lambda tid: None if c.may(Op.DESCRIBE, X, tid) else TXN_FAILED  # noqa: E731
    response = await _split(c, "transactional_ids", verdict, "transaction_states")
    states = [
        dataclasses.replace(s, topics=[t for t in s.topics if c.may(Op.DESCRIBE, T, t.topic)])
        for s in response.transaction_states
    ]
    return dataclasses.replace(response, transaction_states=states)


async def _list_transactions(c: _Call) -> Any:
    # KafkaApis.handleListTransactionsRequest: only the ids the principal may DESCRIBE.
    response = await c.serve()
    kept = [s for s in response.transaction_states if c.may(Op.DESCRIBE, X, s.transactional_id)]
    return dataclasses.replace(response, transaction_states=kept)


async def _write_txn_markers(c: _Call) -> Any:
    # KafkaApis.handleWriteTxnMarkersRequest: ALTER on the cluster, or else CLUSTER_ACTION.
    if not c.may(Op.ALTER, C, CLUSTER):
        c.require(Op.CLUSTER_ACTION, C, CLUSTER, CLUSTER_FAILED)
    return await c.serve()


# --- metadata -----------------------------------------------------------------------------


def _denied_topic(name: str | None, topic_id: Any = ZERO_UUID, is_internal: bool = False) -> Any:
    return MetadataResponseTopic(
        error_code=TOPIC_FAILED,
        name=name,
        topic_id=topic_id,
        is_internal=is_internal,
        partitions=[],
    )


async def _metadata(c: _Call) -> Any:
    # KafkaApis.handleTopicMetadataRequest: topics the principal may not DESCRIBE are left
    # out of an answer for every topic and answered TOPIC_AUTHORIZATION_FAILED when named
    # (asked by id: with the id and no name, "topic IDs are not considered sensitive"); a
    # named topic that does not exist is auto-created only with CREATE on the cluster or on
    # the topic (else TOPIC_AUTHORIZATION_FAILED, nothing created). The refused come last,
    # as in Kafka. Authorized operations are computed when asked (the cluster's only with
    # DESCRIBE on it, else 0).
    r, v = c.request, c.version
    broker = c.ctx.broker
    every = r.topics is None or (v == 0 and not r.topics)
    not_created: list[Any] = []
    not_described: list[Any] = []
    if every:
        response = await c.serve()
        topics = [t for t in response.topics if t.name is None or c.may(Op.DESCRIBE, T, t.name)]
    else:
        create = broker.config["auto.create.topics.enable"] and (
            v < 4 or r.allow_auto_topic_creation
        )
        cluster_create = create and c.may(Op.CREATE, C, CLUSTER)
        allowed = []
        for t in r.topics:
            name = t.name or c.state.topic_names(t.topic_id)
            if name is None:
                allowed.append(t)  # an unknown id: UNKNOWN_TOPIC_ID from the handler
            elif not c.may(Op.DESCRIBE, T, name):
                by_id = t.name is None
                not_described.append(
                    _denied_topic(None, t.topic_id) if by_id else _denied_topic(name)
                )
            elif (
                create
                and not cluster_create
                and broker.topics.get(name) is None
                and not c.may(Op.CREATE, T, name)
            ):
                not_created.append(_denied_topic(name, is_internal=name in INTERNAL_TOPICS))
            else:
                allowed.append(t)
        response = await c.serve(dataclasses.replace(r, topics=allowed))
        topics = response.topics if allowed else []
    if r.include_topic_authorized_operations:
        topics = [
            t
            if t.name is None
            else dataclasses.replace(t, topic_authorized_operations=c.operations(T, t.name))
            for t in topics
        ]
    response = dataclasses.replace(response, topics=[*topics, *not_created, *not_described])
    if 8 <= v <= 10 and r.include_cluster_authorized_operations:
        ops = c.operations(C, CLUSTER) if c.may(Op.DESCRIBE, C, CLUSTER) else 0
        response = dataclasses.replace(response, cluster_authorized_operations=ops)
    return response


async def _describe_cluster(c: _Call) -> Any:
    # AuthHelper.computeDescribeClusterResponse: the cluster's operations when asked, 0
    # without DESCRIBE on it.
    response = await c.serve()
    if not c.request.include_cluster_authorized_operations:
        return response
    ops = c.operations(C, CLUSTER) if c.may(Op.DESCRIBE, C, CLUSTER) else 0
    return dataclasses.replace(response, cluster_authorized_operations=ops)


async def _describe_topic_partitions(c: _Call) -> Any:
    # DescribeTopicPartitionsRequestHandler: as Metadata (no auto-creation); the answer's
    # topics in name order with their authorized operations.
    r = c.request
    if not r.topics:
        response = await c.serve()
        topics = [t for t in response.topics if c.may(Op.DESCRIBE, T, t.name)]
        denied = []
    else:
        allowed = [t for t in r.topics if c.may(Op.DESCRIBE, T, t.name)]
        denied = c.refusal(
            dataclasses.replace(r, topics=[t for t in r.topics if t not in allowed]), TOPIC_FAILED
        ).topics
        if allowed:
            response = await c.serve(dataclasses.replace(r, topics=allowed))
            topics = response.topics
        else:
            response, topics = c.refusal(dataclasses.replace(r, topics=[]), ErrorCode.NONE), []
    topics = [
        t
        if t.error_code
        else dataclasses.replace(t, topic_authorized_operations=c.operations(T, t.name))
        for t in topics
    ]
    merged = sorted([*topics, *denied], key=lambda t: t.name or "")
    return dataclasses.replace(response, topics=merged)


# --- the table ----------------------------------------------------------------------------

R, W, D = Op.READ, Op.WRITE, Op.DESCRIBE

APIS: dict[str, Callable[[_Call], Awaitable[Any]]] = {
    "ProduceRequest": _produce,
    "FetchRequest": _fetch,
    "ListOffsetsRequest": _per_topic(D),
    "OffsetCommitRequest": _offset_commit,
    "OffsetFetchRequest": _offset_fetch,
    "OffsetDeleteRequest": _offset_delete,
    "OffsetForLeaderEpochRequest": _offset_for_leader_epoch,
    "DeleteRecordsRequest": _per_topic(Op.DELETE),
    "CreateTopicsRequest": _create_topics,
    "DeleteTopicsRequest": _delete_topics,
    "CreatePartitionsRequest": _per_topic(Op.ALTER, "results"),
    "DescribeProducersRequest": _per_topic(R),
    "DescribeConfigsRequest": _configs(Op.DESCRIBE_CONFIGS, "results"),
    "AlterConfigsRequest": _configs(Op.ALTER_CONFIGS, "responses"),
    "IncrementalAlterConfigsRequest": _configs(Op.ALTER_CONFIGS, "responses"),
    "MetadataRequest": _metadata,
    "DescribeClusterRequest": _describe_cluster,
    "DescribeTopicPartitionsRequest": _describe_topic_partitions,
    "FindCoordinatorRequest": _find_coordinator,
    "JoinGroupRequest": _whole((R, G, "group_id", GROUP_FAILED)),
    "SyncGroupRequest": _whole((R, G, "group_id", GROUP_FAILED)),
    "HeartbeatRequest": _whole((R, G, "group_id", GROUP_FAILED)),
    "LeaveGroupRequest": _whole((R, G, "group_id", GROUP_FAILED)),
    "ConsumerGroupHeartbeatRequest": _consumer_group_heartbeat,
    "ListGroupsRequest": _list_groups,
    "DescribeGroupsRequest": _describe_groups,
    "ConsumerGroupDescribeRequest": _consumer_group_describe,
    "DeleteGroupsRequest": lambda c: _split(c, "groups_names", _groups(c, Op.DELETE), "results"),
    "InitProducerIdRequest": _init_producer_id,
    "AddPartitionsToTxnRequest": _add_partitions_to_txn,
    "AddOffsetsToTxnRequest": _whole(
        (W, X, "transactional_id", TXN_FAILED), (R, G, "group_id", GROUP_FAILED)
    ),
    "EndTxnRequest": _whole((W, X, "transactional_id", TXN_FAILED)),
    "TxnOffsetCommitRequest": _txn_offset_commit,
    "DescribeTransactionsRequest": _describe_transactions,
    "ListTransactionsRequest": _list_transactions,
    "WriteTxnMarkersRequest": _write_txn_markers,
    "DescribeAclsRequest": _whole((D, C, "", CLUSTER_FAILED)),
    "CreateAclsRequest": _whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "DeleteAclsRequest": _whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "DescribeUserScramCredentialsRequest": _whole((D, C, "", CLUSTER_FAILED)),
    "AlterUserScramCredentialsRequest": _whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "DescribeLogDirsRequest": _whole((D, C, "", CLUSTER_FAILED)),
    "AlterReplicaLogDirsRequest": _whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "ElectLeadersRequest": _whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "AlterPartitionReassignmentsRequest": _whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "ListPartitionReassignmentsRequest": _whole((D, C, "", CLUSTER_FAILED)),
}
