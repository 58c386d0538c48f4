"""ListGroups (key 16): every group this coordinator knows, optionally filtered.

Spec: ListGroupsRequest.json / ListGroupsResponse.json. Versions 0-5, flexible from 3.

Version notes:
  v1: throttle_time_ms in the response.
  v2: no change on the wire.
  v3: flexible.
  v4: states_filter; group_state per group (KIP-518).
  v5: types_filter; group_type per group (KIP-848).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Message, String, Struct, wire


class ListGroupsRequest(Message):
    API_KEY = 16
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 3
    states_filter: list[str] = wire(Array(String), since=4)
    types_filter: list[str] = wire(Array(String), since=5)


class ListedGroup(Struct):
    group_id: str = wire(String)
    protocol_type: str = wire(String)
    group_state: str = wire(String, since=4)
    group_type: str = wire(String, since=5)


class ListGroupsResponse(Message):
    API_KEY = 16
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 3
    throttle_time_ms: int = wire(Int32, since=1)
    error_code: int = wire(Int16)
    groups: list[ListedGroup] = wire(Array(ListedGroup))


def error_response(request: ListGroupsRequest, code: ErrorCode, version: int) -> ListGroupsResponse:
    """The code at the top level and no groups, at every version.

    As Kafka's ListGroupsRequest.getErrorResponse.
    """
    return ListGroupsResponse(error_code=code)
