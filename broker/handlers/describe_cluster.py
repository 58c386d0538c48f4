"""DescribeCluster: this broker, the cluster id and the controller (KIP-700).

Every running broker of the process is listed (broker.cluster_state), with the address
advertised for the listener the client came through and no rack; the first running one is
named the controller.
cluster_authorized_operations is Kafka's "not requested" value unless asked for, and then
every cluster operation, as Kafka reports without an authorizer (with one, the ACLs decide:
broker.security.enforce). v1 (KIP-919): a request for the
CONTROLLER endpoint type reaches a broker endpoint, so it is answered
MISMATCHED_ENDPOINT_TYPE (and an unknown endpoint type UNSUPPORTED_ENDPOINT_TYPE), with
Kafka's messages; v0 answers both INVALID_REQUEST.
"""

from __future__ import annotations

from broker.cluster import ALL_CLUSTER_OPERATIONS, NOT_REQUESTED, controller_id, node_endpoints
from broker.context import RequestContext
from protocol.errors import ErrorCode
from protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
)

# Kafka's EndpointType
ENDPOINT_TYPES = {1: "BROKER", 2: "CONTROLLER"}
BROKER_ENDPOINT = 1


def _refusal(ctx: RequestContext, code: ErrorCode, message: str) -> DescribeClusterResponse:
    if ctx.api_version == 0:
        code = ErrorCode.INVALID_REQUEST
    return DescribeClusterResponse(error_code=code, error_message=message)


async def handle(ctx: RequestContext, request: DescribeClusterRequest) -> DescribeClusterResponse:
    wanted = ENDPOINT_TYPES.get(request.endpoint_type)
    if wanted is None:
        return _refusal(
            ctx,
            ErrorCode.UNSUPPORTED_ENDPOINT_TYPE,
            f"Unsupported endpoint type {request.endpoint_type}",
        )
    if request.endpoint_type != BROKER_ENDPOINT:
        return _refusal(
            ctx,
            ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            "The request was sent to an endpoint of type BROKER, but we wanted "
            f"an endpoint of type {wanted}",
        )
    broker = ctx.broker
    # The address advertised for the client's listener, as Metadata gives it; a broker is
    # not listed when that listener is not advertised (KafkaApis.handleDescribeCluster:
    # metadataCache.getAliveBrokerNodes(listenerName)).
    return DescribeClusterResponse(
        error_code=ErrorCode.NONE,
        endpoint_type=BROKER_ENDPOINT,
        cluster_id=broker.cluster_id,
        controller_id=controller_id(broker),
        brokers=[
            DescribeClusterBroker(broker_id=node, host=host, port=port, rack=None)
            for node, host, port in node_endpoints(ctx)
        ],
        cluster_authorized_operations=(
            ALL_CLUSTER_OPERATIONS
            if request.include_cluster_authorized_operations
            else NOT_REQUESTED
        ),
    )
