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
"""

from __future__ import annotations

from broker.cluster import (
    ALL_CLUSTER_OPERATIONS,
    ALL_TOPIC_OPERATIONS,
    NOT_REQUESTED,
    controller_id,
    node_endpoints,
)
from broker.context import RequestContext
from broker.topics import Topic, validate_topic_name
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.metadata import (
    MetadataRequest,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
)
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC


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


async def handle(ctx: RequestContext, request: MetadataRequest) -> MetadataResponse:
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
