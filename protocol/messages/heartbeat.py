"""Heartbeat (key 12): a member tells the coordinator it is alive, and learns of rebalances.

Spec: HeartbeatRequest.json / HeartbeatResponse.json. Versions 0-4, flexible from 4.

Version notes:
  v1: throttle_time_ms in the response.
  v2: no change on the wire.
  v3: group_instance_id (KIP-345).
  v4: flexible.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Int16, Int32, Message, String, wire


class HeartbeatRequest(Message):
    API_KEY = 12
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 4
    group_id: str = wire(String)
    generation_id: int = wire(Int32)
    member_id: str = wire(String)
    group_instance_id: str | None = wire(String, since=3, nullable=3, default=None)


class HeartbeatResponse(Message):
    API_KEY = 12
    VERSIONS = range(0, 5)
    FLEXIBLE_FROM = 4
    throttle_time_ms: int = wire(Int32, since=1)
    error_code: int = wire(Int16)


def error_response(request: HeartbeatRequest, code: ErrorCode, version: int) -> HeartbeatResponse:
    """The code at the top level, at every version (Kafka's HeartbeatRequest.getErrorResponse)."""
    return HeartbeatResponse(error_code=code)
