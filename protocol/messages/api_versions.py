"""ApiVersions (key 18): which APIs and versions the broker speaks.

Spec: ApiVersionsRequest.json / ApiVersionsResponse.json. Versions 0-4, flexible from 3.

Version notes:
  v1: throttle_time_ms.
  v3: flexible; client_software_name/version in the request; tagged feature fields (KIP-511).
  v4: no change on the wire (a client that sends v4 accepts UNSUPPORTED_VERSION answered at v0).

The response header is always v0, even for flexible versions (see protocol.frames).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Int16, Int32, Int64, Message, String, Struct, wire


class ApiVersionsRequest(Message):
    API_KEY = 18
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 3
    KEEP_DECODED = True  # sent again and again, byte for byte (protocol.schema._Kept)
    client_software_name: str = wire(String, since=3)
    client_software_version: str = wire(String, since=3)


class ApiVersion(Struct):
    api_key: int = wire(Int16)
    min_version: int = wire(Int16)
    max_version: int = wire(Int16)


class SupportedFeatureKey(Struct):
    name: str = wire(String)
    min_version: int = wire(Int16)
    max_version: int = wire(Int16)


class FinalizedFeatureKey(Struct):
    name: str = wire(String)
    max_version_level: int = wire(Int16)
    min_version_level: int = wire(Int16)


class ApiVersionsResponse(Message):
    API_KEY = 18
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 3
    error_code: int = wire(Int16)
    api_keys: list[ApiVersion] = wire(Array(ApiVersion))
    throttle_time_ms: int = wire(Int32, since=1)
    supported_features: list[SupportedFeatureKey] = wire(Array(SupportedFeatureKey), since=3, tag=0)
    finalized_features_epoch: int = wire(Int64, since=3, tag=1, default=-1)
    finalized_features: list[FinalizedFeatureKey] = wire(Array(FinalizedFeatureKey), since=3, tag=2)
    zk_migration_ready: bool = wire(Bool, since=3, tag=3)


def error_response(
    request: ApiVersionsRequest, code: ErrorCode, version: int
) -> ApiVersionsResponse:
    """The code at the top level and no APIs (Kafka's ApiVersionsRequest.getErrorResponse).

    Kafka sets throttle_time_ms from v1, which is 0 here at every version. For
    UNSUPPORTED_VERSION Kafka also lists ApiVersions' own range; the broker answers that case
    itself, in the v0 form and with every API (broker.connection).
    """
    return ApiVersionsResponse(error_code=code)
