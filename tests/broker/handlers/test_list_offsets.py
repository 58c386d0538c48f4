"""ListOffsets through the in-process broker and real frames (our own codec as the client):
Kafka's special timestamps and timestamp lookups at every served version, and each
per-partition error.
"""

from __future__ import annotations

from typing import Any

import trio

from protocol.errors import ErrorCode
from protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsRequest,
    ListOffsetsTopic,
)
from tests.reliability.inproc import T0, create, produce, running
from tests.wire import WireClient

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -1, -2, -3, -4


def list_request(
    topic: str, timestamp: int, *, partition: int = 0, leader_epoch: int = -1
) -> ListOffsetsRequest:
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=0,
        topics=[
            ListOffsetsTopic(
                name=topic,
                partitions=[
                    ListOffsetsPartition(
                        partition_index=partition,
                        current_leader_epoch=leader_epoch,
                        timestamp=timestamp,
                    )
                ],
            )
        ],
    )


async def lookup(client: WireClient, version: int, *args: Any, **kw: Any) -> tuple[int, ...]:
    """(error code, offset, timestamp) of the one partition asked for."""
    response = await client.call(list_request(*args, **kw), version)
    (topic,) = response.topics
    (part,) = topic.partitions
    return part.error_code, part.offset, part.timestamp


async def test_every_version_answers_special_timestamps_and_lookups(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            for delta in (0, 10, 5):  # the largest timestamp is at offset 1
                await produce(client, "t", b"v", timestamp=T0 + delta)
            ok = ErrorCode.NONE
            for version in ListOffsetsRequest.VERSIONS:
                assert await lookup(client, version, "t", LATEST) == (ok, 3, -1)
                assert await lookup(client, version, "t", EARLIEST) == (ok, 0, -1)
                assert await lookup(client, version, "t", T0 + 7) == (ok, 1, T0 + 10)
                assert await lookup(client, version, "t", T0 + 11) == (ok, -1, -1)
                response = await client.call(list_request("t", LATEST), version)
                leader_epoch = response.topics[0].partitions[0].leader_epoch
                assert leader_epoch == (0 if version >= 4 else -1)
            assert await lookup(client, 7, "t", MAX_TIMESTAMP) == (ok, 1, T0 + 10)
            assert await lookup(client, 8, "t", EARLIEST_LOCAL) == (ok, 0, -1)


async def test_each_partition_gets_its_own_error(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            unknown = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)
            assert await lookup(client, 8, "missing", LATEST) == unknown
            assert await lookup(client, 8, "t", LATEST, partition=3) == unknown
            assert await lookup(client, 8, "t", LATEST, leader_epoch=1) == (
                ErrorCode.UNKNOWN_LEADER_EPOCH,
                -1,
                -1,
            )
            broker.topics.partition("t", 0).leader_epoch = 1
            assert await lookup(client, 8, "t", LATEST, leader_epoch=0) == (
                ErrorCode.FENCED_LEADER_EPOCH,
                -1,
                -1,
            )
            # Below v4 the request carries no leader epoch, so nothing is fenced.
            assert await lookup(client, 3, "t", LATEST) == (ErrorCode.NONE, 0, -1)
