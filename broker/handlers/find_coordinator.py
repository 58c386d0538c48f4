"""FindCoordinator: the coordinator of a group or transactional id is the leader of its
partition of __consumer_offsets or __transaction_state (which the first lookup of each kind
creates, as in Kafka), so with several brokers different keys get different brokers
(broker.cluster_state); a partition without a leader is COORDINATOR_NOT_AVAILABLE. Other
key types (share groups, key_type 2) are answered with COORDINATOR_NOT_AVAILABLE and an
explanation; an empty transactional id is INVALID_REQUEST, as Kafka answers it.
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


def _error(key: str, code: ErrorCode, message: str | None) -> Coordinator:
    return Coordinator(
        key=key, node_id=-1, host="", port=-1, error_code=code, error_message=message
    )


def _lookup(ctx: RequestContext, key: str, key_type: int) -> Coordinator:
    if key_type == GROUP:
        topic = ctx.broker.coordinator.offsets_topic()  # Kafka creates it on the first lookup
        p = topic.partitions[ctx.broker.coordinator.coordinator.partition_for(key)]
    elif key_type == TRANSACTION:
        if not key:
            return _error(key, ErrorCode.INVALID_REQUEST, "empty transactional id")
        topic = ctx.broker.transactions.state_topic()  # and this one on the first lookup
        p = topic.partitions[ctx.broker.transactions.coordinator.partition_for(key)]
    else:
        return _error(
            key, ErrorCode.COORDINATOR_NOT_AVAILABLE, f"kmock has no coordinator of type {key_type}"
        )
    # The address advertised for the client's listener (KafkaApis.getCoordinator:
    # metadataCache.getAliveBrokerNode(id, request.context.listenerName)); none when that
    # listener is not advertised, which Kafka answers COORDINATOR_NOT_AVAILABLE.
    address = None if p.leader < 0 else ctx.broker.advertised_address(ctx.listener_name, p.leader)
    if address is None:
        return _error(key, ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
    host, port = address
    return Coordinator(
        key=key,
        node_id=p.leader,
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
