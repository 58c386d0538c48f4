"""OffsetForLeaderEpoch: where a leader epoch ends, for clients validating their position
after a leader change (KIP-320) and for followers truncating (KIP-101).

Each partition keeps its leader epoch cache (Partition.epochs: (epoch, start offset), one
entry per leader change, broker.cluster_state; a single broker has one, epoch 0). Per
partition, as Kafka's Partition.lastOffsetForLeaderEpoch and
LeaderEpochFileCache.endOffsetFor answer:
  * an unknown topic or partition is UNKNOWN_TOPIC_OR_PARTITION;
  * current_leader_epoch (-1: not given) newer than ours is UNKNOWN_LEADER_EPOCH, older is
    FENCED_LEADER_EPOCH (the checks Fetch and ListOffsets make); a broker that does not
    lead the partition answers NOT_LEADER_OR_FOLLOWER;
  * the current epoch ends at the log end offset: (epoch, log end offset);
  * an older epoch ends where the next one in the cache starts: (the largest cached epoch
    not above it, the next epoch's start offset); one below every cached epoch is answered
    with itself and the first epoch's start;
  * -1, or an epoch newer than any, is not in the cache: no error, epoch -1 and offset -1
    (Kafka's UNDEFINED_EPOCH / UNDEFINED_EPOCH_OFFSET).
replica_id (v3+) changes nothing: there are no followers outside the process.
"""

from __future__ import annotations

from broker.cluster import serving_error
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
    code = serving_error(ctx, partition, request.current_leader_epoch)
    if code != ErrorCode.NONE:
        raise KafkaError(code, f"{topic}-{request.partition}")
    epoch, end = end_offset_for(
        partition.epochs, request.leader_epoch, partition.leader_epoch, partition.log.log_end_offset
    )
    return EpochEndOffset(
        error_code=ErrorCode.NONE, partition=request.partition, leader_epoch=epoch, end_offset=end
    )


def end_offset_for(
    epochs: list[tuple[int, int]], requested: int, current: int, log_end_offset: int
) -> tuple[int, int]:
    """Kafka's LeaderEpochFileCache.endOffsetFor over the cache `epochs`."""
    if requested == UNDEFINED_EPOCH:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    if requested == current:
        return current, log_end_offset
    higher = [(e, o) for e, o in epochs if e > requested]
    if not higher:
        return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
    floor = [e for e, _ in epochs if e <= requested]
    return (max(floor) if floor else requested), higher[0][1]


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
