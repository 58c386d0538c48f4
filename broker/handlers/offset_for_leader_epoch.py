"""OffsetForLeaderEpoch: where a leader epoch ends, for clients validating their position
after a leader change (KIP-320) and for followers truncating (KIP-101).

Every partition here has had one leader, this broker, in one epoch (Partition.leader_epoch,
0), so the leader epoch cache Kafka keeps holds a single entry. Per partition, as Kafka's
Partition.lastOffsetForLeaderEpoch answers:
  * an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION;
  * current_leader_epoch (-1: not given) newer than ours is UNKNOWN_LEADER_EPOCH, older is
    FENCED_LEADER_EPOCH (the checks Fetch and ListOffsets make);
  * the current epoch ends at the log end offset: (epoch, log end offset);
  * any other epoch (-1, or one that never was) is not in the cache: no error, epoch -1 and
    offset -1 (Kafka's UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET).
replica_id (v3+) changes nothing: there are no followers.
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopicResult,
)

UNDEFINED_EPOCH = UNDEFINED_EPOCH_OFFSET = -1


def _end_offset(
    ctx: RequestContext, topic: str, request: OffsetForLeaderPartition
) -> EpochEndOffset:
    partition = ctx.broker.topics.partition(topic, request.partition)
    if request.current_leader_epoch > partition.leader_epoch:
        raise KafkaError(ErrorCode.UNKNOWN_LEADER_EPOCH, f"{topic}-{request.partition}")
    if 0 <= request.current_leader_epoch < partition.leader_epoch:
        raise KafkaError(ErrorCode.FENCED_LEADER_EPOCH, f"{topic}-{request.partition}")
    if request.leader_epoch != partition.leader_epoch:
        return EpochEndOffset(
            error_code=ErrorCode.NONE,
            partition=request.partition,
            leader_epoch=UNDEFINED_EPOCH,
            end_offset=UNDEFINED_EPOCH_OFFSET,
        )
    return EpochEndOffset(
        error_code=ErrorCode.NONE,
        partition=request.partition,
        leader_epoch=partition.leader_epoch,
        end_offset=partition.log.log_end_offset,
    )


async def handle(
    ctx: RequestContext, request: OffsetForLeaderEpochRequest
) -> OffsetForLeaderEpochResponse:
    topics = []
    for t in request.topics:
        partitions = []
        for p in t.partitions:
            try:
                partitions.append(_end_offset(ctx, t.topic, p))
            except KafkaError as e:
                partitions.append(EpochEndOffset(error_code=e.code, partition=p.partition))
        topics.append(OffsetForLeaderTopicResult(topic=t.topic, partitions=partitions))
    return OffsetForLeaderEpochResponse(topics=topics)
