"""FindCoordinator (key 10): which broker coordinates a group (or a transactional id).

Spec: FindCoordinatorRequest.json / FindCoordinatorResponse.json. Versions 0-6, flexible from 3.

Version notes:
  v1: key_type (0 group, 1 transaction); throttle_time_ms and error_message in the response.
  v2: no change on the wire.
  v3: flexible.
  v4: batched: coordinator_keys in, one Coordinator per key out; key and the top-level
      error_code/error_message/node_id/host/port go (KIP-699).
  v5: no change on the wire (TRANSACTION_ABORTABLE may be returned, KIP-890).
  v6: no change on the wire (key_type 2 = share group, KIP-932).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int8, Int16, Int32, Message, String, Struct, wire


class FindCoordinatorRequest(Message):
    API_KEY = 10
    VERSIONS = range(0, 7)
    FLEXIBLE_FROM = 3
    key: str = wire(String, until=3)
    key_type: int = wire(Int8, since=1, default=0)
    coordinator_keys: list[str] = wire(Array(String), since=4)


class Coordinator(Struct):
    key: str = wire(String, since=4)
    node_id: int = wire(Int32, since=4)
    host: str = wire(String, since=4)
    port: int = wire(Int32, since=4)
    error_code: int = wire(Int16, since=4)
    error_message: str | None = wire(String, since=4, nullable=4)


class FindCoordinatorResponse(Message):
    API_KEY = 10
    VERSIONS = range(0, 7)
    FLEXIBLE_FROM = 3
    throttle_time_ms: int = wire(Int32, since=1)
    error_code: int = wire(Int16, until=3)
    error_message: str | None = wire(String, since=1, until=3, nullable=1)
    node_id: int = wire(Int32, until=3)
    host: str = wire(String, until=3)
    port: int = wire(Int32, until=3)
    coordinators: list[Coordinator] = wire(Array(Coordinator), since=4)


def error_response(
    request: FindCoordinatorRequest, code: ErrorCode, version: int
) -> FindCoordinatorResponse:
    """The code at the top level (v0-3) or on one Coordinator per requested key (v4+).

    As Kafka's FindCoordinatorRequest.getErrorResponse (FindCoordinatorResponse.
    prepareOldResponse below v4, prepareErrorResponse from v4). Node fields are Kafka's
    Node.noNode() (-1, "", -1). Kafka also sets error_message to the code's English
    description; we have no such table and leave it null.
    """
    if version < 4:
        return FindCoordinatorResponse(
            error_code=code, error_message=None, node_id=-1, host="", port=-1
        )
    return FindCoordinatorResponse(
        coordinators=[
            Coordinator(key=key, node_id=-1, host="", port=-1, error_code=code, error_message=None)
            for key in request.coordinator_keys
        ],
    )
