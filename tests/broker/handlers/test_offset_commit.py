"""Committed offsets meet the topic registry: a commit to a topic or partition that does not
exist is refused per partition (Kafka's KafkaApis.handleOffsetCommitRequest), and deleting
a topic deletes every group's offsets for it (Kafka's onPartitionsDeleted), across a
restart too.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import trio

from protocol.errors import ErrorCode
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from tests.reliability.inproc import commit, committed, create, delete, produce, running
from tests.wire import WireClient


def commit_request(group: str, offsets: dict[tuple[str, int], int]) -> OffsetCommitRequest:
    """A standalone OffsetCommit (generation -1, no member) of these offsets."""
    topics: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=""
            )
        )
    return OffsetCommitRequest(
        group_id=group,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequestTopic(name=t, partitions=p) for t, p in topics.items()],
    )


def _codes(response: Any) -> dict[tuple[str, int], int]:
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


async def test_a_commit_to_a_missing_topic_or_partition_is_refused_and_the_rest_committed(
    tmp_path: Any,
) -> None:
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            for version in (1, 7, 8, 9):
                group = f"g{version}"
                request = commit_request(group, {("t", 0): 3, ("t", 7): 4, ("missing", 0): 5})
                response = await client.call(request, version)
                assert _codes(response) == {
                    ("t", 0): ErrorCode.NONE,
                    ("t", 7): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                }, version
                assert await committed(broker, group, "t") == 3
                assert await committed(broker, group, "t", 7) == -1
                assert await committed(broker, group, "missing") == -1
            # Nothing valid: the group is not even created.
            response = await client.call(commit_request("nobody", {("missing", 0): 1}), 9)
            assert _codes(response) == {("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            assert broker.coordinator.coordinator.group("nobody") is None


async def test_deleting_a_topic_deletes_its_offsets_and_an_emptied_group(tmp_path: Any) -> None:
    with trio.fail_after(60):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t", "u")
            await produce(client, "t", b"a")
            assert await commit(client, "only-t", "t", 1) == ErrorCode.NONE
            assert await commit(client, "both", "t", 1) == ErrorCode.NONE
            assert await commit(client, "both", "u", 0) == ErrorCode.NONE
            await delete(client, "t")
            coordinator = broker.coordinator.coordinator
            assert coordinator.group("only-t") is None  # Empty and no offsets left: dead
            assert set(coordinator.group("both").offsets) == {("u", 0)}
            await create(client, "t")  # the same name again
            assert await committed(broker, "both", "t") == -1
            assert await committed(broker, "only-t", "t") == -1
        async with running(tmp_path) as broker:
            assert broker.coordinator.coordinator.group("only-t") is None
            assert await committed(broker, "both", "t") == -1
            assert await committed(broker, "both", "u") == 0


async def test_offset_delete_of_a_missing_topic_is_unknown_topic_or_partition(
    tmp_path: Any,
) -> None:
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t", "u")
            assert await commit(client, "g", "t", 1) == ErrorCode.NONE
            assert await commit(client, "g", "u", 1) == ErrorCode.NONE
            request = OffsetDeleteRequest(
                group_id="g",
                topics=[
                    OffsetDeleteRequestTopic(
                        name=name, partitions=[OffsetDeleteRequestPartition(partition_index=0)]
                    )
                    for name in ("t", "missing")
                ],
            )
            response = await client.call(request, 0)
            assert response.error_code == ErrorCode.NONE
            assert _codes(response) == {
                ("t", 0): ErrorCode.NONE,
                ("missing", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            }
            assert await committed(broker, "g", "t") == -1
            assert await committed(broker, "g", "u") == 1
            # A group that does not exist: the coordinator's top-level answer alone.
            response = await client.call(replace(request, group_id="nobody"), 0)
            assert (response.error_code, response.topics) == (ErrorCode.GROUP_ID_NOT_FOUND, [])


async def test_a_one_partition_answer_kept_encoded_is_the_answer_at_every_version(
    tmp_path: Any,
) -> None:
    """A successful one-partition commit is answered from bytes the handler keeps per
    answer and version: each version gets its own shape (throttle_time_ms from v3, flexible
    from v8), the same as the answer encoded afresh, and the commit still takes effect."""
    from broker.handlers.offset_commit import _ENCODED
    from protocol.messages.offset_commit import OffsetCommitResponse
    from protocol.schema import encode_chunks

    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            for offset in (5, 6):  # the second time from the kept bytes
                for version in range(1, 10):
                    request = commit_request("g", {("t", 0): offset * 10 + version})
                    response = await client.call(request, version)
                    assert _codes(response) == {("t", 0): ErrorCode.NONE}, version
                    assert await committed(broker, "g", "t") == offset * 10 + version
            kept = [(v, e) for (_, v), e in _ENCODED.items() if e.response.topics[0].name == "t"]
            assert {v for v, _ in kept} >= set(range(1, 10))
            for version, encoded in kept:
                assert isinstance(encoded.response, OffsetCommitResponse)
                assert encoded.body == b"".join(encode_chunks(encoded.response, version))
            # An empty commit creates nothing and asks no coordinator, as before.
            response = await client.call(replace(commit_request("none", {}), topics=[]), 9)
            assert response.topics == []
            assert broker.coordinator.coordinator.group("none") is None
