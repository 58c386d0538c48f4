"""The group APIs across an online upgrade, through real sockets: a classic member (JoinGroup,
SyncGroup, Heartbeat) in a group that a ConsumerGroupHeartbeat upgrades, ConsumerGroupDescribe
v1's member types, bad input answered with an error code on a connection that stays open,
and the upgraded group after a restart.
"""

from __future__ import annotations

from pathlib import Path

import trio

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
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment
from tests.reliability.inproc import create_topics_request, running
from tests.wire import WireClient

GROUP = "migrating"


def _join(member_id: str, metadata: bytes) -> JoinGroupRequest:
    return JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=10_000,
        rebalance_timeout_ms=10_000,
        member_id=member_id,
        protocol_type="consumer",
        protocols=[JoinGroupRequestProtocol(name="range", metadata=metadata)],
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
            modern = await client.call(
                ConsumerGroupHeartbeatRequest(
                    group_id=GROUP,
                    member_id="modern",
                    member_epoch=0,
                    rebalance_timeout_ms=10_000,
                    subscribed_topic_names=["a"],
                    topic_partitions=[],
                ),
                1,
            )
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
