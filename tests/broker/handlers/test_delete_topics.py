"""DeleteTopics against a real broker, driven by kafka-python's KafkaAdminClient (in a worker
thread) for what an admin client exposes, and our own wire client (tests.wire) for the
answers as they are on the wire.
"""

from __future__ import annotations

import uuid

import trio
from kafka import KafkaAdminClient

from protocol.errors import ErrorCode
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from tests.broker.handlers.helpers import (
    admin,
    running_broker,
)
from tests.wire import wire_call


async def test_delete_topics_by_name_and_by_id_removes_topics_and_logs(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(
                broker,
                KafkaAdminClient.create_topics,
                {"by-name": {"num_partitions": 2}, "by-id": {}},
            )
            topic_id = broker.topics.get("by-id").topic_id
            result = await admin(broker, KafkaAdminClient.delete_topics, ["by-name", topic_id])
            deleted = {(t["name"], t["error_code"]) for t in result["topics"]}
            assert deleted == {("by-name", 0), ("by-id", 0)}
            assert broker.topics.get("by-name") is None
            assert broker.topics.get("by-id") is None
            assert not (tmp_path / "by-name-1").exists()
            listed = await admin(broker, KafkaAdminClient.list_topics)
            assert "by-name" not in listed
            assert "by-id" not in listed


async def test_delete_topics_answers_unknown_names_and_ids_and_keeps_consumer_offsets(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            unknown_id = uuid.uuid4()
            result = await admin(
                broker,
                KafkaAdminClient.delete_topics,
                ["missing", unknown_id, "__consumer_offsets"],
                raise_errors=False,
            )
            codes = {t["name"] or t["topic_id"]: t["error_code"] for t in result["topics"]}
            assert codes == {
                "missing": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                str(unknown_id): ErrorCode.UNKNOWN_TOPIC_ID,
                "__consumer_offsets": ErrorCode.INVALID_TOPIC_EXCEPTION,
            }
            assert broker.topics.get("__consumer_offsets") is not None


async def test_delete_topics_refuses_entries_kafka_refuses(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"kept": {}, "twice": {}})
            kept_id = broker.topics.get("kept").topic_id
            request = DeleteTopicsRequest(
                topics=[
                    DeleteTopicState(name="kept", topic_id=kept_id),
                    DeleteTopicState(name="twice"),
                    DeleteTopicState(name="twice"),
                    DeleteTopicState(name=None),
                ],
                timeout_ms=30000,
            )
            response = await wire_call(broker, request, 6)
            answers = sorted(
                (r.name or "", r.error_code, r.error_message) for r in response.responses
            )
            assert answers == [
                ("", ErrorCode.INVALID_REQUEST, "Neither topic name nor id were specified."),
                (
                    "kept",
                    ErrorCode.INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                ),
                ("twice", ErrorCode.INVALID_REQUEST, "Duplicate topic name."),
            ]
            assert broker.topics.get("kept") is not None
            assert broker.topics.get("twice") is not None


async def test_delete_topics_when_deletion_is_disabled(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path, **{"delete.topic.enable": "false"}) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"stays": {}})
            result = await admin(
                broker, KafkaAdminClient.delete_topics, ["stays"], raise_errors=False
            )
            assert [(t["name"], t["error_code"]) for t in result["topics"]] == [
                ("stays", ErrorCode.TOPIC_DELETION_DISABLED)
            ]
            assert broker.topics.get("stays") is not None
