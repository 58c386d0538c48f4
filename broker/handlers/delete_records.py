"""DeleteRecords: move partitions' log start offset forward (Kafka's "delete records").

Per partition, with Kafka's checks and order: an unknown topic or partition is
UNKNOWN_TOPIC_OR_PARTITION; the internal topic __consumer_offsets is INVALID_TOPIC_EXCEPTION;
a partition whose cleanup.policy does not include "delete" is POLICY_VIOLATION; offset -1
means the high watermark; a negative offset, or one past the high watermark, is
OFFSET_OUT_OF_RANGE. Otherwise the log start offset becomes the offset (it never moves
back), segments wholly below it are deleted, and the answer's low_watermark is the new log
start offset. Failed partitions answer low_watermark -1.

Kafka parks the request until every replica's log start offset has caught up; kmock's
replicas share one log, so the answer is immediate and timeout_ms is never needed. Only the
partition's leader answers (NOT_LEADER_OR_FOLLOWER elsewhere: broker.cluster).
"""

from __future__ import annotations

from broker.cluster import serving_error
from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopicResult,
)

HIGH_WATERMARK = -1


def _delete(ctx: RequestContext, name: str, request: DeleteRecordsPartition) -> int:
    """The new log start offset."""
    registry = ctx.broker.topics
    topic = registry.get(name)
    if topic is not None and topic.is_internal:
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION, f"Cannot delete records of internal topic {name}"
        )
    partition = registry.partition(name, request.partition_index)
    if (code := serving_error(ctx, partition)) != ErrorCode.NONE:
        raise KafkaError(code, f"{name}-{request.partition_index}")  # led by another broker
    plog = partition.log
    tp = f"{name}-{request.partition_index}"
    if not plog.config.deletes:
        raise KafkaError(
            ErrorCode.POLICY_VIOLATION,
            f"Records of partition {tp} can not be deleted due to the configured policy",
        )
    offset = plog.high_watermark if request.offset == HIGH_WATERMARK else request.offset
    if offset < 0:
        raise KafkaError(
            ErrorCode.OFFSET_OUT_OF_RANGE, f"The offset {offset} for partition {tp} is not valid"
        )
    return int(plog.advance_log_start_offset(offset))


async def handle(ctx: RequestContext, request: DeleteRecordsRequest) -> DeleteRecordsResponse:
    topics = []
    for topic in request.topics:
        partitions = []
        for p in topic.partitions:
            try:
                low_watermark, code = _delete(ctx, topic.name, p), ErrorCode.NONE
            except KafkaError as e:
                low_watermark, code = -1, e.code
            partitions.append(
                DeleteRecordsPartitionResult(
                    partition_index=p.partition_index, low_watermark=low_watermark, error_code=code
                )
            )
        topics.append(DeleteRecordsTopicResult(name=topic.name, partitions=partitions))
    return DeleteRecordsResponse(topics=topics)
