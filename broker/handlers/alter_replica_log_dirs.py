"""AlterReplicaLogDirs: kmock has one log directory (log.dirs, named by its absolute path as
DescribeLogDirs names it), so a move to it is already done (NONE), as Kafka's
ReplicaManager.alterReplicaLogDirs answers a move to the directory a replica is in; any
other path is LOG_DIR_NOT_FOUND ("not found in the config"), and a partition this broker
does not host is REPLICA_NOT_AVAILABLE.
"""

from __future__ import annotations

from pathlib import Path

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.alter_replica_log_dirs import (
    AlterReplicaLogDirPartitionResult,
    AlterReplicaLogDirsRequest,
    AlterReplicaLogDirsResponse,
    AlterReplicaLogDirTopicResult,
)


def _same_dir(path: str, log_dir: Path) -> bool:
    """Kafka compares the absolute form of the path it is given (File.getAbsolutePath)."""
    return Path(path).absolute() == log_dir


async def handle(
    ctx: RequestContext, request: AlterReplicaLogDirsRequest
) -> AlterReplicaLogDirsResponse:
    registry = ctx.broker.topics
    log_dir = ctx.broker.data_dir.absolute()
    results = []
    for d in request.dirs:
        known_dir = _same_dir(d.path, log_dir)
        for t in d.topics:
            topic = registry.get(t.name)
            count = 0 if topic is None else len(topic.partitions)
            partitions = []
            for p in t.partitions:
                if not known_dir:
                    code = ErrorCode.LOG_DIR_NOT_FOUND
                elif not 0 <= p < count:
                    code = ErrorCode.REPLICA_NOT_AVAILABLE
                else:
                    code = ErrorCode.NONE
                partitions.append(
                    AlterReplicaLogDirPartitionResult(partition_index=p, error_code=code)
                )
            results.append(AlterReplicaLogDirTopicResult(topic_name=t.name, partitions=partitions))
    return AlterReplicaLogDirsResponse(results=results)
