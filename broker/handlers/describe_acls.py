"""DescribeAcls: the bindings matching the filter, grouped by resource pattern (Kafka's
AclControlManager / StandardAuthorizer.acls). Without an authorizer: SECURITY_DISABLED, as
Kafka answers ("No Authorizer is configured.")."""

from __future__ import annotations

from broker.context import RequestContext
from broker.security.acls import AclFilter
from broker.security.authz import authz
from protocol.errors import ErrorCode
from protocol.messages.describe_acls import (
    AclDescription,
    DescribeAclsRequest,
    DescribeAclsResource,
    DescribeAclsResponse,
)


async def handle(ctx: RequestContext, request: DescribeAclsRequest) -> DescribeAclsResponse:
    state = authz(ctx.broker)
    if not state.enabled:
        return DescribeAclsResponse(
            error_code=ErrorCode.SECURITY_DISABLED,
            error_message="No Authorizer is configured.",
            resources=[],
        )
    f = AclFilter(
        request.resource_type_filter,
        request.resource_name_filter,
        request.pattern_type_filter,
        request.principal_filter,
        request.host_filter,
        request.operation,
        request.permission_type,
    )
    if (why := f.invalid()) is not None:
        return DescribeAclsResponse(
            error_code=ErrorCode.INVALID_REQUEST, error_message=why, resources=[]
        )
    grouped: dict[tuple[int, str, int], list[AclDescription]] = {}
    for b in state.store.bindings:
        if f.matches(b):
            grouped.setdefault((b.resource_type, b.resource_name, b.pattern_type), []).append(
                AclDescription(
                    principal=b.principal,
                    host=b.host,
                    operation=b.operation,
                    permission_type=b.permission_type,
                )
            )
    return DescribeAclsResponse(
        error_code=0,
        resources=[
            DescribeAclsResource(resource_type=t, resource_name=n, pattern_type=p, acls=acls)
            for (t, n, p), acls in grouped.items()
        ],
    )
