"""SyncGroup (key 14): the leader hands out assignments; every member receives its own.

Spec: SyncGroupRequest.json / SyncGroupResponse.json. Versions 0-5, flexible from 4.

Version notes:
  v1: throttle_time_ms in the response.
  v2: no change on the wire.
  v3: group_instance_id (KIP-345).
  v4: flexible.
  v5: protocol_type and protocol_name in the request and the response; the coordinator
      rejects a request whose type or name differ from the group's (KIP-559).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Bytes, Int16, Int32, Message, String, Struct, wire


class SyncGroupRequestAssignment(Struct):
    member_id: str = wire(String)
    assignment: bytes = wire(Bytes)


class SyncGroupRequest(Message):
    API_KEY = 14
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 4
    group_id: str = wire(String)
    generation_id: int = wire(Int32)
    member_id: str = wire(String)
    group_instance_id: str | None = wire(String, since=3, nullable=3, default=None)
    protocol_type: str | None = wire(String, since=5, nullable=5, default=None)
    protocol_name: str | None = wire(String, since=5, nullable=5, default=None)
    assignments: list[SyncGroupRequestAssignment] = wire(Array(SyncGroupRequestAssignment))


class SyncGroupResponse(Message):
    API_KEY = 14
    VERSIONS = range(0, 6)
    FLEXIBLE_FROM = 4
    throttle_time_ms: int = wire(Int32, since=1)
    error_code: int = wire(Int16)
    protocol_type: str | None = wire(String, since=5, nullable=5, default=None)
    protocol_name: str | None = wire(String, since=5, nullable=5, default=None)
    assignment: bytes = wire(Bytes)


def error_response(request: SyncGroupRequest, code: ErrorCode, version: int) -> SyncGroupResponse:
    """The code at the top level and an empty assignment, at every version.

    As Kafka's SyncGroupRequest.getErrorResponse (protocol_type and protocol_name null).
    """
    return SyncGroupResponse(error_code=code)
