"""What each API asks of the authorizer, and how a refusal is answered (reached through
broker.security.enforce, which imports this module on a broker's first request with an
authorizer): Kafka 4.1's KafkaApis
(ControllerApis for the topic APIs a broker forwards to its controller), API by API, in one
table (APIS). A request is checked whole, per resource, or answered with what the principal
may not DESCRIBE left out (Metadata or DescribeTopicPartitions for every topic, ListGroups,
ListTransactions, the topics of DescribeTransactions); broker.security.checks holds the
machinery, broker.security.visible Metadata and the authorized-operations fields.

Without an authorizer nothing here runs and the handlers report every operation a resource
type supports in the authorized-operations fields, as Kafka does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from broker.context import Encoded
from broker.security import visible
from broker.security.acls import AclOperation
from broker.security.authz import authz
from broker.security.checks import (
    CLUSTER,
    CLUSTER_FAILED,
    DEFAULT_MESSAGES,
    GROUP_FAILED,
    INTERNAL_TOPICS,
    NOT_REQUESTED,
    TOPIC_FAILED,
    TXN_FAILED,
    C,
    Call,
    ErrorResponse,
    G,
    Handler,
    Message,
    Op,
    Refused,
    T,
    Verdict,
    X,
    split,
    topics_verdict,
    whole,
)
from broker.topics import validate_topic_name
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
)
from protocol.messages.describe_producers import PartitionResponse as ProducersPartition
from protocol.messages.describe_producers import TopicResponse as ProducersTopic
from protocol.messages.fetch import FetchableTopicResponse, PartitionData
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

__all__ = ["APIS", "Refused", "handle"]


async def handle(ctx: Any, request: Any, handler: Handler, error_response: ErrorResponse) -> Any:
    """`handler`'s answer to `request`, with what the connection's principal may not do
    refused as Kafka refuses it (see the module docstring). Raises KafkaError for a request
    refused whole, Refused when the refusal cannot be answered."""
    if not authz(ctx.broker).enabled:
        return await handler(ctx, request)
    api = APIS.get(type(request).__name__)
    if api is None:
        return await handler(ctx, request)
    c = Call(ctx, request, _decoded(handler), error_response)
    ctx.describable = c.state.describable(c.principal, c.host)
    return await api(c)


def _decoded(handler: Handler) -> Handler:
    """`handler`, giving its response as a dataclass where it gave it kept encoded
    (broker.handlers.Encoded): what the principal may not see is taken out of it, so the
    kept body does not apply."""

    async def call(ctx: Any, request: Any) -> Any:
        response = await handler(ctx, request)
        return response.response if type(response) is Encoded else response

    return call


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


async def _produce(c: Call) -> Any:
    # KafkaApis.handleProduceRequest: transactional records need WRITE on the transactional
    # id, refusing the request whole; then WRITE per topic.
    r = c.request
    tid = r.transactional_id
    if _has_transactional_records(r) and (tid is None or not c.may(Op.WRITE, X, tid)):
        if r.acks == 0:
            raise Refused(f"{c.principal} may not WRITE TRANSACTIONAL_ID {tid}")
        raise KafkaError(TXN_FAILED, f"{c.principal} may not WRITE TRANSACTIONAL_ID {tid}")
    return await split(c, "topic_data", topics_verdict(c, Op.WRITE), "responses")


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


async def _fetch(c: Call) -> Any:
    # KafkaApis.handleFetchRequest: a follower's fetch needs CLUSTER_ACTION (every partition
    # TOPIC_AUTHORIZATION_FAILED without it), a consumer's READ per topic.
    r = c.request
    verdict: Verdict
    if r.replica_id >= 0 or r.replica_state.replica_id >= 0:
        code = None if c.may(Op.CLUSTER_ACTION, C, CLUSTER) else TOPIC_FAILED
        verdict = lambda t: code  # noqa: E731
    else:
        verdict = topics_verdict(c, Op.READ, "topic")
    return await split(c, "topics", verdict, "responses", entries=_fetch_entries)


async def _offset_for_leader_epoch(c: Call) -> Any:
    if c.may(Op.CLUSTER_ACTION, C, CLUSTER):
        return await c.serve()
    return await split(c, "topics", topics_verdict(c, Op.DESCRIBE, "topic"), "topics")


def _per_topic(op: AclOperation, answer_field: str = "topics") -> Callable[[Call], Any]:
    async def check(c: Call) -> Any:
        return await split(c, "topics", topics_verdict(c, op), answer_field)

    return check


async def _create_topics(c: Call) -> Any:
    # ControllerApis.createTopics: CREATE on the cluster allows every topic, else CREATE per
    # topic ("Authorization failed." for a refused one); a created topic's configs are shown
    # only with DESCRIBE_CONFIGS on it.
    if c.may(Op.CREATE, C, CLUSTER):
        response = await c.serve()
    else:
        verdict = topics_verdict(c, Op.CREATE)
        refused: Message = lambda _code: "Authorization failed."  # noqa: E731
        response = await split(c, "topics", verdict, "topics", message=refused)
    if c.version < 5:
        return response
    topics = [
        t
        if t.error_code or c.may(Op.DESCRIBE_CONFIGS, T, t.name)
        else dataclasses.replace(t, configs=None, topic_config_error_code=TOPIC_FAILED)
        for t in response.topics
    ]
    return dataclasses.replace(response, topics=topics)


async def _delete_topics(c: Call) -> Any:
    # ControllerApis.deleteTopics: DELETE per topic (by name, or by id once resolved), each
    # refusal `new ApiError(TOPIC_AUTHORIZATION_FAILED)`, with the code's message (v5+).
    m = DEFAULT_MESSAGES.get
    if c.version >= 6:
        return await split(c, "topics", topics_verdict(c, Op.DELETE), "responses", message=m)
    verdict: Verdict = lambda n: c.topic(Op.DELETE, n)  # noqa: E731
    return await split(c, "topic_names", verdict, "responses", message=m)


# DescribeConfigs / AlterConfigs / IncrementalAlterConfigs: the resource types (Kafka's
# ConfigResource.Type codes) and what each is checked on (KafkaApis.authorizeConfigResource).
_CONFIG_RESOURCES = {
    2: (T, TOPIC_FAILED),  # TOPIC
    4: (C, CLUSTER_FAILED),  # BROKER
    8: (C, CLUSTER_FAILED),  # BROKER_LOGGER
    16: (C, CLUSTER_FAILED),  # CLIENT_METRICS
    32: (G, GROUP_FAILED),  # GROUP
}


def _configs(op: AclOperation, answer_field: str) -> Callable[[Call], Any]:
    async def check(c: Call) -> Any:
        def verdict(resource: Any) -> ErrorCode | None:
            kind = _CONFIG_RESOURCES.get(resource.resource_type)
            if kind is None:
                return None  # the handler answers for an unknown resource type
            rtype, code = kind
            name = CLUSTER if rtype is C else resource.resource_name
            return None if c.may(op, rtype, name) else code

        # KafkaApis.handleDescribeConfigsRequest and ControllerApis.authorizeAlterResource
        # answer a refused resource with the code's message.
        return await split(c, "resources", verdict, answer_field, message=DEFAULT_MESSAGES.get)

    return check


def _legal_topic_name(name: str) -> bool:
    try:
        validate_topic_name(name)
    except KafkaError:
        return False
    return True


def _producers_refused(request: Any, code: ErrorCode) -> list[Any]:
    return [
        ProducersTopic(
            name=t.name,
            partitions=[
                ProducersPartition(
                    partition_index=p, error_code=code, error_message=DEFAULT_MESSAGES[code]
                )
                for p in t.partition_indexes
            ],
        )
        for t in request.topics
    ]


async def _describe_producers(c: Call) -> Any:
    # KafkaApis.handleDescribeProducersRequest: a topic name is validated first (an illegal
    # one is INVALID_TOPIC_EXCEPTION from the handler, whatever the ACLs), then READ per
    # topic; a refused partition carries ApiError's message, the code's own.
    def verdict(t: Any) -> ErrorCode | None:
        return c.topic(Op.READ, t.name) if _legal_topic_name(t.name) else None

    return await split(c, "topics", verdict, "topics", entries=_producers_refused)


# --- groups and offsets -------------------------------------------------------------------


async def _offset_commit(c: Call) -> Any:
    # KafkaApis.handleOffsetCommitRequest: READ on the group for the whole request, then
    # READ per topic.
    c.require(Op.READ, G, c.request.group_id, GROUP_FAILED)
    return await split(c, "topics", topics_verdict(c, Op.READ), "topics")


async def _txn_offset_commit(c: Call) -> Any:
    # KafkaApis.handleTxnOffsetCommitRequest: the transactional id, the group, then topics.
    r = c.request
    c.require(Op.WRITE, X, r.transactional_id, TXN_FAILED)
    c.require(Op.READ, G, r.group_id, GROUP_FAILED)
    return await split(c, "topics", topics_verdict(c, Op.READ), "topics")


async def _offset_delete(c: Call) -> Any:
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


def _denied_offsets(c: Call, topics: list[Any]) -> list[Any]:
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


def _offsets_shown(c: Call, named: list[Any] | None, answered: list[Any], code: int) -> list[Any]:
    """A group's answered topics as the principal may see them: asked for all topics, those
    it may not DESCRIBE are left out; asked by name, the denied ones are added. Nothing is
    added to a group answered with an error."""
    if code:
        return answered
    if named is None:
        return [t for t in answered if c.may(Op.DESCRIBE, T, t.name)]
    return [*answered, *_denied_offsets(c, named)]


async def _offset_fetch(c: Call) -> Any:
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


def _group_ops(c: Call, groups: list[Any]) -> list[Any]:
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


async def _describe_groups(c: Call) -> Any:
    # KafkaApis.handleDescribeGroupsRequest: DESCRIBE per group; the authorized operations
    # of each described group when asked.
    response = await split(c, "groups", _groups(c, Op.DESCRIBE), "groups")
    if not c.request.include_authorized_operations:
        return response
    return dataclasses.replace(response, groups=_group_ops(c, response.groups))


def _assigned_topics(group: Any) -> Iterable[str]:
    for m in group.members:
        for assignment in (m.assignment, m.target_assignment):
            for tp in assignment.topic_partitions:
                yield tp.topic_name


async def _consumer_group_describe(c: Call) -> Any:
    # KafkaApis.handleConsumerGroupDescribe: DESCRIBE per group; a group whose members'
    # assignments (current or target) hold a topic the principal may not DESCRIBE is answered
    # TOPIC_AUTHORIZATION_FAILED ("clients are not allowed to see topics that are not
    # authorized for Describe"); the authorized operations when asked.
    response = await split(c, "group_ids", _groups(c, Op.DESCRIBE), "groups")
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


def _groups(c: Call, op: AclOperation) -> Verdict:
    return lambda group_id: None if c.may(op, G, group_id) else GROUP_FAILED


async def _list_groups(c: Call) -> Any:
    # KafkaApis.handleListGroupsRequest: every group with DESCRIBE on the cluster, else the
    # groups the principal may DESCRIBE.
    response = await c.serve()
    if c.may(Op.DESCRIBE, C, CLUSTER):
        return response
    kept = [g for g in response.groups if c.may(Op.DESCRIBE, G, g.group_id)]
    return dataclasses.replace(response, groups=kept)


async def _find_coordinator(c: Call) -> Any:
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
    return await split(c, "coordinator_keys", verdict, "coordinators")


async def _consumer_group_heartbeat(c: Call) -> Any:
    # KafkaApis.handleConsumerGroupHeartbeatRequest: READ on the group, then DESCRIBE on
    # every subscribed topic name (TOPIC_AUTHORIZATION_FAILED for the request).
    r = c.request
    c.require(Op.READ, G, r.group_id, GROUP_FAILED)
    for name in r.subscribed_topic_names or ():
        c.require(Op.DESCRIBE, T, name, TOPIC_FAILED)
    return await c.serve()


# --- transactions -------------------------------------------------------------------------


async def _init_producer_id(c: Call) -> Any:
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
    c: Call, topics: list[AddPartitionsToTxnTopic]
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


async def _add_partitions_to_txn(c: Call) -> Any:
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


async def _describe_transactions(c: Call) -> Any:
    # KafkaApis.handleDescribeTransactionsRequest: DESCRIBE per transactional id; of each
    # transaction's topics only those the principal may DESCRIBE.
    verdict: Verdict = lambda tid: None if c.may(Op.DESCRIBE, X, tid) else TXN_FAILED  # noqa: E731
    response = await split(c, "transactional_ids", verdict, "transaction_states")
    states = [
        dataclasses.replace(s, topics=[t for t in s.topics if c.may(Op.DESCRIBE, T, t.topic)])
        for s in response.transaction_states
    ]
    return dataclasses.replace(response, transaction_states=states)


async def _list_transactions(c: Call) -> Any:
    # KafkaApis.handleListTransactionsRequest: only the ids the principal may DESCRIBE.
    response = await c.serve()
    kept = [s for s in response.transaction_states if c.may(Op.DESCRIBE, X, s.transactional_id)]
    return dataclasses.replace(response, transaction_states=kept)


async def _write_txn_markers(c: Call) -> Any:
    # KafkaApis.handleWriteTxnMarkersRequest: ALTER on the cluster, or else CLUSTER_ACTION.
    if not c.may(Op.ALTER, C, CLUSTER):
        c.require(Op.CLUSTER_ACTION, C, CLUSTER, CLUSTER_FAILED)
    return await c.serve()


# --- the table ----------------------------------------------------------------------------

R, W, D = Op.READ, Op.WRITE, Op.DESCRIBE

APIS: dict[str, Callable[[Call], Awaitable[Any]]] = {
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
    "DescribeProducersRequest": _describe_producers,
    "DescribeConfigsRequest": _configs(Op.DESCRIBE_CONFIGS, "results"),
    "AlterConfigsRequest": _configs(Op.ALTER_CONFIGS, "responses"),
    "IncrementalAlterConfigsRequest": _configs(Op.ALTER_CONFIGS, "responses"),
    "MetadataRequest": visible.metadata,
    "DescribeClusterRequest": visible.describe_cluster,
    "DescribeTopicPartitionsRequest": visible.describe_topic_partitions,
    "FindCoordinatorRequest": _find_coordinator,
    "JoinGroupRequest": whole((R, G, "group_id", GROUP_FAILED)),
    "SyncGroupRequest": whole((R, G, "group_id", GROUP_FAILED)),
    "HeartbeatRequest": whole((R, G, "group_id", GROUP_FAILED)),
    "LeaveGroupRequest": whole((R, G, "group_id", GROUP_FAILED)),
    "ConsumerGroupHeartbeatRequest": _consumer_group_heartbeat,
    "ListGroupsRequest": _list_groups,
    "DescribeGroupsRequest": _describe_groups,
    "ConsumerGroupDescribeRequest": _consumer_group_describe,
    "DeleteGroupsRequest": lambda c: split(c, "groups_names", _groups(c, Op.DELETE), "results"),
    "InitProducerIdRequest": _init_producer_id,
    "AddPartitionsToTxnRequest": _add_partitions_to_txn,
    "AddOffsetsToTxnRequest": whole(
        (W, X, "transactional_id", TXN_FAILED), (R, G, "group_id", GROUP_FAILED)
    ),
    "EndTxnRequest": whole((W, X, "transactional_id", TXN_FAILED)),
    "TxnOffsetCommitRequest": _txn_offset_commit,
    "DescribeTransactionsRequest": _describe_transactions,
    "ListTransactionsRequest": _list_transactions,
    "WriteTxnMarkersRequest": _write_txn_markers,
    "DescribeAclsRequest": whole((D, C, "", CLUSTER_FAILED)),
    "CreateAclsRequest": whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "DeleteAclsRequest": whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "DescribeUserScramCredentialsRequest": whole((D, C, "", CLUSTER_FAILED)),
    "AlterUserScramCredentialsRequest": whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "DescribeLogDirsRequest": whole((D, C, "", CLUSTER_FAILED)),
    "AlterReplicaLogDirsRequest": whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "ElectLeadersRequest": whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "AlterPartitionReassignmentsRequest": whole((Op.ALTER, C, "", CLUSTER_FAILED)),
    "ListPartitionReassignmentsRequest": whole((D, C, "", CLUSTER_FAILED)),
}
