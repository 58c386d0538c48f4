"""An acknowledgement that promises durability is sent only after an fsync covers it.

The crash cycles cannot see this: a SIGKILL leaves the page cache intact, so data that was
acknowledged before its fsync survives a process crash anyway. Only an OS crash or power
loss would lose it. So these tests check the promise itself, in process: when the answer to
a Produce with acks=all, or to an OffsetCommit, reaches the client in the default
durability mode (group commit, log.flush.interval.ms=5), the log's `flushed_offset` must
already cover what was acknowledged.

Each case is checked for the first write to a log after it was opened (a new topic, or any
log after a restart), and for later writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from broker.server import serve
from protocol.errors import ErrorCode
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records import build_batch
from tests.conftest import broker_config
from tests.wire import WireClient

GROUP = "durable-group"


async def _produce(client: WireClient, topic: str, value: bytes) -> int:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name=topic,
                partition_data=[
                    PartitionProduceData(
                        index=0, records=build_batch([(None, value, (), 1_700_000_000_000)])
                    )
                ],
            )
        ],
    )
    part = (await client.call(request, 9)).responses[0].partition_responses[0]
    assert part.error_code == ErrorCode.NONE
    return int(part.base_offset)


async def _commit(client: WireClient, topic: str, offset: int) -> None:
    request = OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=offset, committed_metadata=""
                    )
                ],
            )
        ],
    )
    response = await client.call(request, 8)
    assert response.topics[0].partitions[0].error_code == ErrorCode.NONE


def _unflushed(log: Any, acknowledged_end: int) -> str | None:
    if log.flushed_offset >= acknowledged_end:
        return None
    return (
        f"{log.path.name}: acknowledged up to offset {acknowledged_end}, "
        f"fsynced only below {log.flushed_offset}"
    )


async def _check_writes(broker: Any, topic: str) -> list[str]:
    problems = []
    client = await WireClient.connect(broker)
    try:
        await client.call(
            MetadataRequest(
                topics=[MetadataRequestTopic(name=topic)], allow_auto_topic_creation=True
            ),
            9,
        )
        plog = broker.topics.get(topic).partitions[0].log
        offsets = (
            broker.coordinator.offsets_topic()
            .partitions[broker.coordinator.coordinator.partition_for(GROUP)]
            .log
        )
        for i in range(3):
            base = await _produce(client, topic, b"v%d" % i)
            problems.append(_unflushed(plog, base + 1))
            await _commit(client, topic, base + 1)
            problems.append(_unflushed(offsets, offsets.log_end_offset))
    finally:
        await client.aclose()
    return [p for p in problems if p]


async def test_acks_all_and_commits_are_fsynced_before_the_answer(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve, broker_config(tmp_path / "data"))
            await broker.ready.wait()
            problems = await _check_writes(broker, "durable")
            nursery.cancel_scope.cancel()
    assert not problems, "\n".join(problems)


async def test_acks_all_and_commits_after_a_restart_are_fsynced_before_the_answer(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        for _ in range(2):  # the second start reopens logs that already hold data
            async with trio.open_nursery() as nursery:
                broker = await nursery.start(serve, broker_config(tmp_path / "data"))
                await broker.ready.wait()
                problems = await _check_writes(broker, "durable")
                nursery.cancel_scope.cancel()
    assert not problems, "\n".join(problems)
