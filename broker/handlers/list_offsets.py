"""ListOffsets: offsets by timestamp, with Kafka's special timestamps.

-1 LATEST           the high watermark (= the log end offset: one replica); with
                    isolation_level 1 (read_committed, v2+) the last stable offset
                    (Kafka's ListOffsets with IsolationLevel.READ_COMMITTED)
-2 EARLIEST         the log start offset
-3 MAX_TIMESTAMP    the record with the largest timestamp (v7+, KIP-734)
-4 EARLIEST_LOCAL   the log start offset (no tiered storage: same as EARLIEST; v8+)
-5 LATEST_TIERED    no tiered storage: offset -1, as Kafka answers without it (v9+)
>= 0                the first offset whose timestamp is >= the given one, or -1
"""

from __future__ import annotations

from typing import Any

from broker.cluster import serving_error
from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.list_offsets import (
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopicResponse,
)

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
READ_COMMITTED = 1


def _lookup(plog: Any, timestamp: int, isolation_level: int) -> tuple[int, int]:
    if timestamp == LATEST:
        if isolation_level == READ_COMMITTED:
            return plog.transactions.last_stable_offset(plog.high_watermark), -1
        return plog.log_end_offset, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return plog.log_start_offset, -1
    if timestamp == LATEST_TIERED:
        return -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = plog.max_timestamp_offset()
    else:
        found = plog.offset_for_timestamp(timestamp)
    return found if found is not None else (-1, -1)


async def handle(ctx: RequestContext, request: ListOffsetsRequest) -> ListOffsetsResponse:
    registry = ctx.broker.topics
    topics = []
    for t in request.topics:
        topic = registry.get(t.name)
        parts = []
        for p in t.partitions:
            if topic is None or not 0 <= p.partition_index < len(topic.partitions):
                parts.append(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index,
                        error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                        timestamp=-1,
                        offset=-1,
                    )
                )
                continue
            partition = topic.partitions[p.partition_index]
            # The leader answers; an epoch other than its own is UNKNOWN_LEADER_EPOCH (newer)
            # or FENCED_LEADER_EPOCH (older) (broker.cluster.serving_error).
            code = serving_error(ctx, partition, p.current_leader_epoch)
            if code:
                parts.append(
                    ListOffsetsPartitionResponse(
                        partition_index=p.partition_index, error_code=code, timestamp=-1, offset=-1
                    )
                )
                continue
            offset, ts = _lookup(partition.log, p.timestamp, request.isolation_level)
            parts.append(
                ListOffsetsPartitionResponse(
                    partition_index=p.partition_index,
                    error_code=ErrorCode.NONE,
                    timestamp=ts,
                    offset=offset,
                    leader_epoch=partition.leader_epoch,
                )
            )
        topics.append(ListOffsetsTopicResponse(name=t.name, partitions=parts))
    return ListOffsetsResponse(topics=topics)
