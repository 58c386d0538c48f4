"""DescribeAcls (key 29): the ACLs matching a filter, grouped by resource pattern.

Spec: DescribeAclsRequest.json / DescribeAclsResponse.json. Versions 0-3, flexible from 2.

Version notes:
  v1: pattern types (KIP-290: LITERAL, PREFIXED; filters also ANY and MATCH); v0 is LITERAL.
  v2: flexible.
  v3: no change on the wire (user resources, KIP-554).
Codes (Kafka's ResourceType, PatternType, AclOperation, AclPermissionType) are in
broker.security.acls.
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.schema import Array, Int8, Int16, Int32, Message, String, Struct, wire

# PatternType.LITERAL: the pattern type of every binding and filter before v1 (all three
# ACL APIs use it).
LITERAL = 3


class DescribeAclsRequest(Message):
    API_KEY = 29
    VERSIONS = range(0, 4)
    FLEXIBLE_FROM = 2
    resource_type_filter: int = wire(Int8)
    resource_name_filter: str | None = wire(String, nullable=True, default=None)
    pattern_type_filter: int = wire(Int8, since=1, default=LITERAL)
    principal_filter: str | None = wire(String, nullable=True, default=None)
    host_filter: str | None = wire(String, nullable=True, default=None)
    operation: int = wire(Int8)
    permission_type: int = wire(Int8)


class AclDescription(Struct):
    principal: str = wire(String)
    host: str = wire(String)
    operation: int = wire(Int8)
    permission_type: int = wire(Int8)


class DescribeAclsResource(Struct):
    resource_type: int = wire(Int8)
    resource_name: str = wire(String)
    pattern_type: int = wire(Int8, since=1, default=LITERAL)
    acls: list[AclDescription] = wire(Array(AclDescription))


class DescribeAclsResponse(Message):
    API_KEY = 29
    VERSIONS = range(0, 4)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)
    resources: list[DescribeAclsResource] = wire(Array(DescribeAclsResource))


def error_response(
    request: DescribeAclsRequest, code: ErrorCode, version: int
) -> DescribeAclsResponse:
    """The code at the top level (Kafka's DescribeAclsRequest.getErrorResponse)."""
    return DescribeAclsResponse(error_code=code, resources=[])
