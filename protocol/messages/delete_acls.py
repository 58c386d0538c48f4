"""DeleteAcls (key 31): remove the ACLs matching each filter; per filter, what was removed.

Spec: DeleteAclsRequest.json / DeleteAclsResponse.json. Versions 0-3, flexible from 2.

Version notes:
  v1: pattern types (KIP-290); v0 filters match LITERAL bindings.
  v2: flexible.
  v3: no change on the wire (user resources, KIP-554).
"""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages.describe_acls import LITERAL
from protocol.schema import Array, Int8, Int16, Int32, Message, String, Struct, wire


class DeleteAclsFilter(Struct):
    resource_type_filter: int = wire(Int8)
    resource_name_filter: str | None = wire(String, nullable=True, default=None)
    pattern_type_filter: int = wire(Int8, since=1, default=LITERAL)
    principal_filter: str | None = wire(String, nullable=True, default=None)
    host_filter: str | None = wire(String, nullable=True, default=None)
    operation: int = wire(Int8)
    permission_type: int = wire(Int8)


class DeleteAclsRequest(Message):
    API_KEY = 31
    VERSIONS = range(0, 4)
    FLEXIBLE_FROM = 2
    filters: list[DeleteAclsFilter] = wire(Array(DeleteAclsFilter))


class DeleteAclsMatchingAcl(Struct):
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)
    resource_type: int = wire(Int8)
    resource_name: str = wire(String)
    pattern_type: int = wire(Int8, since=1, default=LITERAL)
    principal: str = wire(String)
    host: str = wire(String)
    operation: int = wire(Int8)
    permission_type: int = wire(Int8)


class DeleteAclsFilterResult(Struct):
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=True, default=None)
    matching_acls: list[DeleteAclsMatchingAcl] = wire(Array(DeleteAclsMatchingAcl))


class DeleteAclsResponse(Message):
    API_KEY = 31
    VERSIONS = range(0, 4)
    FLEXIBLE_FROM = 2
    throttle_time_ms: int = wire(Int32)
    filter_results: list[DeleteAclsFilterResult] = wire(Array(DeleteAclsFilterResult))


def error_response(request: DeleteAclsRequest, code: ErrorCode, version: int) -> DeleteAclsResponse:
    """The code for every filter (Kafka's DeleteAclsRequest.getErrorResponse)."""
    return DeleteAclsResponse(
        filter_results=[
            DeleteAclsFilterResult(error_code=code, matching_acls=[]) for _ in request.filters
        ]
    )
