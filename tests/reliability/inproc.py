"""An in-process broker that tests stop and start again on the same data directory, and the
few requests they make to it (our own codec as the client, as in tests/wire.py).

Shared by the storage-error, corruption and ack-durability tests, and by the broker tests
that speak the wire protocol (the request builders here are what they send).
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import trio

from broker.server import serve
from client import KafkaClient
from protocol.errors import ErrorCode
from protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
from protocol.records import build_batch
from tests.conftest import broker_config
from tests.reliability.verify import read_partition
from tests.wire import WireClient

T0 = 1_700_000_000_000


@contextlib.asynccontextmanager
async def running(data_dir: Path, **settings: Any) -> AsyncIterator[Any]:
    """A broker serving `data_dir` for the block, stopped gracefully at its end."""
    async with trio.open_nursery() as nursery:
        broker = await nursery.start(serve, broker_config(data_dir, **settings))
        await broker.ready.wait()
        yield broker
        nursery.cancel_scope.cancel()


async def create(client: WireClient, *topics: str) -> None:
    """Create topics by asking for their metadata (auto-creation, num.partitions)."""
    response = await client.call(
        MetadataRequest(
            topics=[MetadataRequestTopic(name=t) for t in topics], allow_auto_topic_creation=True
        ),
        9,
    )
    assert all(t.error_code == 0 for t in response.topics), response


async def delete(client: WireClient, *topics: str) -> None:
    """Delete topics (DeleteTopics v6), each answered NONE."""
    response = await client.call(
        DeleteTopicsRequest(topics=[DeleteTopicState(name=t) for t in topics], timeout_ms=5000),
        6,
    )
    assert all(r.error_code == ErrorCode.NONE for r in response.responses), response


def create_topics_request(name: str, num_partitions: int) -> CreateTopicsRequest:
    """A CreateTopics of one topic, with the broker's default replication and configs."""
    return CreateTopicsRequest(
        topics=[
            CreatableTopic(
                name=name,
                num_partitions=num_partitions,
                replication_factor=-1,
                assignments=[],
                configs=[],
            )
        ],
        timeout_ms=30000,
        validate_only=False,
    )


def create_partitions_request(name: str, count: int) -> CreatePartitionsRequest:
    """A CreatePartitions raising one topic to `count` partitions."""
    return CreatePartitionsRequest(
        topics=[CreatePartitionsTopic(name=name, count=count, assignments=None)],
        timeout_ms=30000,
        validate_only=False,
    )


def produce_request(
    topic: str,
    value: bytes,
    *,
    acks: int = -1,
    partition: int = 0,
    timestamp: int = T0,
    timeout_ms: int = 5000,
) -> ProduceRequest:
    """A Produce of one batch of one record (no key, no headers) to one partition."""
    return ProduceRequest(
        acks=acks,
        timeout_ms=timeout_ms,
        topic_data=[
            TopicProduceData(
                name=topic,
                partition_data=[
                    PartitionProduceData(
                        index=partition, records=build_batch([(None, value, (), timestamp)])
                    )
                ],
            )
        ],
    )


async def produce(
    client: WireClient,
    topic: str,
    value: bytes,
    *,
    acks: int = -1,
    partition: int = 0,
    timestamp: int = T0,
) -> tuple[int, int]:
    """(error code, base offset) of a Produce of one record."""
    request = produce_request(topic, value, acks=acks, partition=partition, timestamp=timestamp)
    part = (await client.call(request, 9)).responses[0].partition_responses[0]
    return part.error_code, part.base_offset


async def commit(
    client: WireClient, group: str, topic: str, offset: int, partition: int = 0
) -> int:
    """Error code of a standalone OffsetCommit (generation -1, no member id)."""
    request = OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[
            OffsetCommitRequestTopic(
                name=topic,
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=partition, committed_offset=offset, committed_metadata=""
                    )
                ],
            )
        ],
    )
    return int((await client.call(request, 8)).topics[0].partitions[0].error_code)


async def contents(broker: Any, topic: str, partition: int = 0) -> dict[int, str]:
    """offset -> value of every record the broker serves from the partition (each served
    batch checked: whole, CRC, offsets going up)."""

    def read() -> dict[int, str]:
        with KafkaClient(broker.bootstrap_servers, timeout_s=10) as client:
            return read_partition(client, topic, partition).values

    return await trio.to_thread.run_sync(read)


async def committed(broker: Any, group: str, topic: str, partition: int = 0) -> int:
    """The group's committed offset for the partition, -1 when there is none."""

    def read() -> int:
        with KafkaClient(broker.bootstrap_servers, timeout_s=10) as client:
            got = client.committed_offsets(group).get((topic, partition))
            return got.offset if got else -1

    return await trio.to_thread.run_sync(read)


async def produce_values(client: WireClient, topic: str, values: list[str]) -> dict[int, str]:
    """Produce each value as its own batch (acks=all), the i-th with timestamp T0 + i;
    returns offset -> value."""
    out = {}
    for i, value in enumerate(values):
        code, base = await produce(client, topic, value.encode(), timestamp=T0 + i)
        assert code == ErrorCode.NONE, ErrorCode(code)
        out[base] = value
    return out
