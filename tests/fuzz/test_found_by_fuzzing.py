"""Inputs the fuzzers found that made the broker fail, kept as plain tests.

Each test sends the smallest request that showed the failure, over a real connection to
the in-process broker. The conftest guard fails a test when broker code logs at ERROR, so
"answered cleanly" here means: a well-formed answer (or a clean close, where Kafka closes),
and no exception the dispatch site had to catch.
"""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import pytest
import trio

from coordinator.consumer import ConsumerGroupCoordinator
from coordinator.consumer.coordinator import MAX_CACHED_PATTERNS
from protocol.errors import ErrorCode
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.wire import WireClient, read_frame, request_bytes

ZERO_ID = uuid.UUID(int=0)


@pytest.mark.parametrize("version", [10, 11])
@pytest.mark.parametrize("topic_id", [ZERO_ID, uuid.UUID(int=7)], ids=["zero-id", "unknown-id"])
async def test_metadata_before_v12_with_a_null_topic_name_is_answered_not_crashed(
    broker: Any, version: int, topic_id: uuid.UUID
) -> None:
    # MetadataRequestTopic.name is nullable from v10, but MetadataResponseTopic.name only
    # from v12: the broker answered UNKNOWN_TOPIC_ID with a null name, which cannot be
    # encoded at v10/v11 ("None in a non-nullable compact string"), so the connection
    # crashed. Kafka refuses null names and topic ids below v12 with INVALID_REQUEST
    # (KafkaApis.handleTopicMetadataRequest).
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        request = MetadataRequest(
            topics=[MetadataRequestTopic(topic_id=topic_id, name=None)],
            allow_auto_topic_creation=False,
        )
        await client.send_raw(request_bytes(request, version, correlation_id=5))
        reply = await read_frame(client.stream)
        if reply is not None:  # answered: with an error for the topic, in a valid response
            from protocol.frames import parse_response_header
            from protocol.messages.metadata import MetadataResponse
            from protocol.schema import decode

            _, pos = parse_response_header(reply, True)
            response = decode(MetadataResponse, version, reply, pos)
            assert [t.error_code for t in response.topics] == [ErrorCode.INVALID_REQUEST]
            assert (await client.call(ApiVersionsRequest(), 3)).error_code == ErrorCode.NONE
        await client.aclose()


async def test_an_invalid_subscription_regex_is_refused_without_writing_to_stderr(
    broker: Any, capfd: pytest.CaptureFixture[str]
) -> None:
    # The live fuzz's ConsumerGroupHeartbeat with a random SubscribedTopicRegex: google-re2
    # printed "E0000 ... re2.cc:242] Error parsing ..." on the process's stderr, outside the
    # broker's log (a line that is not JSON in a JSON log). Kafka answers
    # INVALID_REGULAR_EXPRESSION and logs nothing of the kind.
    with trio.fail_after(10):
        client = await WireClient.connect(broker)
        request = ConsumerGroupHeartbeatRequest(
            group_id="fuzzed",
            member_id=str(uuid.uuid4()),
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_regex="ˋȲ)Ķȟ",
            topic_partitions=[],
        )
        response = await client.call(request, 1)
        await client.aclose()
    assert response.error_code == ErrorCode.INVALID_REGULAR_EXPRESSION
    assert capfd.readouterr().err == ""


def test_distinct_subscription_regexes_do_not_grow_the_broker_without_bound() -> None:
    # Found looking into the live fuzz broker's memory, which rose through the run: every
    # distinct SubscribedTopicRegex a heartbeat carried stayed compiled in the coordinator's
    # cache (about 2 KiB each), also after its member left. Checked on the coordinator
    # itself: RSS would not show 5,000 patterns reliably.
    c = ConsumerGroupCoordinator()
    for i in range(5000):
        member = str(uuid.UUID(int=i + 1))
        join = ConsumerGroupHeartbeatRequest(
            group_id="fuzzed",
            member_id=member,
            member_epoch=0,
            rebalance_timeout_ms=30000,
            subscribed_topic_regex=f"topic-{i}-.*",
            topic_partitions=[],
        )
        c.consumer_group_heartbeat(join, i, {})
        leave = dataclasses.replace(join, member_epoch=-1, subscribed_topic_regex=None)
        c.consumer_group_heartbeat(leave, i, {})
    assert len(c._patterns) <= MAX_CACHED_PATTERNS
