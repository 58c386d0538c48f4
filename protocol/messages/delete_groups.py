"""DeleteGroups (key 42): delete empty groups and their offsets.

Spec: DeleteGroupsRequest.json / DeleteGroupsResponse.json. Versions 0-2, flexible from 2.

Version notes:
  v1: no change on the wire.
  v2: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Message, String, Struct, wire


class DeleteGroupsRequest(Message):
    API_KEY = 42
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    groups_names: list[str] = wire(Array(String))


class DeletableGroupResult(Struct):
    group_id: str = wire(String)
    error_code: int = wire(Int16)


class DeleteGroupsResponse(Message):
    API_KEY = 42
    VERSIONS = range(0, 3)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    results: list[DeletableGroupResult] = wire(Array(DeletableGroupResult))


def error_response(
    request: DeleteGroupsRequest, code: ErrorCode, version: int
) -> DeleteGroupsResponse:
    """One result per requested group carrying the code, at every version.

    As Kafka's DeleteGroupsRequest.getErrorResponse.
    """
    return DeleteGroupsResponse(
        results=[DeletableGroupResult(group_id=g, error_code=code) for g in request.groups_names]
    )
