"""CreateAcls (key 30): add ACL bindings; one result per creation, in request order.

Spec: CreateAclsRequest.json / CreateAclsResponse.json. Versions 0-3, flexible from 2.

Version notes:
  v1: resource_pattern_type (KIP-290); v0 creates LITERAL bindings.
  v2: flexible.
  v3: no change on the wire (user resources, KIP-554).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages.describe_acls import LITERAL
from protocol.schema import Array, Int8, Int16, Int32, Message, String, Struct, wire


class AclCreation(Struct):
    resource_type: int = wire(Int8)
    resource_name: str = wire(String)
    resource_pattern_type: int = wire(Int8, since=1, default=LITERAL)
    principal: str = wire(String)
    host: str = wire(String)
    operation: int = wire(Int8)
    permission_type: int = wire(Int8)


class CreateAclsRequest(Message):
    API_KEY = 30
    VERSIONS = range(0, 4)
    FLEXIBLE_FROM = 2
    creations: list[AclCreation] = wire(Array(AclCreation))


class AclCreationResult(Struct):
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)


class CreateAclsResponse(Message):
    API_KEY = 30
    VERSIONS = range(0, 4)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    results: list[AclCreationResult] = wire(Array(AclCreationResult))


def error_response(request: CreateAclsRequest, code: ErrorCode, version: int) -> CreateAclsResponse:
    """The code for every creation (Kafka's CreateAclsRequest.getErrorResponse)."""
    return CreateAclsResponse(
        results=[AclCreationResult(error_code=code) for _ in request.creations]
    )
