"""Several brokers: replicas chosen by the client. CreatePartitions with a manual
assignment, AlterPartitionReassignments and ListPartitionReassignments, through real
sockets to a 3-broker process (broker.handlers.create_partitions,
broker.handlers.alter_partition_reassignments, broker.cluster_state.reassign)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from protocol.errors import ErrorCode
from protocol.messages.alter_partition_reassignments import (
    AlterPartitionReassignmentsRequest,
    ReassignablePartition,
    ReassignableTopic,
)
from protocol.messages.create_partitions import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsTopic,
)
from protocol.messages.list_partition_reassignments import ListPartitionReassignmentsRequest
from tests.broker.test_cluster import CONTROLLED, THREE, at, http, metadata
from tests.reliability.inproc import produce, running


def grow(name: str, count: int, *assignments: list[int]) -> CreatePartitionsRequest:
    return CreatePartitionsRequest(
        topics=[
            CreatePartitionsTopic(
                name=name,
                count=count,
                assignments=[CreatePartitionsAssignment(broker_ids=a) for a in assignments],
            )
        ],
        timeout_ms=5000,
        validate_only=False,
    )


async def grown(client: Any, name: str, count: int, *assignments: list[int]) -> Any:
    [result] = (await client.call(grow(name, count, *assignments), 3)).results
    return result


async def test_create_partitions_uses_the_manual_assignment(tmp_path: Path) -> None:
    async with running(tmp_path, **{**CONTROLLED, "default.replication.factor": 2}) as broker:
        client = await at(broker, 1)
        await metadata(client, "orders")
        result = await grown(client, "orders", 3, [3, 1], [2, 3])
        assert result.error_code == ErrorCode.NONE
        _, p1, p2 = broker.topics.get("orders").partitions
        assert (p1.replicas, p1.isr, p1.leader) == ([3, 1], [3, 1], 3)
        assert (p2.replicas, p2.isr, p2.leader) == ([2, 3], [2, 3], 2)
        assert (tmp_path / "broker-3" / "orders-1").is_dir()
        assert (tmp_path / "broker-2" / "orders-2").is_dir()
        # Every broker reports it; the chosen leader takes the writes.
        [topic] = (await metadata(await at(broker, 2), "orders")).topics
        assert [(p.leader_id, p.replica_nodes) for p in topic.partitions[1:]] == [
            (3, [3, 1]),
            (2, [2, 3]),
        ]
        assert (await produce(await at(broker, 1), "orders", b"x", partition=1))[0] == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
        assert await produce(await at(broker, 3), "orders", b"x", partition=1) == (
            ErrorCode.NONE,
            0,
        )
        # Kafka's checks: as many replicas as the topic has, at least one running.
        result = await grown(client, "orders", 4, [1])
        assert result.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert result.error_message == (
            "The manual partition assignment includes a partition with 1 replica(s), but "
            "this is not consistent with previous partitions, which have 2 replica(s)."
        )
        assert (await http(broker, "POST", "/v1/brokers/2/stop"))[0] == 200
        assert (await http(broker, "POST", "/v1/brokers/3/stop"))[0] == 200
        result = await grown(client, "orders", 4, [2, 3])
        assert result.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert "partition 3 are fenced" in result.error_message
        # One running replica is enough: it leads, the other joins when it starts.
        assert (await grown(client, "orders", 4, [2, 1])).error_code == ErrorCode.NONE
        p3 = broker.topics.get("orders").partitions[3]
        assert (p3.replicas, p3.isr, p3.leader) == ([2, 1], [1], 1)
        assert len(broker.topics.get("orders").partitions) == 4


def reassign(name: str, index: int, replicas: list[int] | None, **kw: Any) -> Any:
    return AlterPartitionReassignmentsRequest(
        topics=[
            ReassignableTopic(
                name=name,
                partitions=[ReassignablePartition(partition_index=index, replicas=replicas)],
            )
        ],
        **kw,
    )


async def reassigned(client: Any, request: Any, version: int = 0) -> tuple[int, str | None]:
    answer = await client.call(request, version)
    assert answer.error_code == ErrorCode.NONE
    [part] = answer.responses[0].partitions
    return part.error_code, part.error_message


async def test_a_reassignment_takes_effect_at_once(tmp_path: Path) -> None:
    async with running(tmp_path, **THREE) as broker:
        client = await at(broker, 2)
        await metadata(client, "orders")
        p = broker.topics.partition("orders", 0)
        a, b, c = p.replicas
        assert p.leader == a
        assert await produce(await at(broker, a), "orders", b"one") == (ErrorCode.NONE, 0)
        # Reordering keeps the leader and its epoch.
        assert await reassigned(client, reassign("orders", 0, [b, a, c])) == (ErrorCode.NONE, None)
        assert (p.replicas, p.leader, p.leader_epoch) == ([b, a, c], a, 0)
        # Dropping a follower: same leader, a new epoch (Kafka's PartitionChangeBuilder).
        assert await reassigned(client, reassign("orders", 0, [b, a])) == (ErrorCode.NONE, None)
        assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ([b, a], [b, a], a, 1)
        # Dropping the leader (v0 allows a change of replication factor): the first of the
        # new replicas leads, at a new epoch.
        assert await reassigned(client, reassign("orders", 0, [c, b, a][:2])) == (
            ErrorCode.NONE,
            None,
        )
        assert (p.replicas, p.isr, p.leader, p.leader_epoch) == ([c, b], [c, b], c, 2)
        assert p.epochs == [(0, 0), (1, 1), (2, 1)]
        [part] = (await metadata(await at(broker, a), "orders")).topics[0].partitions
        assert (part.leader_id, part.leader_epoch, part.replica_nodes, part.isr_nodes) == (
            c,
            2,
            [c, b],
            [c, b],
        )
        assert (await produce(await at(broker, a), "orders", b"x"))[0] == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
        assert await produce(await at(broker, c), "orders", b"two") == (ErrorCode.NONE, 1)
        # v1 without a change of replication factor; bad lists; cancelling; unknown.
        refused = reassign("orders", 0, [a, b, c], allow_replication_factor_change=False)
        assert await reassigned(client, refused, 1) == (
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "The replication factor is changed from 2 to 3 but allowReplicationFactorChange "
            "is false",
        )
        code, message = await reassigned(client, reassign("orders", 0, [a, 7]))
        assert (code, message) == (
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "The manual partition assignment includes broker 7, but no such broker is registered.",
        )
        assert (await reassigned(client, reassign("orders", 0, None)))[0] == (
            ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
        )
        assert (await reassigned(client, reassign("orders", 5, [a])))[0] == (
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        )
        assert p.replicas == [c, b]
        # None is ever in progress.
        listed = await client.call(ListPartitionReassignmentsRequest(topics=None), 0)
        assert (listed.error_code, listed.topics) == (ErrorCode.NONE, [])
    # A restart keeps the new replicas, leader and epoch, and the log where it was.
    async with running(tmp_path, **THREE) as broker:
        p = broker.topics.partition("orders", 0)
        assert (p.replicas, p.leader, p.leader_epoch) == ([c, b], c, 2)
        assert p.log.log_end_offset == 2
        assert p.log.path.parent.name == f"broker-{a}"
        assert await produce(await at(broker, c), "orders", b"three") == (ErrorCode.NONE, 2)


async def test_a_coordinator_partition_reassigned_away_moves_its_groups(tmp_path: Path) -> None:
    from protocol.messages.heartbeat import HeartbeatRequest
    from tests.broker.test_cluster import find_coordinator

    async with running(tmp_path, **THREE) as broker:
        [c] = await find_coordinator(await at(broker, 1), "g")
        index = broker.coordinator.coordinator.partition_for("g")
        p = broker.topics.partition("__consumer_offsets", index)
        others = [n for n in (1, 2, 3) if n != c.node_id]
        client = await at(broker, others[0])
        request = reassign("__consumer_offsets", index, others)
        assert await reassigned(client, request) == (ErrorCode.NONE, None)
        assert p.leader == others[0]
        [moved] = await find_coordinator(client, "g")
        assert moved.node_id == others[0]
        for event in list(broker.cluster.loading.values()):
            await event.wait()
        hb = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
        assert (await (await at(broker, c.node_id)).call(hb, 4)).error_code == (
            ErrorCode.NOT_COORDINATOR
        )
        assert (await client.call(hb, 4)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
