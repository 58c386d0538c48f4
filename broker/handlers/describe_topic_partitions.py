"""DescribeTopicPartitions: topics and partitions a page at a time, as Kafka's
DescribeTopicPartitionsRequestHandler and KRaftMetadataCache.describeTopicResponse answer.

An empty topic list asks for every topic. Topics are described in name order, from the
cursor's topic and partition if one is given; at most `response_partition_limit` partitions
(capped by Kafka's max.request.partition.size.limit, 2000) go in one answer, and
`next_cursor` then names the first partition left out. A named topic that does not exist is
UNKNOWN_TOPIC_OR_PARTITION. Leaders, replicas, ISR and offline replicas are the cluster's
(broker.cluster_state); there are no eligible leader replicas (ELR, KIP-966), so those
lists are empty.
A cursor with a negative partition, or naming a topic the request does not, is
INVALID_REQUEST.
"""

from __future__ import annotations

import uuid

from broker.cluster import ALL_TOPIC_OPERATIONS
from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    DescribeTopicPartitionsResponse,
    DescribeTopicPartitionsResponsePartition,
    DescribeTopicPartitionsResponseTopic,
)

MAX_PARTITIONS_PER_RESPONSE = 2000  # max.request.partition.size.limit


async def handle(
    ctx: RequestContext, request: DescribeTopicPartitionsRequest
) -> DescribeTopicPartitionsResponse:
    registry = ctx.broker.topics
    cluster = ctx.broker.cluster
    cursor = request.cursor
    # An empty list: every topic.
    names = sorted({t.name for t in request.topics} if request.topics else registry.topics)
    if cursor is not None:
        # Kafka's DescribeTopicPartitionsRequestHandler refuses a cursor it cannot resume from.
        if cursor.partition_index < 0:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid partition index in the cursor: {cursor.partition_index}",
            )
        if request.topics and cursor.topic_name not in names:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, "The cursor topic does not exist in the request."
            )
        names = [n for n in names if n >= cursor.topic_name]
    budget = max(1, min(request.response_partition_limit, MAX_PARTITIONS_PER_RESPONSE))
    topics: list[DescribeTopicPartitionsResponseTopic] = []
    next_cursor: Cursor | None = None
    for name in names:
        topic = registry.get(name)
        if topic is None:
            topics.append(
                DescribeTopicPartitionsResponseTopic(
                    error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    name=name,
                    topic_id=uuid.UUID(int=0),
                )
            )
            continue
        first = cursor.partition_index if cursor is not None and name == cursor.topic_name else 0
        if budget == 0:
            next_cursor = Cursor(topic_name=name, partition_index=first)
            break
        indexes = range(first, len(topic.partitions))
        taken = indexes[:budget]
        budget -= len(taken)
        topics.append(
            DescribeTopicPartitionsResponseTopic(
                error_code=ErrorCode.NONE,
                name=name,
                topic_id=topic.topic_id,
                is_internal=topic.is_internal,
                partitions=[
                    DescribeTopicPartitionsResponsePartition(
                        error_code=ErrorCode.NONE,
                        partition_index=p.index,
                        leader_id=p.leader,
                        leader_epoch=p.leader_epoch,
                        replica_nodes=list(p.replicas),
                        isr_nodes=list(p.isr),
                        eligible_leader_replicas=[],
                        last_known_elr=[],
                        offline_replicas=cluster.offline_replicas(p),
                    )
                    for p in topic.partitions[taken.start : taken.stop]
                ],
                topic_authorized_operations=ALL_TOPIC_OPERATIONS,
            )
        )
        if len(taken) < len(indexes):
            next_cursor = Cursor(topic_name=name, partition_index=taken.stop)
            break
    return DescribeTopicPartitionsResponse(topics=topics, next_cursor=next_cursor)
