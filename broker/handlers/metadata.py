"""Metadata: brokers, cluster id, controller, and every requested topic's partitions.

kmock is one broker: it leads every partition (leader epoch 0), and is the only replica and
the only in-sync replica. Topics are auto-created here when `auto.create.topics.enable` and
the request allow it (v4+ `allow_auto_topic_creation`; always allowed before v4), as Kafka
does. Kafka answers LEADER_NOT_AVAILABLE for a topic it has just created until the
controller elects a leader; kmock creates the partitions synchronously and answers with
them at once, which clients accept as the end state they would have retried for.

Clients ask the same question again and again (librdkafka every few seconds per topic, and
1,000 connections asking at once, bench/RESULTS.md §9), so an answer about topics that all
exist is kept, encoded, per broker: keyed by everything it is made of (version, listener and
its address, the flags, and per topic the Topic itself and its partitions' leader epochs),
so a topic created, deleted or given partitions makes a new key, never a stale answer.
"""

from __future__ import annotations

import weakref
from typing import Any

from broker.cluster import ALL_CLUSTER_OPERATIONS, ALL_TOPIC_OPERATIONS, NOT_REQUESTED
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
    node = ctx.broker.node_id
    # The leader (this broker) has no address on the client's listener when
    # advertised.listeners leaves that listener out: Kafka's MetadataCache then answers
    # LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before) with no leader.
    error, leader = ErrorCode.NONE, node
    if ctx.broker.advertised_address(ctx.listener_name) is None:
        leader = -1
        error = (
            ErrorCode.LISTENER_NOT_FOUND if ctx.api_version >= 6 else ErrorCode.LEADER_NOT_AVAILABLE
        )
    return MetadataResponseTopic(
        error_code=ErrorCode.NONE,
        name=topic.name,
        topic_id=topic.topic_id,
        is_internal=topic.is_internal,
        partitions=[
            MetadataResponsePartition(
                error_code=error,
                partition_index=p.index,
                leader_id=leader,
                leader_epoch=p.leader_epoch,
                replica_nodes=[node],
                isr_nodes=[node],
                offline_replicas=[],
            )
            for p in topic.partitions
        ],
        topic_authorized_operations=ALL_TOPIC_OPERATIONS if include_operations else NOT_REQUESTED,
    )


def brokers(ctx: RequestContext) -> list[MetadataResponseBroker]:
    """This broker at the address advertised for the client's listener (KafkaApis:
    metadataCache.getAliveBrokerNodes(request.context.listenerName)); none if that listener
    is not advertised."""
    address = ctx.broker.advertised_address(ctx.listener_name)
    if address is None:
        return []
    host, port = address
    return [MetadataResponseBroker(node_id=ctx.broker.node_id, host=host, port=port, rack=None)]


def _answer_key(ctx: RequestContext, request: MetadataRequest) -> tuple[Any, ...] | None:
    """What the answer to `request` is made of, or None when it is not kept (a topic named
    by id, or one that does not exist: an error, or an auto-creation)."""
    registry = ctx.broker.topics
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
        ctx.broker.advertised_address(ctx.listener_name),
        ctx.broker.node_id,
        ctx.broker.cluster_id,
        request.include_topic_authorized_operations,
        request.include_cluster_authorized_operations,
        *((t, *(p.leader_epoch for p in t.partitions)) for t in topics),
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
        controller_id=broker.node_id,
        topics=topics,
        cluster_authorized_operations=(
            ALL_CLUSTER_OPERATIONS
            if request.include_cluster_authorized_operations
            else NOT_REQUESTED
        ),
    )
