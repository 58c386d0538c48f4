"""Metadata: brokers, cluster id, controller, and every requested topic's partitions.

Every broker of the process answers with the same cluster view (broker.cluster_state): the
running brokers, and each partition's leader, leader epoch, replicas, in-sync replicas and
offline replicas; a partition without a leader is LEADER_NOT_AVAILABLE. A single broker
leads every partition (leader epoch 0) and is its only replica. Topics are auto-created
here when `auto.create.topics.enable` and the request allow it (v4+
`allow_auto_topic_creation`; always allowed before v4), as Kafka does. Kafka answers
LEADER_NOT_AVAILABLE for a topic it has just created until the controller elects a leader;
kmock creates the partitions synchronously and answers with them at once, which clients
accept as the end state they would have retried for.

Clients ask the same question again and again (librdkafka every few seconds per topic, and
1,000 connections asking at once, bench/RESULTS.md §9), so an answer about topics that all
exist is kept, encoded. The request's bytes are the same each time, and decoding them gives
the same MetadataRequest object each time (protocol.schema._KeptAnswer): the answer is found by
that object, the version, the listener and the broker asked, and given while what else it
is made of is unchanged: the topics' view (`broker.topics.view_changes`, counted when a
topic is created or deleted, is given partitions, or a partition's leader, leader epoch,
replicas or in-sync replicas change), the running brokers and their advertised addresses.
A repeated question then costs a dict lookup and four comparisons. With an authorizer
nothing is kept: the answer is cut to what the principal may see (broker.security.visible),
so a body kept would not be sent. The cluster id does not change while a broker serves.
"""

from __future__ import annotations

import weakref
from typing import Any

from broker import topics as topics_view
from broker.cluster import (
    ALL_CLUSTER_OPERATIONS,
    ALL_TOPIC_OPERATIONS,
    NOT_REQUESTED,
    controller_id,
    node_endpoints,
)
from broker.context import RequestContext
from broker.handlers import Encoded
from broker.topics import Topic, validate_topic_name
from protocol.errors import ErrorCode, KafkaError
from protocol.kept import keep
from protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from protocol.schema import encode_chunks
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

ANSWERS_KEPT = 64  # encoded answers kept (all dropped when full)


class _KeptAnswer:
    """An answer kept encoded, with what it was made of besides its key (see the module
    docstring). The request is held, so that its id is not reused while kept; the broker
    is not (a weak reference: brokers of a test run come and go)."""

    __slots__ = ("advertised", "broker", "encoded", "live", "request", "view")

    def __init__(self, broker: Any, request: MetadataRequest, encoded: Encoded) -> None:
        self.broker = weakref.ref(broker)
        self.request = request
        self.encoded = encoded
        self.view = topics_view.view_changes
        self.live = frozenset(broker.cluster.live)
        self.advertised = {node: dict(a) for node, a in broker.node_advertised.items()}


# (id of the broker, id of the request, version, listener, node asked) -> the kept answer.
_answers: dict[tuple[int, int, int, str, int], _KeptAnswer] = {}


def describe_topic(
    ctx: RequestContext, topic: Topic, include_operations: bool
) -> MetadataResponseTopic:
    cluster = ctx.broker.cluster
    listed = ctx.broker.node_advertised
    partitions = []
    for p in topic.partitions:
        # The leader has no address on the client's listener when advertised.listeners
        # leaves that listener out: Kafka's MetadataCache then answers LISTENER_NOT_FOUND
        # (v6+; LEADER_NOT_AVAILABLE before) with no leader.
        error, leader = ErrorCode.NONE, p.leader
        if leader < 0:
            error = ErrorCode.LEADER_NOT_AVAILABLE
        elif ctx.listener_name not in listed.get(leader, {}):
            leader = -1
            error = (
                ErrorCode.LISTENER_NOT_FOUND
                if ctx.api_version >= 6
                else ErrorCode.LEADER_NOT_AVAILABLE
            )
        partitions.append(
            MetadataResponsePartition(
                error_code=error,
                partition_index=p.index,
                leader_id=leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=list(p.replicas),
                isr_nodes=list(p.isr),
                offline_replicas=cluster.offline_replicas(p),
            )
        )
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=partitions,
        topic_authorized_operations=ALL_TOPIC_OPERATIONS if include_operations else NOT_REQUESTED,
    )


def brokers(ctx: RequestContext) -> list[MetadataResponseBroker]:
    """The running brokers at the address advertised for the client's listener (KafkaApis:
    metadataCache.getAliveBrokerNodes(request.context.listenerName)); none if that listener
    is not advertised."""
    return [
        MetadataResponseBroker(node_id=node, host=host, port=port, rack=None)
        for node, host, port in node_endpoints(ctx)
    ]


def _keepable(ctx: RequestContext, request: MetadataRequest) -> bool:
    """Whether the answer to `request` may be kept: not when it names a topic by id or one
    that does not exist (an error, or an auto-creation), nor with an authorizer."""
    if ctx.describable is not None:  # set by broker.security.enforce with an authorizer
        return False
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        return True
    registry = ctx.broker.topics.topics
    return all(t.name is not None and t.name in registry for t in request.topics)


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse | Encoded:
    broker = ctx.broker
    key = (id(broker), id(request), ctx.api_version, ctx.listener_name, ctx.node_id)
    kept = _answers.get(key)
    # The request's id is its own while an entry holds it; the broker's is checked.
    if (
        kept is not None
        and kept.view == topics_view.view_changes
        and kept.broker() is broker
        and kept.live == broker.cluster.live
        and kept.advertised == broker.node_advertised
    ):
        return kept.encoded
    if not _keepable(ctx, request):
        return answer(ctx, request)
    response = answer(ctx, request)
    encoded = Encoded(response, b"".join(encode_chunks(response, ctx.api_version)))
    keep(_answers, key, _KeptAnswer(broker, request, encoded), ANSWERS_KEPT)
    return encoded


def answer(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
    """The answer to `request`, made afresh (what `handle` keeps encoded); topics are
    auto-created here as the module docstring says."""
    broker = ctx.broker
    registry = broker.topics
    include_ops = bool(request.include_topic_authorized_operations)
    # v0: an empty list means all topics; v1+: null means all, empty means none.
    all_topics = request.topics is None or (ctx.api_version == 0 and not request.topics)
    allow_create = broker.config["auto.create.topics.enable"] and (
        ctx.api_version < 4 or request.allow_auto_topic_creation
    )
    topics: list[MetadataResponseTopic] = []
    if all_topics:
        topics = [describe_topic(ctx, t, include_ops) for t in registry.topics.values()]
    else:
        for wanted in request.topics or ():
            name = wanted.name
            if name is None and ctx.api_version < 12:
                # Names are nullable from v10, lookups by id are served from v12 (the
                # response name is nullable only there): Kafka refuses them below.
                topics.append(
                    MetadataResponseTopic(
                        error_code=ErrorCode.INVALID_REQUEST, name="", topic_id=wanted.topic_id
                    )
                )
                continue
            if name is None:  # v12+: by topic id
                topic = registry.by_id.get(wanted.topic_id)
                if topic is None:
                    topics.append(
                        MetadataResponseTopic(
                            error_code=ErrorCode.UNKNOWN_TOPIC_ID,
                            name=None,
                            topic_id=wanted.topic_id,
                        )
                    )
                else:
                    topics.append(describe_topic(ctx, topic, include_ops))
                continue
            topic = registry.get(name)
            if topic is None:
                try:
                    validate_topic_name(name)
                except KafkaError as e:
                    topics.append(MetadataResponseTopic(error_code=e.code, name=name))
                    continue
                if not allow_create or name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC):
                    topics.append(
                        MetadataResponseTopic(
                            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name=name
                        )
                    )
                    continue
                try:
                    topic = registry.create(
                        name, broker.config["num.partitions"], {}, now_wall_ms=broker.wall_ms()
                    )
                except KafkaError as e:
                    topics.append(MetadataResponseTopic(error_code=e.code, name=name))
                    continue
            topics.append(describe_topic(ctx, topic, include_ops))
    return MetadataResponse(
        brokers=brokers(ctx),
        cluster_id=broker.cluster_id,
        controller_id=controller_id(broker),
        topics=topics,
        cluster_authorized_operations=(
            ALL_CLUSTER_OPERATIONS
            if request.include_cluster_authorized_operations
            else NOT_REQUESTED
        ),
    )
