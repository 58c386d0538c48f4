"""DescribeConfigs (key 32): the configuration of topics and brokers.

Spec: DescribeConfigsRequest.json / DescribeConfigsResponse.json. Versions 1-4, flexible
from 4.

Version notes:
  v0: is_default per config (sarama 1.22 still uses it).
  v1: include_synonyms; config_source and synonyms per config.
  v2: no change on the wire (responses are sent before throttling).
  v3: include_documentation; config_type and documentation per config.
  v4: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int8, Int16, Int32, Message, String, Struct, wire


class DescribeConfigsResource(Struct):
    resource_type: int = wire(Int8)
    resource_name: str = wire(String)
    configuration_keys: list[str] | None = wire(Array(String), nullable=True)


class DescribeConfigsRequest(Message):
    API_KEY = 32
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 4
    resources: list[DescribeConfigsResource] = wire(Array(DescribeConfigsResource))
    include_synonyms: bool = wire(Bool, since=1)
    include_documentation: bool = wire(Bool, since=3)


class DescribeConfigsSynonym(Struct):
    name: str = wire(String, since=1)
    value: str | None = wire(String, since=1, nullable=True)
    source: int = wire(Int8, since=1)


class DescribeConfigsResourceResult(Struct):
    name: str = wire(String)
    value: str | None = wire(String, nullable=True)
    read_only: bool = wire(Bool)
    is_default: bool = wire(Bool, until=0)
    config_source: int = wire(Int8, since=1, default=-1)
    is_sensitive: bool = wire(Bool)
    synonyms: list[DescribeConfigsSynonym] = wire(Array(DescribeConfigsSynonym), since=1)
    config_type: int = wire(Int8, since=3)
    documentation: str | None = wire(String, since=3, nullable=True)


class DescribeConfigsResult(Struct):
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True)
    resource_type: int = wire(Int8)
    resource_name: str = wire(String)
    configs: list[DescribeConfigsResourceResult] = wire(Array(DescribeConfigsResourceResult))


class DescribeConfigsResponse(Message):
    API_KEY = 32
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 4
    throttle_time_ms: int = wire(Int32)
    results: list[DescribeConfigsResult] = wire(Array(DescribeConfigsResult))


def error_response(
    request: DescribeConfigsRequest, code: ErrorCode, version: int
) -> DescribeConfigsResponse:
    """The code on every requested resource, with no configs, at every version.

    As Kafka's DescribeConfigsRequest.getErrorResponse. Kafka also sends the code's default
    message; we send null and let the client name it.
    """
    return DescribeConfigsResponse(
        results=[
            DescribeConfigsResult(
                error_code=code,
                error_message=None,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
            for resource in request.resources
        ]
    )
