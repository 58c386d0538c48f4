"""DescribeCluster (key 60): the brokers, controller and cluster id (KIP-700).

Spec: DescribeClusterRequest.json / DescribeClusterResponse.json. Versions 0-2, flexible
from 0.

Version notes:
  v0: flexible from the start.
  v1: endpoint_type in request and response; MISMATCHED_ENDPOINT_TYPE and
      UNSUPPORTED_ENDPOINT_TYPE may be returned (KIP-919).
  v2: include_fenced_brokers in the request, is_fenced per broker (KIP-1073).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import Array, Bool, Int8, Int16, Int32, Message, String, Struct, wire


class DescribeClusterRequest(Message):
    API_KEY = 60
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 0
    include_cluster_authorized_operations: bool = wire(Bool)
    endpoint_type: int = wire(Int8, since=1, default=1)
    include_fenced_brokers: bool = wire(Bool, since=2)


class DescribeClusterBroker(Struct):
    broker_id: int = wire(Int32)
    host: str = wire(String)
    port: int = wire(Int32)
    rack: str | None = wire(String, nullable=True, default=None)
    is_fenced: bool = wire(Bool, since=2)


class DescribeClusterResponse(Message):
    API_KEY = 60
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)
    endpoint_type: int = wire(Int8, since=1, default=1)
    cluster_id: str = wire(String)
    controller_id: int = wire(Int32, default=-1)
    brokers: list[DescribeClusterBroker] = wire(Array(DescribeClusterBroker))
    cluster_authorized_operations: int = wire(Int32, default=AUTHORIZED_OPERATIONS_OMITTED)


def error_response(
    request: DescribeClusterRequest, code: ErrorCode, version: int
) -> DescribeClusterResponse:
    """The top-level code, at every version (Kafka's DescribeClusterRequest.getErrorResponse).

    Kafka may also send the exception's own message (ApiError.fromThrowable); we send null.
    """
    return DescribeClusterResponse(error_code=code)
