"""OffsetForLeaderEpoch against a real broker, driven by kafka-python's KafkaAdminClient (in a
worker thread) for what an admin client exposes, and our own wire client (tests.wire) for
the answers as they are on the wire.
"""

from __future__ import annotations

import trio
from kafka import KafkaAdminClient

from protocol.errors import ErrorCode
from protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from tests.broker.handlers.helpers import (
    admin,
    append_records,
    running_broker,
)
from tests.wire import wire_call


async def test_offset_for_leader_epoch_ends_the_only_epoch_at_the_log_end(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"t": {}})
            append_records(broker, "t", 3)
            request = OffsetForLeaderEpochRequest(
                replica_id=-1,
                topics=[
                    OffsetForLeaderTopic(
                        topic="t",
                        partitions=[
                            OffsetForLeaderPartition(
                                partition=0, current_leader_epoch=0, leader_epoch=0
                            ),
                            OffsetForLeaderPartition(
                                partition=1, current_leader_epoch=0, leader_epoch=0
                            ),
                        ],
                    ),
                    OffsetForLeaderTopic(
                        topic="t",
                        partitions=[
                            OffsetForLeaderPartition(
                                partition=0, current_leader_epoch=-1, leader_epoch=7
                            ),
                            OffsetForLeaderPartition(
                                partition=0, current_leader_epoch=1, leader_epoch=0
                            ),
                        ],
                    ),
                ],
            )
            response = await wire_call(broker, request, 4)
            answers = [
                (p.error_code, p.leader_epoch, p.end_offset)
                for t in response.topics
                for p in t.partitions
            ]
            assert answers == [
                (ErrorCode.NONE, 0, 3),
                (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
                (ErrorCode.NONE, -1, -1),
                (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1),
            ]
