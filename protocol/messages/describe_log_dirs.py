"""DescribeLogDirs (key 35): the log directories and the partitions in each.

Spec: DescribeLogDirsRequest.json / DescribeLogDirsResponse.json. Versions 1-4, flexible
from 2.

Version notes:
  v0: a null `topics` asks for every partition.
  v1: no change on the wire (responses are sent before throttling).
  v2: flexible.
  v3: top-level error_code.
  v4: total_bytes and usable_bytes per log directory (KIP-827).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int16, Int32, Int64, Message, String, Struct, wire


class DescribableLogDirTopic(Struct):
    topic: str = wire(String)
    partitions: list[int] = wire(Array(Int32))


class DescribeLogDirsRequest(Message):
    API_KEY = 35
    VERSIONS = range(1, 5)
    FLEXIBLE_FROM = 2
    topics: list[DescribableLogDirTopic] | None = wire(Array(DescribableLogDirTopic), nullable=True)


class DescribeLogDirsPartition(Struct):
    partition_index: int = wire(Int32)
    partition_size: int = wire(Int64)
    offset_lag: int = wire(Int64)
    is_future_key: bool = wire(Bool)


class DescribeLogDirsTopic(Struct):
    name: str = wire(String)
    partitions: list[DescribeLogDirsPartition] = wire(Array(DescribeLogDirsPartition))


class DescribeLogDirsResult(Struct):
    error_code: int = wire(Int16)
    log_dir: str = wire(String)
    topics: list[DescribeLogDirsTopic] = wire(Array(DescribeLogDirsTopic))
    total_bytes: int = wire(Int64, since=4, default=-1)
    usable_bytes: int = wire(Int64, since=4, default=-1)


class DescribeLogDirsResponse(Message):
    API_KEY = 35
    VERSIONS = range(1, 5)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16, since=3)
    results: list[DescribeLogDirsResult] = wire(Array(DescribeLogDirsResult))


def error_response(
    request: DescribeLogDirsRequest, code: ErrorCode, version: int
) -> DescribeLogDirsResponse:
    """The top-level code and no results (Kafka's DescribeLogDirsRequest.getErrorResponse).

    Below v3 there is no top-level code, so the error reaches the client only as an empty
    list of log directories, exactly as from Kafka.
    """
    return DescribeLogDirsResponse(error_code=code)
