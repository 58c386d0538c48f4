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
exist is kept, encoded, per broker: keyed by everything it is made of (version, listener and
its address, the broker asked, the running brokers, the flags, and per topic the Topic
itself and each partition's leader, leader epoch, replicas and in-sync replicas), so a
topic created, deleted or given partitions, or a leader or replica set that changes, makes
a new key, never a stale answer.
"""

from __future__ import annotations

import weakref
from typing import Any

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
from protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from protocol.schema import encode_chunks
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

ANSWERS_KEPT = 64  # encoded answers kept per broker (all dropped when full)

_answers: weakref.WeakKeyDictionary[Any, dict[tuple[Any, ...], Encoded]] = (
    weakref.WeakKeyDictionary()
)


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


def _answer_key(ctx: RequestContext, request: MetadataRequest) -> tuple[Any, ...] | None:
    """What the answer to `request` is made of, or None when it is not kept (a topic named
    by id, or one that does not exist: an error, or an auto-creation)."""
    broker = ctx.broker
    registry = broker.topics
    if request.topics is None or (ctx.api_version == 0 and not request.topics):
        topics: Any = registry.topics.values()
    else:
        topics = []
        for wanted in request.topics:
            topic = registry.topics.get(wanted.name) if wanted.name is not None else None
            if topic is None:
                return None
            topics.append(topic)
    return (
        ctx.api_version,
        ctx.listener_name,
        broker.advertised_address(ctx.listener_name),
        ctx.node_id,
        broker.cluster_id,
        tuple(sorted(broker.cluster.live)),
        request.include_topic_authorized_operations,
        request.include_cluster_authorized_operations,
        *(
            (t, *((p.leader, p.leader_epoch, *p.replicas, -1, *p.isr) for p in t.partitions))
            for t in topics
        ),
    )


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse | Encoded:
    key = _answer_key(ctx, request)
    if key is None:
        return answer(ctx, request)
    kept = _answers.setdefault(ctx.broker, {})
    encoded = kept.get(key)
    if encoded is None:
        if len(kept) >= ANSWERS_KEPT:
            kept.clear()
        response = answer(ctx, request)
        body = b"".join(encode_chunks(response, ctx.api_version))
        encoded = kept[key] = Encoded(response, body)
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
