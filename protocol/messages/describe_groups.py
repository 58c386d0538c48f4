"""DescribeGroups (key 15): state, protocol and members of each named group.

Spec: DescribeGroupsRequest.json / DescribeGroupsResponse.json. Versions 0-6, flexible from 5.

Version notes:
  v1: throttle_time_ms in the response.
  v2: no change on the wire.
  v3: include_authorized_operations; authorized_operations per group (KIP-430).
  v4: group_instance_id per member (KIP-345).
  v5: flexible.
  v6: error_message per group; an unknown group is GROUP_ID_NOT_FOUND (KIP-1043).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import Array, Bool, Bytes, Int16, Int32, Message, String, Struct, wire


class DescribeGroupsRequest(Message):
    API_KEY = 15
    VERSIONS = range(0, 7)
    FLEXIBLE_FROM = 5
    groups: list[str] = wire(Array(String))
    include_authorized_operations: bool = wire(Bool, since=3)


class DescribedGroupMember(Struct):
    member_id: str = wire(String)
    group_instance_id: str | None = wire(String, since=4, nullable=4, default=None)
    client_id: str = wire(String)
    client_host: str = wire(String)
    member_metadata: bytes = wire(Bytes)
    member_assignment: bytes = wire(Bytes)


class DescribedGroup(Struct):
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, since=6, nullable=6, default=None)
    group_id: str = wire(String)
    group_state: str = wire(String)
    protocol_type: str = wire(String)
    protocol_data: str = wire(String)
    members: list[DescribedGroupMember] = wire(Array(DescribedGroupMember))
    authorized_operations: int = wire(Int32, since=3, default=AUTHORIZED_OPERATIONS_OMITTED)


class DescribeGroupsResponse(Message):
    API_KEY = 15
    VERSIONS = range(0, 7)
    FLEXIBLE_FROM = 5
    throttle_time_ms: int = wire(Int32, since=1)
    groups: list[DescribedGroup] = wire(Array(DescribedGroup))


def error_response(
    request: DescribeGroupsRequest, code: ErrorCode, version: int
) -> DescribeGroupsResponse:
    """One DescribedGroup per requested group carrying the code, with empty state and members.

    The same at every version, as Kafka's DescribeGroupsRequest.getErrorResponse
    (DescribeGroupsResponse.groupError).
    """
    return DescribeGroupsResponse(
        groups=[DescribedGroup(error_code=code, group_id=group_id) for group_id in request.groups]
    )
