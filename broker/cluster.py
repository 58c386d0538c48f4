"""The cluster as requests see it: what Metadata and DescribeCluster report, the replica
assignment check CreateTopics and CreatePartitions share, and the leadership check of the
partition requests (broker.cluster_state keeps the state itself).

kmock has no authorizer, so a client that asks for its authorized operations is allowed
every one; one that does not ask gets Kafka's "not requested" value.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from protocol.errors import ErrorCode, KafkaError
from protocol.messages import AUTHORIZED_OPERATIONS_OMITTED

if TYPE_CHECKING:
    from broker.broker import Broker
    from broker.context import RequestContext
    from broker.topics import Partition

# What a Kafka 4.x broker without an authorizer reports: every operation the resource type
# supports (AclEntry.supportedOperations; AclOperation codes: READ 3, WRITE 4, CREATE 5,
# DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
# IDEMPOTENT_WRITE 12), as a bit field (AuthHelper.authorizedOperations).
ALL_TOPIC_OPERATIONS = sum(1 << b for b in (3, 4, 5, 6, 7, 8, 10, 11))
ALL_CLUSTER_OPERATIONS = sum(1 << b for b in (5, 7, 8, 9, 10, 11, 12))
# An authorized-operations field's value when the client did not ask for it.
NOT_REQUESTED = AUTHORIZED_OPERATIONS_OMITTED


def check_replicas(broker_ids: list[int], node_ids: int | list[int]) -> None:
    """Kafka's validateManualPartitionAssignment, for the brokers `node_ids` (or one)."""
    known = [node_ids] if isinstance(node_ids, int) else node_ids
    if not broker_ids:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id not in known:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes broker {broker_id}, "
                "but no such broker is registered.",
            )
        if broker_id == previous:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"The manual partition assignment includes the broker {broker_id} more than once.",
            )
        previous = broker_id


def serving_error(ctx: RequestContext, p: Partition, current_leader_epoch: int = -1) -> ErrorCode:
    """What a Produce, Fetch, ListOffsets, OffsetForLeaderEpoch or DeleteRecords for
    partition `p` meets at the broker the request came to (Kafka's
    ReplicaManager.getPartitionOrException, then Partition.localLogWithEpochOrThrow: the
    client's leader epoch is checked before leadership): NOT_LEADER_OR_FOLLOWER at a broker
    that is not its leader (offline partitions included), UNKNOWN_LEADER_EPOCH for an epoch
    newer than ours, FENCED_LEADER_EPOCH for an older one (-1: not given)."""
    node = ctx.node_id
    if node not in p.replicas:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if current_leader_epoch > p.leader_epoch:
        return ErrorCode.UNKNOWN_LEADER_EPOCH
    if 0 <= current_leader_epoch < p.leader_epoch:
        return ErrorCode.FENCED_LEADER_EPOCH
    if p.leader != node:
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    return ErrorCode.NONE


def node_endpoints(ctx: RequestContext) -> list[tuple[int, str, int]]:
    """(id, host, port) of every running broker, at the address advertised for the
    client's listener (Kafka's MetadataCache.getAliveBrokerNodes(listenerName))."""
    out = []
    for node in ctx.broker.cluster.node_ids:
        address = ctx.broker.advertised_address(ctx.listener_name, node)
        if address is not None:
            out.append((node, *address))
    return out


def leader_endpoints(ctx: RequestContext, leaders: set[int]) -> list[tuple[int, str, int]]:
    """The endpoints of the brokers in `leaders`, for the node_endpoints of a Produce
    (v10+) or Fetch (v16+) answer that names a new leader (KIP-951)."""
    return [e for e in node_endpoints(ctx) if e[0] in leaders]


def controller_id(broker: Broker) -> int:
    """The controller Metadata and DescribeCluster name: the first running broker (KRaft
    clients are given a live broker to send controller requests to, which forwards them)."""
    live = [b for b in broker.cluster.node_ids if b in broker.cluster.live]
    return live[0] if live else -1
