"""Several brokers: requests that name several groups are answered per group, and a
JoinGroup or SyncGroup parked at a coordinator that moves is answered NOT_COORDINATOR.
Through real sockets to a 3-broker process (broker.coordinator_guard, broker.runtime)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio
import trio.testing

from protocol.errors import ErrorCode
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.broker.test_cluster import CONTROLLED, THREE, at, find_coordinator, http, metadata
from tests.reliability.inproc import commit, running
from tests.wire import WireClient


async def spread_groups(broker: Any) -> dict[int, str]:
    """One group coordinated by each broker, with an offset committed at its coordinator."""
    await metadata(await at(broker, 1), "orders")
    found = await find_coordinator(await at(broker, 1), *(f"group-{i}" for i in range(12)))
    by_node: dict[int, str] = {}
    for c in found:
        by_node.setdefault(c.node_id, c.key)
    assert sorted(by_node) == [1, 2, 3]
    for node, group in by_node.items():
        assert await commit(await at(broker, node), group, "orders", 5) == ErrorCode.NONE
    return by_node


async def test_describe_delete_and_fetch_answer_each_group_at_its_coordinator(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, **THREE) as broker:
        groups = await spread_groups(broker)
        names = [groups[2], groups[1], groups[3]]
        client = await at(broker, 1)
        expected = [
            ErrorCode.NOT_COORDINATOR,
            ErrorCode.NONE,
            ErrorCode.NOT_COORDINATOR,
        ]
        # DescribeGroups v5: the group coordinated here is described, the others refused.
        described = (await client.call(DescribeGroupsRequest(groups=names), 5)).groups
        assert [(g.group_id, g.error_code) for g in described] == list(
            zip(names, expected, strict=True)
        )
        assert described[1].group_state == "Empty"
        assert described[0].group_state == ""
        # OffsetFetch v8: the served group's offsets, the others' codes and no topics.
        request = OffsetFetchRequest(
            groups=[OffsetFetchRequestGroup(group_id=g, topics=None) for g in names]
        )
        fetched = (await client.call(request, 8)).groups
        assert [(g.group_id, g.error_code) for g in fetched] == list(
            zip(names, expected, strict=True)
        )
        [topic] = fetched[1].topics
        assert (topic.name, topic.partitions[0].committed_offset) == ("orders", 5)
        assert fetched[0].topics == []
        assert fetched[2].topics == []
        # Every group refused: the handler is not asked, each entry carries its code.
        at_two = await at(broker, 2)
        refused = await at_two.call(DescribeGroupsRequest(groups=[groups[1], groups[3]]), 5)
        assert [g.error_code for g in refused.groups] == [ErrorCode.NOT_COORDINATOR] * 2
        # DeleteGroups: the group coordinated here is deleted, the others are kept.
        deleted = (await client.call(DeleteGroupsRequest(groups_names=names), 2)).results
        assert [(g.group_id, g.error_code) for g in deleted] == list(
            zip(names, expected, strict=True)
        )
        assert groups[1] not in broker.coordinator.coordinator.group_ids()
        assert {groups[2], groups[3]} <= set(broker.coordinator.coordinator.group_ids())


def join(group: str, member_id: str = "") -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=group,
        session_timeout_ms=30_000,
        rebalance_timeout_ms=60_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=b"")],
    )


def sync(group: str, generation: int, member_id: str, *assigned: str) -> SyncGroupRequest:
    return SyncGroupRequest(
        group_id=group,
        generation_id=generation,
        member_id=member_id,
        assignments=[SyncGroupRequestAssignment(member_id=m, assignment=b"a") for m in assigned],
    )


async def parked(broker: Any, count: int) -> None:
    """Until `count` group requests wait in the coordinator for other members."""
    runtime = broker.coordinator
    with trio.fail_after(10):
        while sum(not slot.event.is_set() for slot in runtime._parked.values()) < count:
            await trio.testing.wait_all_tasks_blocked(cushion=0.01)


async def test_a_parked_join_or_sync_is_not_coordinator_when_the_coordinator_moves(
    tmp_path: Path,
) -> None:
    async with running(tmp_path, **CONTROLLED) as broker:
        [c] = await find_coordinator(await at(broker, 1), "g")
        old = c.node_id
        first, second = await at(broker, old), await at(broker, old)
        # A alone: generation 1, stable.
        a = await first.call(join("g"), 3)
        assert (a.error_code, a.generation_id) == (ErrorCode.NONE, 1)
        synced = await first.call(sync("g", 1, a.member_id, a.member_id), 3)
        assert synced.error_code == ErrorCode.NONE
        answers: dict[str, Any] = {}

        async def call(name: str, client: WireClient, request: Any, version: int) -> None:
            answers[name] = await client.call(request, version)

        # B joins: it waits for A to rejoin (up to the 60 s rebalance timeout).
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "b", second, join("g"), 3)
            await parked(broker, 1)
            new = next(n for n in (1, 2, 3) if n != old)
            status, _ = await http(
                broker, "POST", "/v1/cluster/coordinator", {"group_id": "g", "broker": new}
            )
            assert status == 200
            with trio.fail_after(5):  # at once, not after the rebalance timeout
                while "b" not in answers:
                    await trio.testing.wait_all_tasks_blocked(cushion=0.01)
        b = answers["b"]
        # Kafka's answer names the member id it was given while it waited.
        assert b.error_code == ErrorCode.NOT_COORDINATOR
        assert b.member_id
        # The clients find the new coordinator and rejoin there as themselves.
        [c] = await find_coordinator(await at(broker, old), "g")
        assert c.node_id == new
        for event in list(broker.cluster.loading.values()):
            await event.wait()
        first, second = await at(broker, new), await at(broker, new)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "a2", first, join("g", a.member_id), 3)
            nursery.start_soon(call, "b2", second, join("g", b.member_id), 3)
        a2, b2 = answers["a2"], answers["b2"]
        assert (a2.error_code, b2.error_code) == (ErrorCode.NONE, ErrorCode.NONE)
        assert a2.generation_id == b2.generation_id == 2
        assert {m.member_id for m in a2.members} == {a.member_id, b.member_id}
        # The follower's SyncGroup waits for the leader's; the coordinator moves back.
        follower = second if a2.leader == a.member_id else first
        follower_id = b.member_id if a2.leader == a.member_id else a.member_id
        async with trio.open_nursery() as nursery:
            nursery.start_soon(call, "sync", follower, sync("g", 2, follower_id), 3)
            await parked(broker, 1)
            status, _ = await http(
                broker, "POST", "/v1/cluster/coordinator", {"group_id": "g", "broker": old}
            )
            assert status == 200
        assert answers["sync"].error_code == ErrorCode.NOT_COORDINATOR
