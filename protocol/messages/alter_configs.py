"""AlterConfigs (key 33): replace the whole configuration of topics and brokers.

Spec: AlterConfigsRequest.json / AlterConfigsResponse.json. Versions 0-2, flexible from 2.

Version notes:
  v1: no change on the wire (responses are sent before throttling).
  v2: flexible.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int8, Int16, Int32, Message, String, Struct, wire

if TYPE_CHECKING:
    from protocol.messages.incremental_alter_configs import (
        AlterConfigsResource as IncrementalAlterConfigsResource,
    )


class AlterableConfig(Struct):
    name: str = wire(String)
    value: str | None = wire(String, nullable=True)


class AlterConfigsResource(Struct):
    resource_type: int = wire(Int8)
    resource_name: str = wire(String)
    configs: list[AlterableConfig] = wire(Array(AlterableConfig))


class AlterConfigsRequest(Message):
    API_KEY = 33
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    resources: list[AlterConfigsResource] = wire(Array(AlterConfigsResource))
    validate_only: bool = wire(Bool)


class AlterConfigsResourceResponse(Struct):
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True)
    resource_type: int = wire(Int8)
    resource_name: str = wire(String)


class AlterConfigsResponse(Message):
    API_KEY = 33
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    responses: list[AlterConfigsResourceResponse] = wire(Array(AlterConfigsResourceResponse))


def error_response(
    request: AlterConfigsRequest, code: ErrorCode, version: int
) -> AlterConfigsResponse:
    """The code on every requested resource (Kafka's AlterConfigsRequest.getErrorResponse).

    The same at every version. Kafka may also send the exception's own message
    (ApiError.fromThrowable); we send null and let the client name the code.
    """
    return AlterConfigsResponse(responses=resource_errors(request.resources, code))


def resource_errors(
    resources: Sequence[AlterConfigsResource | IncrementalAlterConfigsResource], code: ErrorCode
) -> list[AlterConfigsResourceResponse]:
    """`code` for every resource: the answer of an AlterConfigs or an IncrementalAlterConfigs
    that failed as a whole."""
    return [
        AlterConfigsResourceResponse(
            error_code=code,
            error_message=None,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
        )
        for resource in resources
    ]
