"""ROUTES: request class -> handler. The one list of the APIs kmock speaks.

It feeds both the decoder (api key -> request class) and ApiVersions (every routed class
advertises its VERSIONS: `supported_versions()`, which the ApiVersions handler reads through
its RequestContext rather than by importing this module). An API that is not here is not
advertised, and a request for it closes the connection, as Kafka does for an unknown key.
Sorted by API key.

A row names its handler's module in broker.handlers (`ProduceRequest: "produce"`), which
is imported on the API's first request, not at start: the handlers and what only they use
(topic config validation, the cluster controls, old message formats) are a quarter of the
modules `kmock serve` would otherwise import before it binds, and a client calls a handful
of APIs. The first call puts the imported handler in the route itself, so the
request path is the same as with an imported one.
"""

from __future__ import annotations

import dataclasses
import importlib
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from broker import coordinator_guard
from broker.context import RequestContext
from broker.handlers import Deferred, Encoded
from protocol.errors import ErrorCode
from protocol.messages import response_class
from protocol.messages.add_offsets_to_txn import AddOffsetsToTxnRequest
from protocol.messages.add_partitions_to_txn import AddPartitionsToTxnRequest
from protocol.messages.alter_configs import AlterConfigsRequest
from protocol.messages.alter_partition_reassignments import AlterPartitionReassignmentsRequest
from protocol.messages.alter_replica_log_dirs import AlterReplicaLogDirsRequest
from protocol.messages.alter_user_scram_credentials import AlterUserScramCredentialsRequest
from protocol.messages.api_versions import ApiVersion, ApiVersionsRequest
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.messages.create_acls import CreateAclsRequest
from protocol.messages.create_partitions import CreatePartitionsRequest
from protocol.messages.create_topics import CreateTopicsRequest
from protocol.messages.delete_acls import DeleteAclsRequest
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.delete_records import DeleteRecordsRequest
from protocol.messages.delete_topics import DeleteTopicsRequest
from protocol.messages.describe_acls import DescribeAclsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.describe_configs import DescribeConfigsRequest
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.describe_log_dirs import DescribeLogDirsRequest
from protocol.messages.describe_producers import DescribeProducersRequest
from protocol.messages.describe_topic_partitions import DescribeTopicPartitionsRequest
from protocol.messages.describe_transactions import DescribeTransactionsRequest
from protocol.messages.describe_user_scram_credentials import DescribeUserScramCredentialsRequest
from protocol.messages.elect_leaders import ElectLeadersRequest
from protocol.messages.end_txn import EndTxnRequest
from protocol.messages.fetch import FetchRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from protocol.messages.init_producer_id import InitProducerIdRequest
from protocol.messages.join_group import JoinGroupRequest
from protocol.messages.leave_group import LeaveGroupRequest
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.list_offsets import ListOffsetsRequest
from protocol.messages.list_partition_reassignments import ListPartitionReassignmentsRequest
from protocol.messages.list_transactions import ListTransactionsRequest
from protocol.messages.metadata import MetadataRequest
from protocol.messages.offset_commit import OffsetCommitRequest
from protocol.messages.offset_delete import OffsetDeleteRequest
from protocol.messages.offset_fetch import OffsetFetchRequest
from protocol.messages.offset_for_leader_epoch import OffsetForLeaderEpochRequest
from protocol.messages.produce import ProduceRequest
from protocol.messages.sasl_authenticate import SaslAuthenticateRequest
from protocol.messages.sasl_handshake import SaslHandshakeRequest
from protocol.messages.sync_group import SyncGroupRequest
from protocol.messages.txn_offset_commit import TxnOffsetCommitRequest
from protocol.messages.write_txn_markers import WriteTxnMarkersRequest
from protocol.schema import Message

# `async def handle(ctx, request) -> response`: the response, a Deferred one, an Encoded one
# (kept with its body, broker.handlers), or None (no response: Produce with acks=0). The
# request is typed per handler (ProduceRequest, ...); here it is Any, because one table holds
# every API.
Handler = Callable[[RequestContext, Any], Awaitable[Message | Deferred | Encoded | None]]

ROUTES: dict[type[Message], str] = {
    ProduceRequest: "produce",  # 0
    FetchRequest: "fetch",  # 1
    ListOffsetsRequest: "list_offsets",  # 2
    MetadataRequest: "metadata",  # 3
    OffsetCommitRequest: "offset_commit",  # 8
    OffsetFetchRequest: "offset_fetch",  # 9
    FindCoordinatorRequest: "find_coordinator",  # 10
    JoinGroupRequest: "join_group",  # 11
    HeartbeatRequest: "heartbeat",  # 12
    LeaveGroupRequest: "leave_group",  # 13
    SyncGroupRequest: "sync_group",  # 14
    DescribeGroupsRequest: "describe_groups",  # 15
    ListGroupsRequest: "list_groups",  # 16
    SaslHandshakeRequest: "sasl_handshake",  # 17
    ApiVersionsRequest: "api_versions",  # 18
    CreateTopicsRequest: "create_topics",  # 19
    DeleteTopicsRequest: "delete_topics",  # 20
    DeleteRecordsRequest: "delete_records",  # 21
    InitProducerIdRequest: "init_producer_id",  # 22
    OffsetForLeaderEpochRequest: "offset_for_leader_epoch",  # 23
    AddPartitionsToTxnRequest: "add_partitions_to_txn",  # 24
    AddOffsetsToTxnRequest: "add_offsets_to_txn",  # 25
    EndTxnRequest: "end_txn",  # 26
    WriteTxnMarkersRequest: "write_txn_markers",  # 27
    TxnOffsetCommitRequest: "txn_offset_commit",  # 28
    DescribeAclsRequest: "describe_acls",  # 29
    CreateAclsRequest: "create_acls",  # 30
    DeleteAclsRequest: "delete_acls",  # 31
    DescribeConfigsRequest: "describe_configs",  # 32
    AlterConfigsRequest: "alter_configs",  # 33
    AlterReplicaLogDirsRequest: "alter_replica_log_dirs",  # 34
    DescribeLogDirsRequest: "describe_log_dirs",  # 35
    SaslAuthenticateRequest: "sasl_authenticate",  # 36
    CreatePartitionsRequest: "create_partitions",  # 37
    DeleteGroupsRequest: "delete_groups",  # 42
    ElectLeadersRequest: "elect_leaders",  # 43
    IncrementalAlterConfigsRequest: "incremental_alter_configs",  # 44
    AlterPartitionReassignmentsRequest: "alter_partition_reassignments",  # 45
    ListPartitionReassignmentsRequest: "list_partition_reassignments",  # 46
    OffsetDeleteRequest: "offset_delete",  # 47
    DescribeUserScramCredentialsRequest: "describe_user_scram_credentials",  # 50
    AlterUserScramCredentialsRequest: "alter_user_scram_credentials",  # 51
    DescribeClusterRequest: "describe_cluster",  # 60
    DescribeProducersRequest: "describe_producers",  # 61
    DescribeTransactionsRequest: "describe_transactions",  # 65
    ListTransactionsRequest: "list_transactions",  # 66
    ConsumerGroupHeartbeatRequest: "consumer_group_heartbeat",  # 68
    ConsumerGroupDescribeRequest: "consumer_group_describe",  # 69
    DescribeTopicPartitionsRequest: "describe_topic_partitions",  # 75
}


@dataclass(frozen=True, slots=True)
class Route:
    api_key: int
    name: str
    request: type[Message]
    response: type[Message]
    handler: Handler
    error_response: Callable[[Any, ErrorCode, int], Message]


def _route(request: type[Message], handler: Handler) -> Route:
    module = sys.modules[request.__module__]
    stem = request.__name__.removesuffix("Request")
    response = response_class(request)
    assert response.VERSIONS == request.VERSIONS, f"{stem}: request/response versions differ"
    return Route(request.API_KEY, stem, request, response, handler, module.error_response)


class _Unloaded:
    """A route's handler until its first call: imports `broker.handlers.<module>`, puts
    its `handle` in the route (behind the coordinator check, as `install` does), and runs
    it. Calls through a Route read before that (ctx.routes, the journal) land here and are
    passed on."""

    __slots__ = ("handle", "module", "request")

    def __init__(self, request: type[Message], module: str) -> None:
        self.request = request
        self.module = module
        self.handle: Handler | None = None

    def __call__(self, ctx: RequestContext, body: Any) -> Awaitable[Any]:
        handle = self.handle
        if handle is None:
            handle = self.handle = load(self.request, self.module)
        return handle(ctx, body)


def load(request: type[Message], module: str) -> Handler:
    """Import `broker.handlers.<module>` and route `request` to its `handle`; returns the
    handler as routed (wrapped by broker.coordinator_guard for group and transaction APIs):
    once loaded, the same handler every time."""
    route = _BY_KEY.get(request.API_KEY)
    if route is not None and not isinstance(route.handler, _Unloaded):
        return route.handler
    handle = importlib.import_module(f"broker.handlers.{module}").handle
    handler: Handler = coordinator_guard.wrap(request, handle)
    if route is not None:
        _BY_KEY[request.API_KEY] = dataclasses.replace(route, handler=handler)
    return handler


_BY_KEY: dict[int, Route] = {}
_SUPPORTED: list[ApiVersion] = []


def install(routes: dict[type[Message], str]) -> None:
    """Build the key -> route index from ROUTES (called once at import); every handler is
    still to be imported."""
    _BY_KEY.clear()
    for request, module in sorted(routes.items(), key=lambda kv: kv[0].API_KEY):
        route = _route(request, _Unloaded(request, module))
        assert route.api_key not in _BY_KEY, f"API key {route.api_key} routed twice"
        _BY_KEY[route.api_key] = route
    global _SUPPORTED
    _SUPPORTED = [
        ApiVersion(
            api_key=r.api_key,
            min_version=r.request.VERSIONS.start,
            max_version=r.request.VERSIONS.stop - 1,
        )
        for r in _BY_KEY.values()
    ]


def route_for(api_key: int) -> Route | None:
    return _BY_KEY.get(api_key)


def all_routes() -> list[Route]:
    return list(_BY_KEY.values())


def supported_versions() -> list[ApiVersion]:
    """ApiVersions' list: every routed API with its range of versions, by key. The same
    list until the table is installed again (the ApiVersions handler keeps its answers
    while it is): not to be changed."""
    return _SUPPORTED


install(ROUTES)
