"""FindCoordinator: kmock is the coordinator of every group (it leads every partition of
__consumer_offsets, which the first group lookup creates, as in Kafka). Transactions are
not supported, so a transaction coordinator lookup (key_type 1) is answered with
COORDINATOR_NOT_AVAILABLE and an explanation.
"""

from __future__ import annotations

from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
)

GROUP, TRANSACTION = 0, 1


def _lookup(ctx: RequestContext, key: str, key_type: int) -> Coordinator:
    if key_type != GROUP:
        return Coordinator(
            key=key,
            node_id=-1,
            host="",
            port=-1,
            error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
            error_message="kmock does not support transactions",
        )
    ctx.broker.coordinator.offsets_topic()  # Kafka creates it on the first group lookup
    # The address advertised for the client's listener (KafkaApis.getCoordinator:
    # metadataCache.getAliveBrokerNode(id, request.context.listenerName)); none when that
    # listener is not advertised, which Kafka answers COORDINATOR_NOT_AVAILABLE.
    address = ctx.broker.advertised_address(ctx.listener_name)
    if address is None:
        return Coordinator(
            key=key,
            node_id=-1,
            host="",
            port=-1,
            error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
            error_message=None,
        )
    host, port = address
    return Coordinator(
        key=key,
        node_id=ctx.broker.node_id,
        host=host,
        port=port,
        error_code=ErrorCode.NONE,
        error_message=None,
    )


async def handle(ctx: RequestContext, request: FindCoordinatorRequest) -> FindCoordinatorResponse:
    if ctx.api_version >= 4:
        return FindCoordinatorResponse(
            coordinators=[_lookup(ctx, k, request.key_type) for k in request.coordinator_keys]
        )
    c = _lookup(ctx, request.key, request.key_type)
    return FindCoordinatorResponse(
        error_code=c.error_code,
        error_message=c.error_message,
        node_id=c.node_id,
        host=c.host,
        port=c.port,
    )
