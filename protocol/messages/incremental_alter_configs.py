"""IncrementalAlterConfigs (key 44): set, delete, append to or subtract from configs (KIP-339).

Spec: IncrementalAlterConfigsRequest.json / IncrementalAlterConfigsResponse.json. Versions
0-1, flexible from 1.

Version notes:
  v0: config_operation per config: 0 SET, 1 DELETE, 2 APPEND, 3 SUBTRACT.
  v1: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode

# The response is AlterConfigsResponse's, struct for struct and name for name.
from protocol.messages.alter_configs import AlterConfigsResourceResponse, resource_errors
from protocol.schema import Array, Bool, Int8, Int32, Message, String, Struct, wire


class AlterableConfig(Struct):
    name: str = wire(String)
    config_operation: int = wire(Int8)
    value: str | None = wire(String, nullable=True)


class AlterConfigsResource(Struct):
    resource_type: int = wire(Int8)
    resource_name: str = wire(String)
    configs: list[AlterableConfig] = wire(Array(AlterableConfig))


class IncrementalAlterConfigsRequest(Message):
    API_KEY = 44
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 1
    resources: list[AlterConfigsResource] = wire(Array(AlterConfigsResource))
    validate_only: bool = wire(Bool)


class IncrementalAlterConfigsResponse(Message):
    API_KEY = 44
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 1
    throttle_time_ms: int = wire(Int32)
    responses: list[AlterConfigsResourceResponse] = wire(Array(AlterConfigsResourceResponse))


def error_response(
    request: IncrementalAlterConfigsRequest, code: ErrorCode, version: int
) -> IncrementalAlterConfigsResponse:
    """The code on every requested resource, at every version.

    As Kafka's IncrementalAlterConfigsRequest.getErrorResponse. Kafka may also send the
    exception's own message (ApiError.fromThrowable); we send null.
    """
    return IncrementalAlterConfigsResponse(responses=resource_errors(request.resources, code))
