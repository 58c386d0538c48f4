"""Replaying the records a session wrote, read back from their bytes, rebuilds an equal
state: the groups, members, epochs, assignments, resolved regexes and derived indexes."""

import dataclasses
from typing import Any

from coordinator.consumer import (
    ConsumerGroup,
    ConsumerGroupCoordinator,
    ConsumerGroupRecord,
    CoordinatorResult,
    MemberState,
)
from protocol.consumer_offsets import decode_record
from protocol.messages.consumer_group_heartbeat import TopicPartitions
from tests.coordinator.consumer.builders import (
    GROUP,
    heartbeat_request,
    join_request,
    topics,
)


def snapshot(group: ConsumerGroup) -> dict[str, Any]:
    return {
        "group_epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "subscription_metadata": group.subscription_metadata,
        "members": group.members,
        "target_assignment": group.target_assignment,
        "resolved": group.resolved_regular_expressions,
        "partition_epochs": group.partition_epochs,
        "static_members": group.static_members,
        "state": group.state,
    }


def through_bytes(record: ConsumerGroupRecord) -> ConsumerGroupRecord:
    key, value = decode_record(record.key_bytes(), record.value_bytes())
    return ConsumerGroupRecord(key, value)  # type: ignore[arg-type]


def session() -> tuple[ConsumerGroupCoordinator, list[ConsumerGroupRecord]]:
    c = ConsumerGroupCoordinator()
    log: list[ConsumerGroupRecord] = []
    metadata = topics(orders=4, **{"orders-eu": 2})

    def run(result: CoordinatorResult) -> None:
        log.extend(result.records)

    run(c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, metadata, client_id="ca"))
    run(c.consumer_group_heartbeat(join_request("b", None, regex="orders.*"), 10, metadata))
    run(c.consumer_group_heartbeat(join_request("s", ["orders"], instance_id="i"), 20, metadata))
    run(
        c.consumer_group_heartbeat(
            heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 30, metadata
        )
    )
    run(c.consumer_group_heartbeat(heartbeat_request("s", -2, instance_id="i"), 40, metadata))
    run(c.consumer_group_heartbeat(join_request("s2", ["orders"], instance_id="i"), 50, metadata))
    run(c.consumer_group_heartbeat(join_request("x", ["orders"]), 60, metadata))
    run(c.consumer_group_heartbeat(heartbeat_request("x", -1), 70, metadata))
    grown = topics(orders=6, **{"orders-eu": 2})
    b = c.groups[GROUP].members["b"]
    request = dataclasses.replace(
        heartbeat_request("b", b.member_epoch),
        topic_partitions=[
            TopicPartitions(topic_id=t, partitions=sorted(ps))
            for t, ps in b.assigned_partitions.items()
        ],
    )
    run(c.consumer_group_heartbeat(request, 80, grown, wall_ms=1700))
    return c, log


def test_replaying_a_session_rebuilds_an_equal_state():
    c, log = session()
    group = c.groups[GROUP]
    assert {m.state for m in group.members.values()} > {MemberState.STABLE}  # mid-reconciliation
    assert group.resolved_regular_expressions
    fresh = ConsumerGroupCoordinator()
    for record in log:
        fresh.replay(through_bytes(record))
    assert snapshot(fresh.groups[GROUP]) == snapshot(group)


def test_loaded_members_get_session_timers_from_the_load_time():
    _, log = session()
    fresh = ConsumerGroupCoordinator()
    for record in log:
        fresh.replay(record)
    fresh.finish_load(100_000)
    assert fresh.next_deadline_ms() is not None
    assert fresh.next_deadline_ms() >= 100_000
    fresh.expire(100_000 + 45_000)
    assert fresh.groups[GROUP].members == {}


def test_tombstones_for_unknown_groups_are_ignored_and_deletion_is_replayed():
    c, log = session()
    fresh = ConsumerGroupCoordinator()
    for record in log:
        if record.value is None:
            fresh.replay(record)
    assert fresh.groups == {}
    for member_id in list(c.groups[GROUP].members):
        log += c.consumer_group_heartbeat(
            heartbeat_request(member_id, -1, instance_id="i" if member_id == "s2" else None),
            90,
            topics(orders=6),
        ).records
    log += c.delete_group(GROUP).records
    for record in log:
        fresh.replay(through_bytes(record))
    assert fresh.groups == {} == c.groups
