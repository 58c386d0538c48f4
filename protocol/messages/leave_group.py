"""LeaveGroup (key 13): one member (v0-2) or a batch of members (v3+) leave a group.

Spec: LeaveGroupRequest.json / LeaveGroupResponse.json. Versions 0-5, flexible from 4.

Version notes:
  v1: throttle_time_ms in the response.
  v2: no change on the wire.
  v3: batched: members (member_id + group_instance_id) replace member_id, and the response
      answers each member (KIP-345).
  v4: flexible.
  v5: reason per leaving member (KIP-800).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int16, Int32, Message, String, Struct, wire


class MemberIdentity(Struct):
    member_id: str = wire(String, since=3)
    group_instance_id: str | None = wire(String, since=3, nullable=3, default=None)
    reason: str | None = wire(String, since=5, nullable=5, default=None)


class LeaveGroupRequest(Message):
    API_KEY = 13
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 4
    group_id: str = wire(String)
    member_id: str = wire(String, until=2)
    members: list[MemberIdentity] = wire(Array(MemberIdentity), since=3)


class MemberResponse(Struct):
    member_id: str = wire(String, since=3)
    group_instance_id: str | None = wire(String, since=3, nullable=3)
    error_code: int = wire(Int16, since=3)


class LeaveGroupResponse(Message):
    API_KEY = 13
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 4
    throttle_time_ms: int = wire(Int32, since=1)
    error_code: int = wire(Int16)
    members: list[MemberResponse] = wire(Array(MemberResponse), since=3)


def error_response(request: LeaveGroupRequest, code: ErrorCode, version: int) -> LeaveGroupResponse:
    """The code at the top level only, with no per-member results, at every version.

    As Kafka's LeaveGroupRequest.getErrorResponse, which leaves the members out from v3 too.
    """
    return LeaveGroupResponse(error_code=code)
