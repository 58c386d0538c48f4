"""DescribeLogDirs: the one log directory (log.dirs) and the size of each partition in it.

The directory is named by its absolute path, as Kafka names it. A null `topics` asks for
every partition; otherwise only the named partitions that exist are listed, and a topic
none of whose partitions is listed is left out, as Kafka does. A partition's size is the sum
of its segment files; offset_lag is 0 (the log is its own leader) and is_future_key false
(no replica is being moved). With several brokers each lists the partitions it is a replica
of. v4 adds the file system's total and usable bytes (KIP-827), as
Java's FileStore reports them.
"""

from __future__ import annotations

import shutil

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.describe_log_dirs import (
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
)


async def handle(ctx: RequestContext, request: DescribeLogDirsRequest) -> DescribeLogDirsResponse:
    broker = ctx.broker
    wanted = None
    if request.topics is not None:
        wanted = {(t.topic, index) for t in request.topics for index in t.partitions}
    topics = []
    for topic in broker.topics.topics.values():
        partitions = [
            DescribeLogDirsPartition(
                partition_index=p.index,
                partition_size=p.log.size_bytes,
                offset_lag=0,
                is_future_key=False,
            )
            for p in topic.partitions
            # With several brokers, this broker's replicas (broker.cluster_state).
            if (wanted is None or (topic.name, p.index) in wanted) and ctx.node_id in p.replicas
        ]
        if partitions:
            topics.append(DescribeLogDirsTopic(name=topic.name, partitions=partitions))
    log_dir = broker.data_dir.absolute()
    usage = shutil.disk_usage(log_dir)
    return DescribeLogDirsResponse(
        error_code=ErrorCode.NONE,
        results=[
            DescribeLogDirsResult(
                error_code=ErrorCode.NONE,
                log_dir=str(log_dir),
                topics=topics,
                total_bytes=usage.total,
                usable_bytes=usage.free,
            )
        ],
    )
