"""CreateAcls: add bindings, each checked as Kafka's AclControlManager.validateNewAcl checks
it (INVALID_REQUEST with its message); the store is written before the answer. Without an
authorizer: SECURITY_DISABLED for each creation."""

from __future__ import annotations

import trio

from broker.context import RequestContext
from broker.security.acls import AclBinding, validate_binding
from broker.security.authz import authz
from protocol.errors import ErrorCode
from protocol.messages.create_acls import AclCreationResult, CreateAclsRequest, CreateAclsResponse


async def handle(ctx: RequestContext, request: CreateAclsRequest) -> CreateAclsResponse:
    state = authz(ctx.broker)
    if not state.enabled:
        return CreateAclsResponse(
            results=[
                AclCreationResult(
                    error_code=ErrorCode.SECURITY_DISABLED,
                    error_message="No Authorizer is configured.",
                )
                for _ in request.creations
            ]
        )
    results = []
    added = False
    for c in request.creations:
        b = AclBinding(
            c.resource_type,
            c.resource_name,
            c.resource_pattern_type,
            c.principal,
            c.host,
            c.operation,
            c.permission_type,
        )
        why = validate_binding(b)
        if why is None:
            state.store.add(b)
            added = True
            results.append(AclCreationResult(error_code=0))
        else:
            results.append(
                AclCreationResult(error_code=ErrorCode.INVALID_REQUEST, error_message=why)
            )
    if added:
        await trio.to_thread.run_sync(state.store.save)
    return CreateAclsResponse(results=results)
