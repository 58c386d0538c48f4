"""DescribeProducers: each partition's active producers (Kafka's
ReplicaManager.activeProducerState): epoch, last sequence and timestamp, the coordinator
epoch of its last marker, and the first offset of its open transaction.

As KafkaApis.handleDescribeProducersRequest, an illegal topic name is INVALID_TOPIC_EXCEPTION
with Topic.validate's message (checked before any ACL, broker.security.enforce), and a topic
that does not exist is UNKNOWN_TOPIC_OR_PARTITION with the code's message."""

from __future__ import annotations

from broker.context import RequestContext
from broker.topics import topic_name_problem
from protocol.errors import ErrorCode
from protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicResponse,
)
from storage.transactions import active_producers


async def handle(
    ctx: RequestContext, request: DescribeProducersRequest
) -> DescribeProducersResponse:
    topics = []
    for t in request.topics:
        topic = ctx.broker.topics.get(t.name)
        invalid = topic_name_problem(t.name)
        partitions = []
        for index in t.partition_indexes:
            if invalid is not None or topic is None:
                partitions.append(
                    PartitionResponse(
                        partition_index=index,
                        error_code=(
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                            if invalid is None
                            else ErrorCode.INVALID_TOPIC_EXCEPTION
                        ),
                        error_message=invalid or "This server does not host this topic-partition.",
                        active_producers=[],
                    )
                )
                continue
            if not 0 <= index < len(topic.partitions):
                partitions.append(
                    PartitionResponse(
                        partition_index=index,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        active_producers=[],
                    )
                )
                continue
            plog = topic.partitions[index].log
            rows = active_producers(plog.producer_state.producers, plog.transactions.tracker)
            partitions.append(
                PartitionResponse(
                    partition_index=index,
                    error_code=ErrorCode.NONE,
                    active_producers=[ProducerState(**row._asdict()) for row in rows],
                )
            )
        topics.append(TopicResponse(name=t.name, partitions=partitions))
    return DescribeProducersResponse(topics=topics)
