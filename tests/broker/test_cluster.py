"""Several brokers in one process (kmock.brokers, broker.cluster_state): what each broker
answers, through real sockets, for the partitions and groups it leads and those it does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.config import ConfigError
from broker.placement import replica_assignment
from protocol.errors import ErrorCode
from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from tests.admin_http import http
from tests.reliability.inproc import produce, produce_request, running
from tests.wire import WireClient

THREE = {
    "kmock.brokers": 3,
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 6,
}


async def at(broker: Any, node: int) -> WireClient:
    """A connection to broker `node` of the process (at the port it bound)."""
    port = broker.node_bound_ports[node]["PLAINTEXT"]
    return WireClient(await trio.open_tcp_stream("127.0.0.1", port))


async def metadata(client: WireClient, *topics: str) -> Any:
    return await client.call(
        MetadataRequest(
            topics=[MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=True
        ),
        12,
    )


def view(response: Any) -> tuple[Any, ...]:
    """What a Metadata answer says of the cluster, comparable between brokers."""
    return (
        sorted((b.node_id, b.host, b.port) for b in response.brokers),
        response.controller_id,
        [
            (
                t.name,
                [
                    (
                        p.partition_index,
                        p.leader_id,
                        p.leader_epoch,
                        p.replica_nodes,
                        p.isr_nodes,
                        p.offline_replicas,
                    )
                    for p in t.partitions
                ],
            )
            for t in response.topics
        ],
    )


def test_placement_is_kafkas_round_robin_with_a_shift() -> None:
    brokers = [1, 2, 3]
    assignments = [replica_assignment("orders", p, 3, brokers) for p in range(6)]
    # Every partition has 3 distinct replicas; the preferred ones go round the brokers.
    assert all(sorted(r) == brokers for r in assignments)
    firsts = [r[0] for r in assignments]
    assert firsts[:3] == firsts[3:]
    assert sorted(firsts[:3]) == brokers
    # After a full round the followers shift (AdminUtils: nextReplicaShift += 1).
    assert [r[1] for r in assignments[:3]] != [r[1] for r in assignments[3:]]
    # Replication factor 2: the second replica follows the first at the shift.
    two = [replica_assignment("orders", p, 2, brokers) for p in range(3)]
    assert all(len(set(r)) == 2 for r in two)
    assert [r[0] for r in two] == firsts[:3]


async def test_every_broker_gives_the_same_cluster_view(tmp_path: Path) -> None:
    async with running(tmp_path, **THREE) as broker:
        assert broker.cluster.node_ids == [1, 2, 3]
        assert len(broker.bootstrap_servers.split(",")) == 3
        views = []
        for node in (1, 2, 3):
            client = await at(broker, node)
            response = await metadata(client, "orders")
            views.append(view(response))
            await client.aclose()
        assert views[0] == views[1] == views[2]
        brokers, controller, topics = views[0]
        assert [b[0] for b in brokers] == [1, 2, 3]
        assert controller == 1
        [(name, partitions)] = topics
        assert name == "orders"
        assert len(partitions) == 1
        _, leader, epoch, replicas, isr, offline = partitions[0]
        assert replicas == replica_assignment("orders", 0, 3, [1, 2, 3])
        assert leader == replicas[0]
        assert epoch == 0
        assert isr == replicas
        assert offline == []
        # The log is under its preferred replica's directory, which has Kafka's
        # meta.properties for that broker.
        assert (tmp_path / f"broker-{leader}" / "orders-0").is_dir()
        for node in (1, 2, 3):
            meta = (tmp_path / f"broker-{node}" / "meta.properties").read_text()
            assert f"cluster.id={broker.cluster_id}\n" in meta
            assert f"node.id={node}\n" in meta
        assert not (tmp_path / "orders-0").exists()


async def test_describe_cluster_lists_every_broker(tmp_path: Path) -> None:
    async with running(tmp_path, **THREE) as broker:
        client = await at(broker, 3)
        response = await client.call(DescribeClusterRequest(), 0)
        assert sorted(b.broker_id for b in response.brokers) == [1, 2, 3]
        assert {(b.host, b.port) for b in response.brokers} == {
            broker.node_advertised[n]["PLAINTEXT"] for n in (1, 2, 3)
        }


async def test_more_replicas_than_brokers_is_invalid_replication_factor(tmp_path: Path) -> None:
    async with running(tmp_path, **THREE) as broker:
        client = await at(broker, 1)
        response = await client.call(
            CreateTopicsRequest(
                topics=[
                    CreatableTopic(
                        name="wide",
                        num_partitions=1,
                        replication_factor=4,
                        assignments=[],
                        configs=[],
                    ),
                    CreatableTopic(
                        name="ok",
                        num_partitions=3,
                        replication_factor=2,
                        assignments=[],
                        configs=[],
                    ),
                ],
                timeout_ms=5000,
            ),
            7,
        )
        wide, ok = response.topics
        assert wide.error_code == ErrorCode.INVALID_REPLICATION_FACTOR
        assert "only 3 broker(s)" in wide.error_message
        assert ok.error_code == ErrorCode.NONE
        assert ok.replication_factor == 2
        assert all(len(p.replicas) == 2 for p in broker.topics.get("ok").partitions)


async def test_partition_requests_at_a_follower_are_not_leader(tmp_path: Path) -> None:
    async with running(tmp_path, **THREE) as broker:
        client = await at(broker, 1)
        await metadata(client, "orders")
        p = broker.topics.partition("orders", 0)
        leader, follower = p.leader, p.replicas[1]
        at_leader, at_follower = await at(broker, leader), await at(broker, follower)
        # Produce v9: the code alone; v10+: the current leader and its endpoint (KIP-951).
        assert (await produce(at_follower, "orders", b"x"))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        answer = await at_follower.call(produce_request("orders", b"x"), 11)
        part = answer.responses[0].partition_responses[0]
        assert part.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert (part.current_leader.leader_id, part.current_leader.leader_epoch) == (leader, 0)
        assert [(e.node_id, e.host, e.port) for e in answer.node_endpoints] == [
            (leader, *broker.node_advertised[leader]["PLAINTEXT"])
        ]
        assert p.log.log_end_offset == 0  # nothing written
        assert await produce(at_leader, "orders", b"x") == (ErrorCode.NONE, 0)
        # Fetch v16: the same fields.
        fetch = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            isolation_level=0,
            session_id=0,
            rack_id="",
            topics=[
                FetchTopic(
                    topic_id=broker.topics.get("orders").topic_id,
                    partitions=[
                        FetchPartition(partition=0, fetch_offset=0, partition_max_bytes=1 << 20)
                    ],
                )
            ],
            forgotten_topics_data=[],
        )
        data = (await at_follower.call(fetch, 16)).responses[0].partitions[0]
        assert data.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert data.current_leader.leader_id == leader
        data = (await at_leader.call(fetch, 16)).responses[0].partitions[0]
        assert data.error_code == ErrorCode.NONE
        assert data.high_watermark == 1
        # ListOffsets and OffsetForLeaderEpoch.
        lo = ListOffsetsRequest(
            replica_id=-1,
            isolation_level=0,
            topics=[
                ListOffsetsTopic(
                    name="orders",
                    partitions=[ListOffsetsPartition(partition_index=0, timestamp=-1)],
                )
            ],
        )
        assert (await at_follower.call(lo, 7)).topics[0].partitions[0].error_code == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
        assert (await at_leader.call(lo, 7)).topics[0].partitions[0].offset == 1
        ofle = OffsetForLeaderEpochRequest(
            topics=[
                OffsetForLeaderTopic(
                    topic="orders",
                    partitions=[OffsetForLeaderPartition(partition=0, leader_epoch=0)],
                )
            ]
        )
        assert (await at_follower.call(ofle, 4)).topics[0].partitions[0].error_code == (
            ErrorCode.NOT_LEADER_OR_FOLLOWER
        )
        end = (await at_leader.call(ofle, 4)).topics[0].partitions[0]
        assert (end.error_code, end.leader_epoch, end.end_offset) == (ErrorCode.NONE, 0, 1)


async def find_coordinator(client: WireClient, *groups: str) -> list[Any]:
    response = await client.call(
        FindCoordinatorRequest(key_type=0, coordinator_keys=list(groups)), 4
    )
    return list(response.coordinators)


async def test_groups_are_spread_and_answered_only_by_their_coordinator(tmp_path: Path) -> None:
    async with running(tmp_path, **THREE) as broker:
        client = await at(broker, 2)
        groups = [f"group-{i}" for i in range(12)]
        found = await find_coordinator(client, *groups)
        assert all(c.error_code == ErrorCode.NONE for c in found)
        assert {c.node_id for c in found} == {1, 2, 3}
        for c in found:
            assert (c.host, c.port) == broker.node_advertised[c.node_id]["PLAINTEXT"]
        # Every broker names the same coordinators.
        other = await at(broker, 3)
        assert [c.node_id for c in await find_coordinator(other, *groups)] == [
            c.node_id for c in found
        ]
        c = found[0]
        wrong = next(n for n in (1, 2, 3) if n != c.node_id)
        hb = HeartbeatRequest(group_id=c.key, generation_id=1, member_id="m")
        at_wrong, at_right = await at(broker, wrong), await at(broker, c.node_id)
        assert (await at_wrong.call(hb, 4)).error_code == ErrorCode.NOT_COORDINATOR
        assert (await at_right.call(hb, 4)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


async def test_a_restart_keeps_leaders_epochs_and_data(tmp_path: Path) -> None:
    async with running(tmp_path, **THREE) as broker:
        client = await at(broker, 1)
        await metadata(client, "orders")
        p = broker.topics.partition("orders", 0)
        leader = p.leader
        assert await produce(await at(broker, leader), "orders", b"a") == (ErrorCode.NONE, 0)
        new = p.replicas[2]
        broker.cluster.move_leader(p, new)
        broker.topics.save()
        assert (p.leader, p.leader_epoch, p.epochs) == (new, 1, [(0, 0), (1, 1)])
    table = json.loads((tmp_path / "topics.json").read_text())
    assert table["orders"]["cluster"][0]["leader"] == new
    async with running(tmp_path, **THREE) as broker:
        p = broker.topics.partition("orders", 0)
        assert (p.leader, p.leader_epoch, p.epochs) == (new, 1, [(0, 0), (1, 1)])
        assert p.log.log_end_offset == 1
        client = await at(broker, new)
        assert await produce(client, "orders", b"b") == (ErrorCode.NONE, 1)
        # The cache answers where epoch 0 ended.
        ofle = OffsetForLeaderEpochRequest(
            topics=[
                OffsetForLeaderTopic(
                    topic="orders",
                    partitions=[OffsetForLeaderPartition(partition=0, leader_epoch=0)],
                )
            ]
        )
        end = (await client.call(ofle, 4)).topics[0].partitions[0]
        assert (end.leader_epoch, end.end_offset) == (0, 1)


async def test_another_broker_count_on_the_same_data_is_refused(tmp_path: Path) -> None:
    async with running(tmp_path, **THREE) as broker:
        await metadata(await at(broker, 1), "orders")
    with pytest.raises(BaseExceptionGroup) as refused:
        await _start_and_stop(tmp_path)
    assert refused.group_contains(ConfigError, match="written by a cluster of several brokers")
    async with running(tmp_path / "single") as broker:
        await metadata(await WireClient.connect(broker), "orders")
    with pytest.raises(BaseExceptionGroup) as refused:
        await _start_and_stop(tmp_path / "single", **THREE)
    assert refused.group_contains(ConfigError, match="written by a single broker")


async def _start_and_stop(data_dir: Path, **settings: Any) -> None:
    """Start a broker on `data_dir` and stop it as soon as it is ready (what a refused
    start raises comes out of here)."""
    async with running(data_dir, **settings):
        return


CONTROLLED = {**THREE, "admin.port": 0}


def ofle_request(epoch: int, current: int = -1) -> OffsetForLeaderEpochRequest:
    return OffsetForLeaderEpochRequest(
        topics=[
            OffsetForLeaderTopic(
                topic="orders",
                partitions=[
                    OffsetForLeaderPartition(
                        partition=0, leader_epoch=epoch, current_leader_epoch=current
                    )
                ],
            )
        ]
    )


async def test_moving_a_leader_bumps_its_epoch(tmp_path: Path) -> None:
    async with running(tmp_path, **CONTROLLED) as broker:
        await metadata(await at(broker, 1), "orders")
        p = broker.topics.partition("orders", 0)
        old = p.leader
        assert await produce(await at(broker, old), "orders", b"a") == (ErrorCode.NONE, 0)
        new = p.replicas[1]
        status, moved = await http(
            broker, "POST", "/v1/cluster/leader", {"topic": "orders", "partition": 0, "broker": new}
        )
        assert status == 200
        assert (moved["leader"], moved["leader_epoch"]) == (new, 1)
        # Every broker's Metadata says so.
        for node in (1, 2, 3):
            [part] = (await metadata(await at(broker, node), "orders")).topics[0].partitions
            assert (part.leader_id, part.leader_epoch) == (new, 1)
        at_old, at_new = await at(broker, old), await at(broker, new)
        assert (await produce(at_old, "orders", b"b"))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert await produce(at_new, "orders", b"b") == (ErrorCode.NONE, 1)
        # The batch carries the leader's epoch (partitionLeaderEpoch).
        fetch = FetchRequest(
            max_wait_ms=0,
            min_bytes=1,
            isolation_level=0,
            session_id=0,
            rack_id="",
            topics=[
                FetchTopic(
                    topic="orders",
                    partitions=[
                        FetchPartition(
                            partition=0,
                            fetch_offset=1,
                            partition_max_bytes=1 << 20,
                            current_leader_epoch=0,
                        )
                    ],
                )
            ],
            forgotten_topics_data=[],
        )
        stale = (await at_new.call(fetch, 12)).responses[0].partitions[0]
        assert stale.error_code == ErrorCode.FENCED_LEADER_EPOCH
        from protocol.records import iter_batches

        data = p.log.read_bytes(1, 1 << 20)
        assert [h.partition_leader_epoch for _, h in iter_batches(data)] == [1]
        # OffsetForLeaderEpoch: epoch 0 ended where epoch 1 began; epoch 1 at the log end.
        ends = []
        for epoch in (0, 1, 2):
            end = (await at_new.call(ofle_request(epoch), 4)).topics[0].partitions[0]
            ends.append((end.error_code, end.leader_epoch, end.end_offset))
        assert ends == [(0, 0, 1), (0, 1, 2), (0, -1, -1)]
        # A broker that is no live in-sync replica cannot lead: 400, nothing changes.
        bad = [
            ({"topic": "orders", "partition": 0, "broker": 9}, "broker"),
            ({"topic": "orders", "partition": 7, "broker": 1}, "partition"),
            ({"topic": "orders", "partition": 0, "broker": 1, "x": 1}, "x"),
        ]
        for body, field in bad:
            status, answer = await http(broker, "POST", "/v1/cluster/leader", body)
            assert (status, answer["field"]) == (400, field), answer
        assert (p.leader, p.leader_epoch) == (new, 1)
        status, described = await http(broker, "GET", "/v1/cluster")
        assert status == 200
        assert [b["id"] for b in described["brokers"]] == [1, 2, 3]
        [orders] = [d for d in described["partitions"] if d["topic"] == "orders"]
        assert (orders["leader"], orders["isr"]) == (new, p.replicas)


async def test_moving_a_coordinator(tmp_path: Path) -> None:
    from broker.controls.cluster import move_coordinator

    async with running(tmp_path, **CONTROLLED) as broker:
        client = await at(broker, 1)
        [c] = await find_coordinator(client, "g")
        old = c.node_id
        new = next(n for n in (1, 2, 3) if n != old)
        hb = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
        # The new coordinator loads the partition first (no checkpoint here: still loading).
        move_coordinator(broker, {"group_id": "g", "broker": new})
        [(_key, loading)] = broker.cluster.loading.items()
        at_new = await at(broker, new)
        first = await at_new.call(hb, 4)
        assert first.error_code in (
            ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
            ErrorCode.UNKNOWN_MEMBER_ID,
        )
        await loading.wait()
        assert (await at_new.call(hb, 4)).error_code == ErrorCode.UNKNOWN_MEMBER_ID
        assert (await (await at(broker, old)).call(hb, 4)).error_code == ErrorCode.NOT_COORDINATOR
        assert [x.node_id for x in await find_coordinator(client, "g")] == [new]
        # Over HTTP, with bad input refused.
        status, answer = await http(
            broker, "POST", "/v1/cluster/coordinator", {"group_id": "g", "broker": old}
        )
        assert status == 200
        assert answer["leader"] == old
        assert [x.node_id for x in await find_coordinator(client, "g")] == [old]
        for body, field in [
            ({"broker": 1}, "group_id"),
            ({"group_id": "g", "broker": 4}, "broker"),
            ({"group_id": "", "broker": 1}, "group_id"),
        ]:
            status, answer = await http(broker, "POST", "/v1/cluster/coordinator", body)
            assert (status, answer["field"]) == (400, field), answer


async def test_stopping_and_starting_a_broker(tmp_path: Path) -> None:
    settings = {**CONTROLLED, "min.insync.replicas": 2}
    async with running(tmp_path, **settings) as broker:
        await metadata(await at(broker, 1), "orders")
        p = broker.topics.partition("orders", 0)
        leader = p.leader
        others = [b for b in p.replicas if b != leader]
        client = await at(broker, leader)
        status, answer = await http(broker, "POST", f"/v1/brokers/{leader}/stop")
        assert (status, answer["live"]) == (200, others)
        # Its connections are dropped, its port refuses new ones.
        assert await client.is_closed_by_peer()
        host, port = broker.node_advertised[leader]["PLAINTEXT"]
        with pytest.raises(OSError, match="all attempts to connect"):
            await trio.open_tcp_stream(host, port)
        # Leadership went to the next in-sync replica, with a new epoch; the ISR shrank.
        assert (p.leader, p.leader_epoch, p.isr) == (others[0], 1, others)
        view_ = await metadata(await at(broker, others[1]), "orders")
        assert sorted(b.node_id for b in view_.brokers) == others
        [part] = view_.topics[0].partitions
        assert (part.leader_id, part.isr_nodes, part.offline_replicas) == (
            others[0],
            others,
            [leader],
        )
        # min.insync.replicas=2 is still met; stop one more and acks=all is refused.
        at_leader = await at(broker, others[0])
        assert await produce(at_leader, "orders", b"a") == (ErrorCode.NONE, 0)
        assert (await http(broker, "POST", f"/v1/brokers/{others[1]}/stop"))[0] == 200
        assert (await produce(at_leader, "orders", b"b"))[0] == ErrorCode.NOT_ENOUGH_REPLICAS
        assert p.log.log_end_offset == 1  # nothing written
        assert await produce(at_leader, "orders", b"b", acks=1) == (ErrorCode.NONE, 1)
        # The last broker cannot be stopped; a stopped one cannot be stopped twice.
        assert (await http(broker, "POST", f"/v1/brokers/{others[0]}/stop"))[0] == 400
        assert (await http(broker, "POST", f"/v1/brokers/{leader}/stop"))[0] == 400
        # Start both again: same ports, back in the ISR, the preferred leader leads again.
        for node in (others[1], leader):
            status, _ = await http(broker, "POST", f"/v1/brokers/{node}/start")
            assert status == 200
        assert (p.leader, sorted(p.isr)) == (leader, sorted(p.replicas))
        assert p.leader_epoch == 2
        client = await at(broker, leader)
        assert await produce(client, "orders", b"c") == (ErrorCode.NONE, 2)
        assert (await http(broker, "POST", "/v1/brokers/9/start"))[0] == 400


async def test_an_offline_partition_and_elect_leaders(tmp_path: Path) -> None:
    from protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions

    settings = {
        **CONTROLLED,
        "default.replication.factor": 1,
        "auto.leader.rebalance.enable": False,
    }
    async with running(tmp_path, **settings) as broker:
        await metadata(await at(broker, 1), "orders")
        p = broker.topics.partition("orders", 0)
        [only] = p.replicas
        other = next(n for n in (1, 2, 3) if n != only)
        await http(broker, "POST", f"/v1/brokers/{only}/stop")
        [part] = (await metadata(await at(broker, other), "orders")).topics[0].partitions
        assert (part.error_code, part.leader_id) == (ErrorCode.LEADER_NOT_AVAILABLE, -1)
        assert part.offline_replicas == [only]
        await http(broker, "POST", f"/v1/brokers/{only}/start")
        assert (p.leader, p.leader_epoch) == (only, 2)
    # Three replicas, no automatic rebalance: ElectLeaders (PREFERRED) brings it back.
    async with running(tmp_path / "rf3", **{**settings, "default.replication.factor": 3}) as broker:
        await metadata(await at(broker, 1), "orders")
        p = broker.topics.partition("orders", 0)
        preferred = p.replicas[0]
        await http(broker, "POST", f"/v1/brokers/{preferred}/stop")
        await http(broker, "POST", f"/v1/brokers/{preferred}/start")
        assert p.leader != preferred
        client = await at(broker, p.leader)
        request = ElectLeadersRequest(
            election_type=0,
            topic_partitions=[TopicPartitions(topic="orders", partitions=[0])],
            timeout_ms=5000,
        )
        [result] = (await client.call(request, 2)).replica_election_results[0].partition_result
        assert result.error_code == ErrorCode.NONE
        assert p.leader == preferred
        [result] = (await client.call(request, 2)).replica_election_results[0].partition_result
        assert result.error_code == ErrorCode.ELECTION_NOT_NEEDED


def test_the_fixture_serves_several_brokers_and_restarts_on_their_ports(tmp_path: Path) -> None:
    from kafka import KafkaAdminClient

    from broker.pytest_plugin import KmockBroker, _marker_overrides

    class Node:
        def iter_markers(self, name: str) -> list[Any]:
            return [pytest.mark.kmock_config(brokers=3, default_replication_factor=2).mark]

    overrides = _marker_overrides(Node())
    assert overrides == {"kmock.brokers": 3, "default.replication.factor": 2}
    kmock = KmockBroker(tmp_path / "data", {**overrides, "admin.port": 0})
    kmock.start()
    try:
        bootstrap = kmock.bootstrap_servers
        ports = [int(a.rsplit(":", 1)[1]) for a in bootstrap.split(",")]
        assert ports == [ports[0], ports[0] + 1, ports[0] + 2]
        admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(",")[1])
        try:
            brokers = admin.describe_cluster()["brokers"]
        finally:
            admin.close()
        assert sorted(b["broker_id"] for b in brokers) == [1, 2, 3]
        kmock.stop_broker(2)
        assert [b["running"] for b in kmock.cluster()["brokers"]] == [True, False, True]
        kmock.restart()
        assert kmock.bootstrap_servers == bootstrap
        assert [b["running"] for b in kmock.cluster()["brokers"]] == [True, True, True]
    finally:
        kmock.stop()


async def test_create_topics_with_a_manual_assignment(tmp_path: Path) -> None:
    from protocol.messages.create_topics import CreatableReplicaAssignment

    def topic(name: str, *assignment: list[int]) -> CreatableTopic:
        return CreatableTopic(
            name=name,
            num_partitions=-1,
            replication_factor=-1,
            assignments=[
                CreatableReplicaAssignment(partition_index=i, broker_ids=ids)
                for i, ids in enumerate(assignment)
            ],
            configs=[],
        )

    async with running(tmp_path, **THREE) as broker:
        client = await at(broker, 2)
        request = CreateTopicsRequest(
            topics=[topic("placed", [3, 1], [2, 3]), topic("nowhere", [4]), topic("twice", [1, 1])],
            timeout_ms=5000,
        )
        placed, nowhere, twice = (await client.call(request, 7)).topics
        assert (placed.error_code, placed.replication_factor) == (ErrorCode.NONE, 2)
        p0, p1 = broker.topics.get("placed").partitions
        assert (p0.replicas, p0.leader, p1.replicas, p1.leader) == ([3, 1], 3, [2, 3], 2)
        assert (tmp_path / "broker-3" / "placed-0").is_dir()
        assert (tmp_path / "broker-2" / "placed-1").is_dir()
        assert nowhere.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert "broker 4" in nowhere.error_message
        assert twice.error_code == ErrorCode.INVALID_REPLICA_ASSIGNMENT
        assert broker.topics.get("nowhere") is None


async def test_an_election_of_a_coordinator_partition_loads_it(tmp_path: Path) -> None:
    from protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions

    settings = {**CONTROLLED, "auto.leader.rebalance.enable": False}
    async with running(tmp_path, **settings) as broker:
        [c] = await find_coordinator(await at(broker, 1), "g")
        p = broker.topics.partition(
            "__consumer_offsets", broker.coordinator.coordinator.partition_for("g")
        )
        assert c.node_id == p.leader == p.replicas[0]
        await http(broker, "POST", f"/v1/brokers/{c.node_id}/stop")
        await http(broker, "POST", f"/v1/brokers/{c.node_id}/start")
        assert p.leader != c.node_id
        for event in list(broker.cluster.loading.values()):
            await event.wait()
        request = ElectLeadersRequest(
            election_type=0,
            topic_partitions=[TopicPartitions(topic="__consumer_offsets", partitions=[p.index])],
        )
        # The handler itself, so that nothing runs between the election and the check.
        from broker import routes
        from broker.context import RequestContext
        from broker.handlers import elect_leaders

        ctx = RequestContext(broker, 2, "admin", "/127.0.0.1", 0, routes)
        answer = await elect_leaders.handle(ctx, request)
        [result] = answer.replica_election_results[0].partition_result
        assert result.error_code == ErrorCode.NONE
        [(key, loaded)] = broker.cluster.loading.items()
        assert key == ("__consumer_offsets", p.index)
        hb = HeartbeatRequest(group_id="g", generation_id=1, member_id="m")
        client = await at(broker, c.node_id)
        first = (await client.call(hb, 4)).error_code
        assert first in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.UNKNOWN_MEMBER_ID)
        await loaded.wait()
        assert (await client.call(hb, 4)).error_code == ErrorCode.UNKNOWN_MEMBER_ID


def test_the_fixture_seeds_every_partition_whatever_its_leader(tmp_path: Path) -> None:
    from broker.pytest_plugin import KmockBroker

    kmock = KmockBroker(
        tmp_path / "data",
        {"num.partitions": 3, "default.replication.factor": 3},
        brokers=3,
    )
    kmock.start()
    try:
        placed = kmock.seed("orders", [{"key": f"k{i}", "value": f"v{i}"} for i in range(30)])
        assert {p for _, p, _ in placed} == {0, 1, 2}
        leaders = {p.leader for p in kmock.broker.topics.get("orders").partitions}
        assert len(leaders) > 1
    finally:
        kmock.stop()


async def test_delete_records_at_the_leader_and_log_dirs_per_broker(tmp_path: Path) -> None:
    from protocol.messages.delete_records import (
        DeleteRecordsPartition,
        DeleteRecordsRequest,
        DeleteRecordsTopic,
    )
    from protocol.messages.describe_log_dirs import DescribeLogDirsRequest

    async with running(tmp_path, **{**THREE, "default.replication.factor": 2}) as broker:
        await metadata(await at(broker, 1), "orders")
        p = broker.topics.partition("orders", 0)
        leader, follower = p.replicas
        outsider = next(n for n in (1, 2, 3) if n not in p.replicas)
        assert await produce(await at(broker, leader), "orders", b"a") == (ErrorCode.NONE, 0)
        request = DeleteRecordsRequest(
            topics=[
                DeleteRecordsTopic(
                    name="orders",
                    partitions=[DeleteRecordsPartition(partition_index=0, offset=1)],
                )
            ],
            timeout_ms=5000,
        )
        for node in (follower, outsider):
            answer = await (await at(broker, node)).call(request, 2)
            assert answer.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
        assert p.log.log_start_offset == 0
        answer = await (await at(broker, leader)).call(request, 2)
        assert answer.topics[0].partitions[0].low_watermark == 1
        # DescribeLogDirs: a broker lists the partitions it is a replica of.
        for node, listed in ((leader, True), (follower, True), (outsider, False)):
            dirs = await (await at(broker, node)).call(DescribeLogDirsRequest(topics=None), 1)
            names = {t.name for t in dirs.results[0].topics}
            assert ("orders" in names) == listed, node


async def test_each_broker_lists_the_groups_it_coordinates(tmp_path: Path) -> None:
    from protocol.messages.list_groups import ListGroupsRequest
    from tests.reliability.inproc import commit

    async with running(tmp_path, **THREE) as broker:
        await metadata(await at(broker, 1), "orders")
        groups = [f"group-{i}" for i in range(9)]
        coordinators = {
            c.key: c.node_id for c in await find_coordinator(await at(broker, 1), *groups)
        }
        for group, node in coordinators.items():
            client = await at(broker, node)
            assert await commit(client, group, "orders", 1) == ErrorCode.NONE
            # At another broker the same commit is NOT_COORDINATOR.
            other = await at(broker, next(n for n in (1, 2, 3) if n != node))
            assert await commit(other, group, "orders", 2) == ErrorCode.NOT_COORDINATOR
        listed = {}
        for node in (1, 2, 3):
            response = await (await at(broker, node)).call(ListGroupsRequest(), 4)
            listed[node] = sorted(g.group_id for g in response.groups)
        assert listed == {
            node: sorted(g for g, n in coordinators.items() if n == node) for node in (1, 2, 3)
        }


async def test_advertised_ports_shift_per_broker(tmp_path: Path) -> None:
    settings = {"kmock.brokers": 2, "advertised.listeners": "PLAINTEXT://kmock.example:29092"}
    async with running(tmp_path, **settings) as broker:
        client = await at(broker, 2)
        response = await client.call(DescribeClusterRequest(), 0)
        assert sorted((b.broker_id, b.host, b.port) for b in response.brokers) == [
            (1, "kmock.example", 29092),
            (2, "kmock.example", 29093),
        ]


async def test_transactional_ids_are_answered_by_their_coordinator(tmp_path: Path) -> None:
    from protocol.messages.init_producer_id import InitProducerIdRequest

    settings = {**THREE, "transaction.state.log.replication.factor": 3}
    async with running(tmp_path, **settings) as broker:
        client = await at(broker, 1)
        ids = [f"txn-{i}" for i in range(9)]
        response = await client.call(FindCoordinatorRequest(key_type=1, coordinator_keys=ids), 4)
        found = {c.key: c.node_id for c in response.coordinators}
        assert set(found.values()) == {1, 2, 3}
        for transactional_id, node in found.items():
            request = InitProducerIdRequest(
                transactional_id=transactional_id, transaction_timeout_ms=60_000
            )
            other = next(n for n in (1, 2, 3) if n != node)
            wrong = await (await at(broker, other)).call(request, 4)
            assert wrong.error_code == ErrorCode.NOT_COORDINATOR
            right = await (await at(broker, node)).call(request, 4)
            assert (right.error_code, right.producer_epoch) == (ErrorCode.NONE, 0)
        # An idempotent producer (no transactional id) gets an id at any broker.
        plain = InitProducerIdRequest(transactional_id=None, transaction_timeout_ms=60_000)
        for node in (1, 2, 3):
            assert (await (await at(broker, node)).call(plain, 4)).error_code == ErrorCode.NONE


async def test_a_repeated_metadata_follows_topics_leaders_and_brokers(tmp_path: Path) -> None:
    """The same Metadata, over one connection, answered from what broker.handlers.metadata
    keeps encoded, changes when a topic is created or deleted, a leader moves, or a broker
    that holds no replica stops and starts again (nothing but the brokers listed changes)."""
    from broker.handlers import metadata as handler
    from protocol.messages.create_topics import CreatableReplicaAssignment
    from tests.reliability.inproc import delete

    every = MetadataRequest(topics=None, allow_auto_topic_creation=False)
    named = MetadataRequest(
        topics=[MetadataRequestTopic(name="orders")], allow_auto_topic_creation=False
    )

    def kept() -> int:
        return sum(1 for k in handler._answers.values() if k.broker() is broker)

    async def create(name: str) -> None:
        # On brokers 1 and 2 only: broker 3 holds no replica.
        topic = CreatableTopic(
            name=name,
            num_partitions=-1,
            replication_factor=-1,
            assignments=[CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2])],
            configs=[],
        )
        response = await client.call(CreateTopicsRequest(topics=[topic], timeout_ms=5000), 5)
        assert [t.error_code for t in response.topics] == [ErrorCode.NONE]

    async with running(tmp_path, **CONTROLLED) as broker:
        client = await at(broker, 1)
        await create("orders")
        first = await client.call(every, 12)
        assert [t.name for t in first.topics] == ["orders"]
        assert view(await client.call(every, 12)) == view(first)
        assert view(await client.call(named, 12)) == view(first)
        assert kept() == 2  # one answer per question, asked twice and once

        await create("payments")
        assert [t.name for t in (await client.call(every, 12)).topics] == ["orders", "payments"]

        move = {"topic": "orders", "partition": 0, "broker": 2}
        assert (await http(broker, "POST", "/v1/cluster/leader", move))[0] == 200
        [part] = (await client.call(named, 12)).topics[0].partitions
        assert (part.leader_id, part.leader_epoch) == (2, 1)

        before = await client.call(every, 12)
        assert sorted(b.node_id for b in before.brokers) == [1, 2, 3]
        assert (await http(broker, "POST", "/v1/brokers/3/stop"))[0] == 200
        stopped = await client.call(every, 12)
        assert sorted(b.node_id for b in stopped.brokers) == [1, 2]
        assert view(stopped)[2] == view(before)[2]  # the partitions: unchanged
        assert (await http(broker, "POST", "/v1/brokers/3/start"))[0] == 200
        assert view(await client.call(every, 12)) == view(before)

        await delete(client, "payments")
        assert [t.name for t in (await client.call(every, 12)).topics] == ["orders"]


def test_a_change_of_a_partitions_view_is_counted() -> None:
    """What broker.handlers.metadata's kept answers depend on: every assignment of a
    partition's leader, leader epoch, replicas or ISR counts in broker.topics.view_changes;
    other fields do not."""
    from broker import topics
    from broker.topics import Partition

    p = Partition("t", 0, log=None)  # type: ignore[arg-type]
    for name, value in (("leader", 1), ("leader_epoch", 2), ("replicas", [1]), ("isr", [1])):
        before = topics.view_changes
        setattr(p, name, value)
        assert topics.view_changes == before + 1
        assert getattr(p, name) == value
    before = topics.view_changes
    p.epochs = [(0, 0), (2, 5)]
    p.metrics = None
    assert topics.view_changes == before
