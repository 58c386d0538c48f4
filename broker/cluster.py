"""This broker as a cluster of one: what Metadata and DescribeCluster report of it, and the
replica assignment check CreateTopics and CreatePartitions share.

kmock has no authorizer, so a client that asks for its authorized operations is allowed
every one; one that does not ask gets Kafka's "not requested" value.
"""

from __future__ import annotations

from protocol.errors import ErrorCode, KafkaError

# What a Kafka 4.x broker without an authorizer reports: every operation the resource type
# supports (AclEntry.supportedOperations; AclOperation codes: READ 3, WRITE 4, CREATE 5,
# DELETE 6, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9, DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11,
# IDEMPOTENT_WRITE 12), as a bit field (AuthHelper.authorizedOperations).
ALL_TOPIC_OPERATIONS = sum(1 << b for b in (3, 4, 5, 6, 7, 8, 10, 11))
ALL_CLUSTER_OPERATIONS = sum(1 << b for b in (5, 7, 8, 9, 10, 11, 12))
NOT_REQUESTED = -(2**31)


def check_replicas(broker_ids: list[int], node_id: int) -> None:
    """Kafka's validateManualPartitionAssignment, for a cluster of one broker."""
    if not broker_ids:
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes an empty replica list.",
        )
    previous = None
    for broker_id in sorted(broker_ids):
        if broker_id != node_id:
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
