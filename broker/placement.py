"""Replica placement: which brokers hold each partition, and which of them is preferred.

Kafka's rack-unaware assignment (AdminUtils.assignReplicasToBrokersRackUnaware, which
the KRaft controller's StripedReplicaPlacer reproduces without racks): the first replica
of partition p is broker (p + startIndex) % N; the others follow it at a shift that grows
by one each time the partitions wrap around the brokers, so that the followers of one
broker's partitions spread over the others:

    replicaIndex(first, shift, j) = (first + 1 + (shift + j) % (N - 1)) % N

Kafka draws startIndex and the initial shift at random per topic. kmock derives both from
the topic's name (CRC-32), so that a placement is the same on every run and in every test,
and still differs from topic to topic (so __consumer_offsets and an ordinary topic do not
both start at broker 1). Partitions added later (CreatePartitions) continue the same
sequence. Pure functions, no state.
"""

from __future__ import annotations

import zlib

from protocol.errors import ErrorCode, KafkaError

__all__ = ["check_replication_factor", "preferred_replica", "replica_assignment"]


def _start(topic: str, n: int) -> tuple[int, int]:
    h = zlib.crc32(topic.encode())
    return h % n, (h >> 16) % n


def replica_assignment(
    topic: str, partition: int, replication_factor: int, brokers: list[int]
) -> list[int]:
    """The replicas of `partition` of `topic`, preferred (first) replica first."""
    n = len(brokers)
    start, shift = _start(topic, n)
    first = (partition + start) % n
    replicas = [brokers[first]]
    shift += partition // n
    for j in range(replication_factor - 1):
        replicas.append(brokers[(first + 1 + (shift + j) % (n - 1)) % n])
    return replicas


def preferred_replica(topic: str, partition: int, brokers: list[int]) -> int:
    """The first replica of the partition, whatever the replication factor."""
    return replica_assignment(topic, partition, 1, brokers)[0]


def check_replication_factor(replication_factor: int, brokers: int) -> None:
    """Kafka's answer to more replicas than brokers (ReplicationControlManager
    .createTopic -> InvalidReplicationFactorException)."""
    if replication_factor > brokers:
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            f"Unable to replicate the partition {replication_factor} time(s): The target "
            f"replication factor of {replication_factor} cannot be reached because only "
            f"{brokers} broker(s) are registered.",
        )
