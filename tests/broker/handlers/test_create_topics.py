"""CreateTopics against a real broker, driven by kafka-python's KafkaAdminClient (in a worker
thread) for what an admin client exposes, and our own wire client (tests.wire) for the
answers as they are on the wire.
"""

from __future__ import annotations

import uuid

import trio
from kafka import KafkaAdminClient

from broker.config import TOPIC_CONFIGS
from protocol.errors import ErrorCode
from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from tests.broker.handlers.helpers import (
    admin,
    by_name,
    running_broker,
)
from tests.wire import wire_call


async def test_create_topics_applies_broker_defaults_and_reports_the_new_topic(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path, **{"num.partitions": 2}) as broker:
            result = await admin(
                broker,
                KafkaAdminClient.create_topics,
                {
                    "orders": {
                        "num_partitions": 3,
                        "replication_factor": 1,
                        "configs": {"retention.ms": "3600000"},
                    },
                    "defaults": {},
                },
            )
            topics = by_name(result["topics"])
            orders, defaults = topics["orders"], topics["defaults"]
            assert orders["error_code"] == 0
            assert orders["error_message"] is None
            assert (orders["num_partitions"], orders["replication_factor"]) == (3, 1)
            assert (defaults["num_partitions"], defaults["replication_factor"]) == (2, 1)
            assert uuid.UUID(orders["topic_id"]) == broker.topics.get("orders").topic_id
            assert set(orders["configs"]) == set(TOPIC_CONFIGS)
            assert orders["configs"]["retention.ms"]["value"] == "3600000"
            assert orders["configs"]["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
            assert orders["configs"]["cleanup.policy"] == {
                "value": "delete",
                "read_only": False,
                "config_source": "DEFAULT_CONFIG",
                "is_sensitive": False,
            }

            assert len(broker.topics.get("orders").partitions) == 3
            assert broker.topics.get("orders").configs == {"retention.ms": "3600000"}
            assert (tmp_path / "orders-2").is_dir()
            described = by_name(
                await admin(broker, KafkaAdminClient.describe_topics, ["orders", "defaults"])
            )
            assert len(described["orders"]["partitions"]) == 3
            assert len(described["defaults"]["partitions"]) == 2


async def test_create_topics_refuses_each_bad_topic_with_kafkas_error(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"taken": {}})
            result = await admin(
                broker,
                KafkaAdminClient.create_topics,
                {
                    "taken": {},
                    "__consumer_offsets": {},
                    "bad name!": {},
                    "replicated": {"num_partitions": 1, "replication_factor": 3},
                    "no-partitions": {"num_partitions": 0, "replication_factor": 1},
                    "bad-config": {"configs": {"no.such.config": "1"}},
                    "bad-value": {"configs": {"retention.ms": "soon"}},
                    "elsewhere": {"assignments": {0: [5]}},
                    "assigned-and-counted": {"num_partitions": 1, "assignments": {0: [0]}},
                    "fine": {},
                },
                raise_errors=False,
            )
            topics = by_name(result["topics"])
            codes = {name: t["error_code"] for name, t in topics.items()}
            assert codes == {
                "taken": ErrorCode.TOPIC_ALREADY_EXISTS,
                "__consumer_offsets": ErrorCode.TOPIC_ALREADY_EXISTS,
                "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION,
                "replicated": ErrorCode.INVALID_REPLICATION_FACTOR,
                "no-partitions": ErrorCode.INVALID_PARTITIONS,
                "bad-config": ErrorCode.INVALID_CONFIG,
                "bad-value": ErrorCode.INVALID_CONFIG,
                "elsewhere": ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "assigned-and-counted": ErrorCode.INVALID_REQUEST,
                "fine": ErrorCode.NONE,
            }
            assert topics["taken"]["error_message"] == "Topic 'taken' already exists."
            assert topics["replicated"]["error_message"] == (
                "Unable to replicate the partition 3 time(s): The target replication factor of "
                "3 cannot be reached because only 1 broker(s) are registered."
            )
            assert topics["elsewhere"]["error_message"] == (
                "The manual partition assignment includes broker 5, but no such broker is "
                "registered."
            )
            assert topics["replicated"]["num_partitions"] == -1
            assert topics["replicated"]["topic_id"] is None  # the zero id
            assert set(broker.topics.topics) == {"__consumer_offsets", "taken", "fine"}


async def test_create_topics_refuses_a_name_given_twice_and_creates_neither(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            result = await admin(
                broker, KafkaAdminClient.create_topics, ["twice", "twice"], raise_errors=False
            )
            assert [(t["name"], t["error_code"], t["error_message"]) for t in result["topics"]] == [
                ("twice", ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            ]
            assert broker.topics.get("twice") is None


async def test_create_topics_validate_only_checks_but_creates_nothing(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            result = await admin(
                broker,
                KafkaAdminClient.create_topics,
                {"checked": {"num_partitions": 4}, "invalid": {"replication_factor": 2}},
                validate_only=True,
                raise_errors=False,
            )
            topics = by_name(result["topics"])
            assert topics["checked"]["error_code"] == 0
            assert topics["checked"]["num_partitions"] == 4
            assert topics["invalid"]["error_code"] == ErrorCode.INVALID_REPLICATION_FACTOR
            assert broker.topics.get("checked") is None
            assert not (tmp_path / "checked-0").exists()


async def test_create_topics_with_a_manual_assignment_on_this_broker(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            result = await admin(
                broker,
                KafkaAdminClient.create_topics,
                {
                    "manual": {"assignments": {0: [0], 1: [0]}},
                    "gap": {"assignments": {0: [0], 2: [0]}},
                    "twice-on-one-broker": {"assignments": {0: [0, 0]}},
                },
                raise_errors=False,
            )
            topics = by_name(result["topics"])
            assert topics["manual"]["error_code"] == 0
            assert topics["manual"]["num_partitions"] == 2
            assert topics["gap"]["error_message"] == (
                "partitions should be a consecutive 0-based integer sequence"
            )
            assert (
                topics["twice-on-one-broker"]["error_code"] == ErrorCode.INVALID_REPLICA_ASSIGNMENT
            )
            assert len(broker.topics.get("manual").partitions) == 2
            assert broker.topics.get("gap") is None


async def test_create_topics_with_timeout_zero_times_out_and_creates_nothing(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            request = CreateTopicsRequest(
                topics=[CreatableTopic(name="late", num_partitions=1, replication_factor=1)],
                timeout_ms=0,
            )
            response = await wire_call(broker, request, 7)
            assert [(t.name, t.error_code) for t in response.topics] == [
                ("late", ErrorCode.REQUEST_TIMED_OUT)
            ]
            assert broker.topics.get("late") is None
