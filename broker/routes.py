"""ROUTES: request class -> handler. The one list of the APIs kmock speaks.

It feeds both the decoder (api key -> request class) and ApiVersions (every routed class
advertises its VERSIONS: `supported_versions()`, which the ApiVersions handler reads through
its RequestContext rather than by importing this module). An API that is not here is not
advertised, and a request for it closes the connection, as Kafka does for an unknown key.
Sorted by API key.
"""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from broker import coordinator_guard
from broker.context import RequestContext
from broker.handlers import (
    Deferred,
    Encoded,
    add_offsets_to_txn,
    add_partitions_to_txn,
    alter_configs,
    alter_partition_reassignments,
    alter_replica_log_dirs,
    alter_user_scram_credentials,
    api_versions,
    consumer_group_describe,
    consumer_group_heartbeat,
    create_acls,
    create_partitions,
    create_topics,
    delete_acls,
    delete_groups,
    delete_records,
    delete_topics,
    describe_acls,
    describe_cluster,
    describe_configs,
    describe_groups,
    describe_log_dirs,
    describe_producers,
    describe_topic_partitions,
    describe_transactions,
    describe_user_scram_credentials,
    elect_leaders,
    end_txn,
    fetch,
    find_coordinator,
    heartbeat,
    incremental_alter_configs,
    init_producer_id,
    join_group,
    leave_group,
    list_groups,
    list_offsets,
    list_partition_reassignments,
    list_transactions,
    metadata,
    offset_commit,
    offset_delete,
    offset_fetch,
    offset_for_leader_epoch,
    produce,
    sasl_authenticate,
    sasl_handshake,
    sync_group,
    txn_offset_commit,
    write_txn_markers,
)
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

ROUTES: dict[type[Message], Handler] = {
    ProduceRequest: produce.handle,  # 0
    FetchRequest: fetch.handle,  # 1
    ListOffsetsRequest: list_offsets.handle,  # 2
    MetadataRequest: metadata.handle,  # 3
    OffsetCommitRequest: offset_commit.handle,  # 8
    OffsetFetchRequest: offset_fetch.handle,  # 9
    FindCoordinatorRequest: find_coordinator.handle,  # 10
    JoinGroupRequest: join_group.handle,  # 11
    HeartbeatRequest: heartbeat.handle,  # 12
    LeaveGroupRequest: leave_group.handle,  # 13
    SyncGroupRequest: sync_group.handle,  # 14
    DescribeGroupsRequest: describe_groups.handle,  # 15
    ListGroupsRequest: list_groups.handle,  # 16
    SaslHandshakeRequest: sasl_handshake.handle,  # 17
    ApiVersionsRequest: api_versions.handle,  # 18
    CreateTopicsRequest: create_topics.handle,  # 19
    DeleteTopicsRequest: delete_topics.handle,  # 20
    DeleteRecordsRequest: delete_records.handle,  # 21
    InitProducerIdRequest: init_producer_id.handle,  # 22
    OffsetForLeaderEpochRequest: offset_for_leader_epoch.handle,  # 23
    AddPartitionsToTxnRequest: add_partitions_to_txn.handle,  # 24
    AddOffsetsToTxnRequest: add_offsets_to_txn.handle,  # 25
    EndTxnRequest: end_txn.handle,  # 26
    WriteTxnMarkersRequest: write_txn_markers.handle,  # 27
    TxnOffsetCommitRequest: txn_offset_commit.handle,  # 28
    DescribeAclsRequest: describe_acls.handle,  # 29
    CreateAclsRequest: create_acls.handle,  # 30
    DeleteAclsRequest: delete_acls.handle,  # 31
    DescribeConfigsRequest: describe_configs.handle,  # 32
    AlterConfigsRequest: alter_configs.handle,  # 33
    AlterReplicaLogDirsRequest: alter_replica_log_dirs.handle,  # 34
    DescribeLogDirsRequest: describe_log_dirs.handle,  # 35
    SaslAuthenticateRequest: sasl_authenticate.handle,  # 36
    CreatePartitionsRequest: create_partitions.handle,  # 37
    DeleteGroupsRequest: delete_groups.handle,  # 42
    ElectLeadersRequest: elect_leaders.handle,  # 43
    IncrementalAlterConfigsRequest: incremental_alter_configs.handle,  # 44
    AlterPartitionReassignmentsRequest: alter_partition_reassignments.handle,  # 45
    ListPartitionReassignmentsRequest: list_partition_reassignments.handle,  # 46
    OffsetDeleteRequest: offset_delete.handle,  # 47
    DescribeUserScramCredentialsRequest: describe_user_scram_credentials.handle,  # 50
    AlterUserScramCredentialsRequest: alter_user_scram_credentials.handle,  # 51
    DescribeClusterRequest: describe_cluster.handle,  # 60
    DescribeProducersRequest: describe_producers.handle,  # 61
    DescribeTransactionsRequest: describe_transactions.handle,  # 65
    ListTransactionsRequest: list_transactions.handle,  # 66
    ConsumerGroupHeartbeatRequest: consumer_group_heartbeat.handle,  # 68
    ConsumerGroupDescribeRequest: consumer_group_describe.handle,  # 69
    DescribeTopicPartitionsRequest: describe_topic_partitions.handle,  # 75
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


_BY_KEY: dict[int, Route] = {}


def install(routes: dict[type[Message], Handler]) -> None:
    """Build the key -> route index from ROUTES (called once at import)."""
    _BY_KEY.clear()
    for request, handler in sorted(routes.items(), key=lambda kv: kv[0].API_KEY):
        # Group and transaction APIs first check this broker coordinates their keys.
        route = _route(request, coordinator_guard.wrap(request, handler))
        assert route.api_key not in _BY_KEY, f"API key {route.api_key} routed twice"
        _BY_KEY[route.api_key] = route


def route_for(api_key: int) -> Route | None:
    return _BY_KEY.get(api_key)


def all_routes() -> list[Route]:
    return list(_BY_KEY.values())


def supported_versions() -> list[ApiVersion]:
    """ApiVersions' list: every routed API with its range of versions, by key."""
    return [
        ApiVersion(
            api_key=r.api_key,
            min_version=r.request.VERSIONS.start,
            max_version=r.request.VERSIONS.stop - 1,
        )
        for r in all_routes()
    ]


install(ROUTES)
