"""DeleteAcls: remove the bindings matching each filter, in order, and report them; the
store is written before the answer. Without an authorizer: SECURITY_DISABLED per filter."""

from __future__ import annotations

import trio

from broker.context import RequestContext
from broker.security.acls import AclFilter
from broker.security.authz import authz
from protocol.errors import ErrorCode
from protocol.messages.delete_acls import (
    DeleteAclsFilterResult,
    DeleteAclsMatchingAcl,
    DeleteAclsRequest,
    DeleteAclsResponse,
)


async def handle(ctx: RequestContext, request: DeleteAclsRequest) -> DeleteAclsResponse:
    state = authz(ctx.broker)
    if not state.enabled:
        return DeleteAclsResponse(
            filter_results=[
                DeleteAclsFilterResult(
                    error_code=ErrorCode.SECURITY_DISABLED,
                    error_message="No Authorizer is configured.",
                    matching_acls=[],
                )
                for _ in request.filters
            ]
        )
    results = []
    removed_any = False
    for rf in request.filters:
        f = AclFilter(
            rf.resource_type_filter,
            rf.resource_name_filter,
            rf.pattern_type_filter,
            rf.principal_filter,
            rf.host_filter,
            rf.operation,
            rf.permission_type,
        )
        if (why := f.invalid()) is not None:
            results.append(
                DeleteAclsFilterResult(
                    error_code=ErrorCode.INVALID_REQUEST, error_message=why, matching_acls=[]
                )
            )
            continue
        removed = state.store.remove(f)
        removed_any = removed_any or bool(removed)
        results.append(
            DeleteAclsFilterResult(
                error_code=0,
                matching_acls=[
                    DeleteAclsMatchingAcl(
                        error_code=0,
                        resource_type=b.resource_type,
                        resource_name=b.resource_name,
                        pattern_type=b.pattern_type,
                        principal=b.principal,
                        host=b.host,
                        operation=b.operation,
                        permission_type=b.permission_type,
                    )
                    for b in removed
                ],
            )
        )
    if removed_any:
        await trio.to_thread.run_sync(state.store.save)
    return DeleteAclsResponse(filter_results=results)
