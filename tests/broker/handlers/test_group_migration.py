"""The group APIs across an online upgrade, through real sockets: a classic member (JoinGroup,
SyncGroup, Heartbeat) in a group that a ConsumerGroupHeartbeat upgrades, ConsumerGroupDescribe
v1's member types, bad input answered with an error code on a connection that stays open,
the upgraded group after a restart, a classic member removed at its join deadline (its
rebalance timeout, shorter than its session), and a LeaveGroup whose records the disk
refuses.
"""

from __future__ import annotations

import errno
from pathlib import Path
from typing import Any

import pytest
import trio

import storage.log
import storage.segment
from protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import ErrorCode
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.leave_group import LeaveGroupRequest, LeaveGroupResponse, MemberIdentity
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.broker.test_storage_errors import FaultyOs
from tests.reliability.inproc import create_topics_request, running
from tests.wire import WireClient

GROUP = "migrating"


def _join(
    member_id: str, metadata: bytes, session_ms: int = 10_000, rebalance_ms: int = 10_000
) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=metadata)],
    )


_SUBSCRIPTION = encode_subscription(ConsumerProtocolSubscription(topics=["a"]), 0)
_MODERN = ConsumerGroupHeartbeatRequest(
    group_id=GROUP,
    member_id="modern",
    member_epoch=0,
    rebalance_timeout_ms=10_000,
    subscribed_topic_names=["a"],
    topic_partitions=[],
)


async def _describe(client: WireClient) -> dict[str, int]:
    request = ConsumerGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=False)
    (group,) = (await client.call(request, 1)).groups
    assert group.error_code == ErrorCode.NONE
    return {m.member_id: m.member_type for m in group.members}


async def test_a_classic_member_is_served_inside_the_upgraded_group(tmp_path: Path) -> None:
    subscription = encode_subscription(ConsumerProtocolSubscription(topics=["a"]), 0)
    with trio.fail_after(20):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await client.call(create_topics_request("a", 4), 5)
            joined = await client.call(_join("", subscription), 3)  # v3: no MEMBER_ID_REQUIRED
            assert joined.error_code == ErrorCode.NONE
            member_id, generation = joined.member_id, joined.generation_id
            everything = ConsumerProtocolAssignment(
                assigned_partitions=[TopicPartition(topic="a", partitions=[0, 1, 2, 3])]
            )
            synced = await client.call(
                SyncGroupRequest(
                    group_id=GROUP,
                    generation_id=generation,
                    member_id=member_id,
                    assignments=[
                        SyncGroupRequestAssignment(
                            member_id=member_id, assignment=encode_assignment(everything, 0)
                        )
                    ],
                ),
                3,
            )
            assert synced.error_code == ErrorCode.NONE

            # The consumer-protocol member upgrades the group; it waits for the partitions.
            modern = await client.call(_MODERN, 1)
            assert modern.error_code == ErrorCode.NONE
            assert await _describe(client) == {member_id: 0, "modern": 1}

            beat = HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=member_id)
            assert (await client.call(beat, 3)).error_code == ErrorCode.REBALANCE_IN_PROGRESS
            # Bad subscription bytes: an error code, and the connection stays usable.
            bad = await client.call(_join(member_id, b"\xff"), 5)
            assert bad.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
            rejoined = await client.call(_join(member_id, subscription), 5)
            assert rejoined.error_code == ErrorCode.NONE
            assert rejoined.generation_id > generation
            assert (rejoined.leader, rejoined.members) == ("", [])
            synced = await client.call(
                SyncGroupRequest(
                    group_id=GROUP,
                    generation_id=rejoined.generation_id,
                    member_id=member_id,
                    protocol_type="consumer",
                    protocol_name="range",
                    assignments=[],
                ),
                5,
            )
            assert synced.error_code == ErrorCode.NONE
            (kept,) = decode_assignment(synced.assignment).assigned_partitions
            assert (kept.topic, len(kept.partitions)) == ("a", 2)
            before = await _describe(client)

        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            assert await _describe(client) == before


async def _upgraded(client: WireClient, session_ms: int, rebalance_ms: int) -> tuple[str, int]:
    """A classic member holding all of "a", then "modern" upgrading the group; returns the
    classic member's id and generation."""
    await client.call(create_topics_request("a", 4), 5)
    joined = await client.call(_join("", _SUBSCRIPTION, session_ms, rebalance_ms), 3)
    assert joined.error_code == ErrorCode.NONE
    everything = ConsumerProtocolAssignment(
        assigned_partitions=[TopicPartition(topic="a", partitions=[0, 1, 2, 3])]
    )
    mine = SyncGroupRequestAssignment(
        member_id=joined.member_id, assignment=encode_assignment(everything, 0)
    )
    synced = await client.call(
        SyncGroupRequest(
            group_id=GROUP,
            generation_id=joined.generation_id,
            member_id=joined.member_id,
            assignments=[mine],
        ),
        3,
    )
    assert synced.error_code == ErrorCode.NONE
    assert (await client.call(_MODERN, 1)).error_code == ErrorCode.NONE
    return joined.member_id, joined.generation_id


async def test_a_classic_member_asked_to_rejoin_is_removed_at_its_join_deadline(
    tmp_path: Path, autojump_clock: Any
) -> None:
    """Its heartbeat sets a join deadline (its rebalance timeout, 8 s) before every deadline
    the timer knew (its session, 30 s; the consumer member's, 45 s): the heartbeat wakes the
    timer, which removes the member at 8 s, not at the next deadline it knew of."""
    async with running(tmp_path) as broker:  # virtual time: no real deadline needed
        client = await WireClient.connect(broker)
        member_id, generation = await _upgraded(client, 30_000, 8_000)
        beat = HeartbeatRequest(group_id=GROUP, generation_id=generation, member_id=member_id)
        assert (await client.call(beat, 3)).error_code == ErrorCode.REBALANCE_IN_PROGRESS
        asked = trio.current_time()
        await trio.sleep_until(asked + 7.9)
        assert await _describe(client) == {member_id: 0, "modern": 1}
        await trio.sleep_until(asked + 8.001)
        assert await _describe(client) == {"modern": 1}


@pytest.mark.expect_errors  # the coordinator runtime logs the failed __consumer_offsets write
async def test_a_classic_leave_whose_records_the_disk_refuses_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """GroupCoordinatorService.leaveGroup: the failed append's error at the top level
    (NOT_COORDINATOR for a storage error); the member is still in the group, and leaves
    once the disk takes writes again."""
    fault = FaultyOs(storage.segment.os, "/__consumer_offsets-")
    monkeypatch.setattr(storage.segment, "os", fault)
    monkeypatch.setattr(storage.log, "os", fault)
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            member_id, _ = await _upgraded(client, 10_000, 10_000)
            leave = LeaveGroupRequest(group_id=GROUP, members=[MemberIdentity(member_id=member_id)])
            fault.failing = errno.EIO
            refused = await client.call(leave, 3)
            assert refused == LeaveGroupResponse(error_code=ErrorCode.NOT_COORDINATOR)
            assert fault.failures
            fault.failing = None
            assert await _describe(client) == {member_id: 0, "modern": 1}
            left = await client.call(leave, 3)
            assert [m.error_code for m in left.members] == [ErrorCode.NONE]
            assert await _describe(client) == {"modern": 1}
