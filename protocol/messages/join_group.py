"""JoinGroup (key 11): a member joins a group; once all have joined, each learns the leader.

Spec: JoinGroupRequest.json / JoinGroupResponse.json. Versions 0-9, flexible from 6.

Version notes:
  v1: rebalance_timeout_ms. v0 has none: Kafka uses session_timeout_ms in its place, which
      is the coordinator's rule; a v0 request decodes with the default -1 here.
  v2: throttle_time_ms in the response.
  v3: no change on the wire.
  v4: no change on the wire; a join without a member_id is answered MEMBER_ID_REQUIRED with
      an assigned id, and the member joins again with it (KIP-394).
  v5: group_instance_id, in the request and per member in the response (KIP-345).
  v6: flexible.
  v7: protocol_type in the response; protocol_name becomes nullable (KIP-559).
  v8: reason (KIP-800).
  v9: skip_assignment in the response (KIP-814).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bool, Bytes, Int16, Int32, Message, String, Struct, wire


class JoinGroupRequestProtocol(Struct):
    name: str = wire(String)
    metadata: bytes = wire(Bytes)


class JoinGroupRequest(Message):
    API_KEY = 11
    VERSIONS = range(0, 10)
    FLEXIBLE_FROM = 6
    group_id: str = wire(String)
    session_timeout_ms: int = wire(Int32)
    rebalance_timeout_ms: int = wire(Int32, since=1, default=-1)
    member_id: str = wire(String)
    group_instance_id: str | None = wire(String, since=5, nullable=5, default=None)
    protocol_type: str = wire(String)
    protocols: list[JoinGroupRequestProtocol] = wire(Array(JoinGroupRequestProtocol))
    reason: str | None = wire(String, since=8, nullable=8, default=None)


class JoinGroupResponseMember(Struct):
    member_id: str = wire(String)
    group_instance_id: str | None = wire(String, since=5, nullable=5, default=None)
    metadata: bytes = wire(Bytes)


class JoinGroupResponse(Message):
    API_KEY = 11
    VERSIONS = range(0, 10)
    FLEXIBLE_FROM = 6
    throttle_time_ms: int = wire(Int32, since=2)
    error_code: int = wire(Int16)
    generation_id: int = wire(Int32, default=-1)
    protocol_type: str | None = wire(String, since=7, nullable=7, default=None)
    protocol_name: str | None = wire(String, nullable=7)
    leader: str = wire(String)
    skip_assignment: bool = wire(Bool, since=9, default=False)
    member_id: str = wire(String)
    members: list[JoinGroupResponseMember] = wire(Array(JoinGroupResponseMember))


def error_response(request: JoinGroupRequest, code: ErrorCode, version: int) -> JoinGroupResponse:
    """The code at the top level, generation -1, no leader, no member id, no members.

    As Kafka's JoinGroupRequest.getErrorResponse: protocol_name is "" below v7 and null from
    v7, where it became nullable.
    """
    return JoinGroupResponse(
        error_code=code,
        generation_id=-1,
        protocol_name=None if version >= 7 else "",
        leader="",
        member_id="",
    )
