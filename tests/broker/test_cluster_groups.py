"""Several brokers: requests that name several groups are answered per group, and a
JoinGroup or SyncGroup parked at a coordinator that moves is answered NOT_COORDINATOR.
Through real sockets to a 3-broker process (broker.coordinator_guard, broker.runtime)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from protocol.errors import ErrorCode
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from tests.broker.test_cluster import THREE, at, find_coordinator, metadata
from tests.reliability.inproc import commit, running


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
