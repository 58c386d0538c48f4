"""Fetch through the in-process broker and real frames (our own codec as the client): every
served version (by name up to v12, by topic id from v13), each per-partition error, the
request-level refusal, and the long poll that an append ends.
"""

from __future__ import annotations

import uuid
from typing import Any

import trio
import trio.testing

from protocol.errors import ErrorCode
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.records import iter_batches
from protocol.releases import accepts
from tests.reliability.inproc import create, produce, running
from tests.wire import WireClient


def fetch_request(
    topic: str | uuid.UUID,
    *partitions: int,
    offset: int = 0,
    leader_epoch: int = -1,
    max_wait_ms: int = 0,
    min_bytes: int = 0,
    isolation_level: int = 0,
) -> FetchRequest:
    by_id = isinstance(topic, uuid.UUID)
    return FetchRequest(
        max_wait_ms=max_wait_ms,
        min_bytes=min_bytes,
        isolation_level=isolation_level,
        session_id=0,
        topics=[
            FetchTopic(
                topic="" if by_id else topic,
                topic_id=topic if by_id else uuid.UUID(int=0),
                partitions=[
                    FetchPartition(
                        partition=p,
                        current_leader_epoch=leader_epoch,
                        fetch_offset=offset,
                        partition_max_bytes=1 << 20,
                    )
                    for p in partitions or (0,)
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


def base_offsets(part: Any) -> list[int]:
    """The base offsets of the batches a partition's answer holds."""
    return [h.base_offset for _, h in iter_batches(bytes(part.records or b""))]


async def test_every_version_returns_the_batches_from_the_fetch_offset(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            for value in (b"a", b"b", b"c"):
                assert (await produce(client, "t", value))[0] == ErrorCode.NONE
            topic_id = broker.topics.get("t").topic_id
            # The versions served with kafka.version unset (v4 on); v0-3 under older releases
            # are in tests/broker/handlers/test_legacy_formats.py.
            for version in FetchRequest.VERSIONS:
                if not accepts(None, FetchRequest.API_KEY, version):
                    continue
                wanted = topic_id if version >= 13 else "t"
                response = await client.call(fetch_request(wanted, offset=1), version)
                assert response.session_id == 0
                (topic,) = response.responses
                assert (topic.topic_id if version >= 13 else topic.topic) == wanted
                (part,) = topic.partitions
                assert part.error_code == ErrorCode.NONE, version
                assert part.high_watermark == 3
                assert part.last_stable_offset == 3
                assert part.log_start_offset == (0 if version >= 5 else -1)
                assert base_offsets(part) == [1, 2], version


async def test_each_partition_gets_its_own_error(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await produce(client, "t", b"a")

            async def code(version: int, *args: Any, **kw: Any) -> int:
                response = await client.call(fetch_request(*args, **kw), version)
                return response.responses[0].partitions[0].error_code

            assert await code(12, "missing") == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert await code(12, "t", 5) == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            assert await code(13, uuid.uuid4()) == ErrorCode.UNKNOWN_TOPIC_ID
            assert await code(12, "t", offset=2) == ErrorCode.OFFSET_OUT_OF_RANGE
            assert await code(12, "t", offset=1) == ErrorCode.NONE  # the log end: empty
            assert await code(12, "t", leader_epoch=1) == ErrorCode.UNKNOWN_LEADER_EPOCH
            assert await code(12, "t", leader_epoch=0) == ErrorCode.NONE
            broker.topics.partition("t", 0).leader_epoch = 1
            assert await code(12, "t", leader_epoch=0) == ErrorCode.FENCED_LEADER_EPOCH


async def test_an_unknown_isolation_level_is_an_invalid_request(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            response = await client.call(fetch_request("t", isolation_level=2), 12)
            assert response.error_code == ErrorCode.INVALID_REQUEST


async def test_a_waiting_fetch_returns_when_a_batch_is_appended(tmp_path):
    with trio.fail_after(10):  # the fetch would wait 60 s for nothing
        async with running(tmp_path) as broker:
            producer = await WireClient.connect(broker)
            consumer = await WireClient.connect(broker)
            await create(producer, "t")
            got: list[Any] = []

            async def long_poll() -> None:
                request = fetch_request("t", max_wait_ms=60_000, min_bytes=1)
                got.append(await consumer.call(request, 12))

            async with trio.open_nursery() as nursery:
                nursery.start_soon(long_poll)
                await trio.testing.wait_all_tasks_blocked()
                assert broker.topics.partition("t", 0).waiters  # parked, not answered
                await produce(producer, "t", b"wake")
            # Back well before max_wait_ms, with the batch.
            (part,) = got[0].responses[0].partitions
            assert base_offsets(part) == [0]


async def test_a_waiting_fetch_times_out_empty(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            start = trio.current_time()
            response = await client.call(fetch_request("t", max_wait_ms=100, min_bytes=1), 12)
            assert trio.current_time() - start >= 0.1
            (part,) = response.responses[0].partitions
            assert (part.error_code, base_offsets(part)) == (ErrorCode.NONE, [])
            assert not broker.topics.partition("t", 0).waiters


async def test_a_partition_in_error_carries_empty_records_never_null(tmp_path):
    # Kafka's FetchResponse.partitionResponse sets MemoryRecords.EMPTY on every partition,
    # errors included; librdkafka rejects a response with null records and never sees the
    # OFFSET_OUT_OF_RANGE inside it.
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await produce(client, "t", b"a")
            for version in FetchRequest.VERSIONS:
                if not accepts(None, FetchRequest.API_KEY, version):
                    continue  # v0-3: only under older releases (test_legacy_formats.py)
                for args, kw in (((("t",)), {"offset": 5}), ((("missing",)), {})):
                    if version >= 13 and args == ("missing",):
                        args = (uuid.uuid4(),)
                    response = await client.call(fetch_request(*args, **kw), version)
                    (part,) = response.responses[0].partitions
                    assert part.error_code != ErrorCode.NONE
                    assert part.records is not None, version
                    assert bytes(part.records) == b"", version


async def test_read_committed_gets_an_empty_aborted_transactions_list(tmp_path):
    # Kafka's UnifiedLog.read lists the aborted transactions for read_committed (none here:
    # an empty list) and leaves the field null for read_uncommitted.
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await produce(client, "t", b"a")
            for level, expected in ((1, []), (0, None)):
                response = await client.call(fetch_request("t", isolation_level=level), 12)
                (part,) = response.responses[0].partitions
                assert part.aborted_transactions == expected, level
