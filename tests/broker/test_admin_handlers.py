"""The admin APIs against a real broker, driven by a real client: kafka-python's
KafkaAdminClient (run in a worker thread) for what an admin client exposes, and our own
wire client (tests.wire) for the answers no admin client shows as they are on the wire
(the legacy AlterConfigs replacing every override, OffsetForLeaderEpoch, timeouts).
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest
import trio
from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import ConfigResource, ConfigResourceType
from kafka.errors import OffsetOutOfRangeError

from broker.config import TOPIC_CONFIGS
from protocol.errors import ErrorCode
from protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from protocol.messages.incremental_alter_configs import (
    AlterableConfig as IncrementalAlterableConfig,
)
from protocol.messages.incremental_alter_configs import (
    AlterConfigsResource as IncrementalAlterConfigsResource,
)
from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from protocol.messages.offset_for_leader_epoch import (
    OffsetForLeaderEpochRequest,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
)
from protocol.records import build_batch
from tests.reliability.inproc import running
from tests.wire import wire_call

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER


@asynccontextmanager
async def running_broker(tmp_path: Any, **settings: Any) -> AsyncIterator[Any]:
    async with running(tmp_path, **settings) as broker:
        # __consumer_offsets is created by the first group lookup, as in Kafka; these tests
        # include it among the existing topics.
        broker.coordinator.offsets_topic()
        yield broker


async def admin(broker: Any, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`call(admin_client, *args, **kwargs)` with a fresh KafkaAdminClient, in a thread."""

    def run() -> Any:
        client = KafkaAdminClient(
            bootstrap_servers=broker.bootstrap_servers,
            client_id="kmock-admin-test",
            request_timeout_ms=10000,
        )
        try:
            return call(client, *args, **kwargs)
        finally:
            client.close()

    return await trio.to_thread.run_sync(run, abandon_on_cancel=True)


def append_records(broker: Any, topic: str, n: int) -> None:
    """Records for partition 0, appended to its log directly: these tests are about the
    admin APIs, and must not depend on Produce."""
    batch = build_batch([(None, b"v%d" % i, [], broker.wall_ms()) for i in range(n)])
    broker.topics.partition(topic, 0).log.append(batch, wall_ms=broker.wall_ms())


def by_name(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in results}


async def describe_topic_configs(broker: Any, topic: str, **kw: Any) -> dict[str, Any]:
    described = await admin(
        broker,
        KafkaAdminClient.describe_configs,
        [ConfigResource(TOPIC, topic)],
        config_filter="all",
        **kw,
    )
    return described["topic"][topic]


# --- CreateTopics ---------------------------------------------------------------------------


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


# --- DeleteTopics ---------------------------------------------------------------------------


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


# --- CreatePartitions -----------------------------------------------------------------------


def _partition_errors(response: Any) -> dict[str, tuple[int, str | None]]:
    return {r.name: (r.error_code, r.error_message) for r in response.results}


async def test_create_partitions_grows_topics_and_refuses_what_kafka_refuses(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(
                broker,
                KafkaAdminClient.create_topics,
                {"grow": {}, "assigned": {}, "shrink": {"num_partitions": 3}, "checked": {}},
            )
            ok = await admin(
                broker,
                KafkaAdminClient.create_partitions,
                {"grow": 3, "assigned": {"count": 2, "assignments": [[0]]}},
            )
            assert _partition_errors(ok) == {"grow": (0, None), "assigned": (0, None)}
            await admin(
                broker, KafkaAdminClient.create_partitions, {"checked": 5}, validate_only=True
            )
            refused = await admin(
                broker,
                KafkaAdminClient.create_partitions,
                {
                    "shrink": 2,
                    "grow": 3,
                    "missing": 2,
                    "__consumer_offsets": 51,
                },
                raise_errors=False,
            )
            assert _partition_errors(refused) == {
                "shrink": (
                    ErrorCode.INVALID_PARTITIONS,
                    "The topic shrink currently has 3 partition(s); 2 would not be an increase.",
                ),
                "grow": (ErrorCode.INVALID_PARTITIONS, "Topic already has 3 partition(s)."),
                "missing": (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                ),
                "__consumer_offsets": (
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    "kmock does not add partitions to the internal topic __consumer_offsets",
                ),
            }
            counts = {
                name: len(broker.topics.get(name).partitions)
                for name in ("grow", "assigned", "shrink", "checked")
            }
            assert counts == {"grow": 3, "assigned": 2, "shrink": 3, "checked": 1}
            described = by_name(await admin(broker, KafkaAdminClient.describe_topics, ["grow"]))
            assert len(described["grow"]["partitions"]) == 3


# --- DescribeConfigs ------------------------------------------------------------------------


async def test_describe_configs_of_a_topic_lists_every_config_with_source_and_synonyms(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(
                broker,
                KafkaAdminClient.create_topics,
                {"t": {"configs": {"retention.ms": "3600000"}}},
            )
            configs = await describe_topic_configs(broker, "t", include_synonyms=True)
            assert set(configs) == set(TOPIC_CONFIGS)
            assert configs["retention.ms"]["value"] == "3600000"
            assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
            assert configs["retention.ms"]["config_type"] == "LONG"
            assert configs["retention.ms"]["synonyms"] == [
                {"name": "retention.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"}
            ]
            assert configs["segment.bytes"] == {
                "value": "1073741824",
                "read_only": False,
                "config_source": "DEFAULT_CONFIG",
                "is_sensitive": False,
                "config_type": "INT",
                "documentation": None,
                "synonyms": [
                    {"name": "log.segment.bytes", "value": "1073741824", "source": "DEFAULT_CONFIG"}
                ],
            }
            assert configs["cleanup.policy"]["config_type"] == "LIST"
            assert configs["message.timestamp.type"]["value"] == "CreateTime"


async def test_configured_broker_settings_show_as_static_broker_config(tmp_path):
    settings = {"log.segment.bytes": "2097152", "log.retention.hours": "24"}
    with trio.fail_after(30):
        async with running_broker(tmp_path, **settings) as broker:
            created = await admin(broker, KafkaAdminClient.create_topics, {"t": {}})
            reported = created["topics"][0]["configs"]
            assert reported["segment.bytes"]["config_source"] == "STATIC_BROKER_CONFIG"
            assert reported["retention.ms"]["value"] == "86400000"
            assert reported["retention.ms"]["config_source"] == "STATIC_BROKER_CONFIG"

            configs = await describe_topic_configs(broker, "t", include_synonyms=True)
            assert configs["segment.bytes"]["value"] == "2097152"
            assert configs["segment.bytes"]["config_source"] == "STATIC_BROKER_CONFIG"
            assert configs["segment.bytes"]["synonyms"] == [
                {"name": "log.segment.bytes", "value": "2097152", "source": "STATIC_BROKER_CONFIG"},
                {"name": "log.segment.bytes", "value": "1073741824", "source": "DEFAULT_CONFIG"},
            ]
            # Kafka's DescribeConfigs drops synonyms ahead of log.retention.ms, the primary
            # one: the value follows log.retention.hours, the source says DEFAULT_CONFIG.
            assert configs["retention.ms"]["value"] == "86400000"
            assert configs["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
            assert configs["retention.ms"]["synonyms"] == []


async def test_describe_configs_of_this_broker_lists_every_setting(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path, **{"num.partitions": 4}) as broker:
            described = await admin(
                broker,
                KafkaAdminClient.describe_configs,
                [ConfigResource(BROKER, str(broker.node_id))],
                config_filter="all",
            )
            configs = described["broker"][str(broker.node_id)]
            assert configs["num.partitions"]["value"] == "4"
            assert configs["num.partitions"]["config_source"] == "STATIC_BROKER_CONFIG"
            assert configs["num.partitions"]["read_only"] is True
            assert configs["log.dirs"]["value"] == str(tmp_path)
            assert configs["auto.create.topics.enable"]["value"] == "true"
            assert configs["auto.create.topics.enable"]["config_type"] == "BOOLEAN"
            assert configs["auto.create.topics.enable"]["config_source"] == "DEFAULT_CONFIG"
            assert configs["log.retention.ms"]["value"] is None
            assert configs["message.max.bytes"]["read_only"] is False


async def test_describe_configs_errors_per_resource(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"t": {}})
            request = DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(resource_type=2, resource_name="missing"),
                    DescribeConfigsResource(resource_type=4, resource_name="7"),
                    DescribeConfigsResource(resource_type=8, resource_name="0"),
                    DescribeConfigsResource(resource_type=4, resource_name=""),
                    DescribeConfigsResource(
                        resource_type=2,
                        resource_name="t",
                        configuration_keys=["retention.ms", "nope"],
                    ),
                ],
                include_documentation=True,
            )
            response = await wire_call(broker, request, 4)
            missing, other_broker, logger, cluster, filtered = response.results
            assert (missing.error_code, missing.error_message) == (
                ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                None,
            )
            assert (other_broker.error_code, other_broker.error_message) == (
                ErrorCode.INVALID_REQUEST,
                "Unexpected broker id, expected 0 or empty string, but received 7",
            )
            assert logger.error_code == ErrorCode.INVALID_REQUEST
            assert (cluster.error_code, cluster.configs) == (ErrorCode.NONE, [])
            assert [c.name for c in filtered.configs] == ["retention.ms"]
            assert filtered.configs[0].documentation == TOPIC_CONFIGS["retention.ms"].doc


# --- AlterConfigs / IncrementalAlterConfigs -------------------------------------------------


async def test_incremental_alter_configs_then_describe(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"t": {}})
            result = await admin(
                broker,
                KafkaAdminClient.alter_configs,
                [
                    ConfigResource(
                        TOPIC,
                        "t",
                        {
                            "retention.ms": "1000",
                            "cleanup.policy": ("APPEND", "compact"),
                            "segment.bytes": ("SET", "1048576"),
                        },
                    )
                ],
            )
            assert result == {"topic": {"t": "OK"}}
            configs = await describe_topic_configs(broker, "t")
            assert configs["retention.ms"]["value"] == "1000"
            assert configs["retention.ms"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
            assert configs["cleanup.policy"]["value"] == "delete,compact"
            assert broker.topics.get("t").partitions[0].log.config.segment_bytes == 1048576

            await admin(
                broker,
                KafkaAdminClient.alter_configs,
                [
                    ConfigResource(
                        TOPIC,
                        "t",
                        {
                            "retention.ms": ("DELETE", None),
                            "cleanup.policy": ("SUBTRACT", "delete"),
                        },
                    )
                ],
            )
            configs = await describe_topic_configs(broker, "t")
            assert configs["retention.ms"]["value"] == "604800000"
            assert configs["retention.ms"]["config_source"] == "DEFAULT_CONFIG"
            assert configs["cleanup.policy"]["value"] == "compact"
            assert broker.topics.get("t").configs == {
                "cleanup.policy": "compact",
                "segment.bytes": "1048576",
            }

            refused = await admin(
                broker,
                KafkaAdminClient.alter_configs,
                [
                    ConfigResource(TOPIC, "t", {"retention.ms": ("APPEND", "1")}),
                    ConfigResource(TOPIC, "missing", {"retention.ms": "1"}),
                ],
                raise_on_unknown=False,
            )
            assert refused["topic"]["t"].startswith("[Error 40] InvalidConfigurationError")
            assert (
                "Can't APPEND to key retention.ms because its type is not LIST."
                in refused["topic"]["t"]
            )
            assert "The topic 'missing' does not exist." in refused["topic"]["missing"]
            checked = await admin(
                broker,
                KafkaAdminClient.alter_configs,
                [ConfigResource(TOPIC, "t", {"retention.ms": "5"})],
                validate_only=True,
            )
            assert checked == {"topic": {"t": "OK"}}
            assert "retention.ms" not in broker.topics.get("t").configs


async def test_alter_configs_replaces_every_override_of_a_topic(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(
                broker, KafkaAdminClient.create_topics, {"t": {"configs": {"retention.ms": "1000"}}}
            )
            result = await admin(
                broker,
                KafkaAdminClient.alter_configs,
                [ConfigResource(TOPIC, "t", {"segment.ms": "60000"})],
                incremental=False,
            )
            assert result == {"topic": {"t": "OK"}}
            # kafka-python sends the other modified configs along; on the wire the request
            # names only segment.ms, and AlterConfigs drops every override it does not name.
            assert broker.topics.get("t").configs == {"retention.ms": "1000", "segment.ms": "60000"}
            request = AlterConfigsRequest(
                resources=[
                    AlterConfigsResource(
                        resource_type=2,
                        resource_name="t",
                        configs=[AlterableConfig(name="segment.ms", value="120000")],
                    ),
                    AlterConfigsResource(resource_type=2, resource_name="bad name!", configs=[]),
                ]
            )
            response = await wire_call(broker, request, 2)
            answers = [(r.resource_name, r.error_code, r.error_message) for r in response.responses]
            assert answers == [
                ("t", ErrorCode.NONE, None),
                ("bad name!", ErrorCode.INVALID_REQUEST, "Illegal topic name."),
            ]
            assert broker.topics.get("t").configs == {"segment.ms": "120000"}


async def test_a_resource_named_twice_is_refused_for_every_copy_and_not_altered(tmp_path):
    """Kafka answers INVALID_REQUEST for each copy of a resource repeated in one
    AlterConfigs or IncrementalAlterConfigs request, and alters the others."""
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"t": {}, "u": {}})
            legacy = AlterConfigsRequest(
                resources=[
                    AlterConfigsResource(
                        resource_type=2,
                        resource_name=name,
                        configs=[AlterableConfig(name="segment.ms", value=value)],
                    )
                    for name, value in [("t", "60000"), ("u", "70000"), ("t", "80000")]
                ]
            )
            incremental = IncrementalAlterConfigsRequest(
                resources=[
                    IncrementalAlterConfigsResource(
                        resource_type=2,
                        resource_name=name,
                        configs=[
                            IncrementalAlterableConfig(
                                name="retention.ms", config_operation=0, value=value
                            )
                        ],
                    )
                    for name, value in [("u", "1000"), ("t", "2000"), ("u", "3000")]
                ]
            )
            twice = "Each resource must appear at most once."
            for request, version, repeated in ((legacy, 2, "t"), (incremental, 1, "u")):
                response = await wire_call(broker, request, version)
                answers = [
                    (r.resource_name, r.error_code, r.error_message) for r in response.responses
                ]
                expected = [
                    (r.resource_name, ErrorCode.INVALID_REQUEST, twice)
                    if r.resource_name == repeated
                    else (r.resource_name, ErrorCode.NONE, None)
                    for r in request.resources
                ]
                assert answers == expected
            assert broker.topics.get("t").configs == {"retention.ms": "2000"}
            assert broker.topics.get("u").configs == {"segment.ms": "70000"}


async def test_alter_configs_of_the_broker_are_refused(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            for incremental in (True, False):
                result = await admin(
                    broker,
                    KafkaAdminClient.alter_configs,
                    [ConfigResource(BROKER, "0", {"message.max.bytes": "2000000"})],
                    incremental=incremental,
                )
                assert result["broker"]["0"].startswith("[Error 42] InvalidRequestError")
                assert "kmock does not support dynamic broker configs" in result["broker"]["0"]
            assert broker.config["message.max.bytes"] == 1048588


# --- DescribeCluster ------------------------------------------------------------------------


async def test_describe_cluster_names_this_broker_as_the_whole_cluster(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            cluster = await admin(broker, KafkaAdminClient.describe_cluster)
            host, port = broker.advertised[0]
            assert cluster["cluster_id"] == broker.cluster_id
            assert cluster["controller_id"] == broker.node_id
            assert cluster["brokers"] == [
                {"broker_id": broker.node_id, "host": host, "port": port, "rack": None}
            ]
            assert "DESCRIBE" in cluster["authorized_operations"]


# --- DeleteRecords --------------------------------------------------------------------------


async def test_delete_records_moves_the_log_start_offset(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"t": {}})
            append_records(broker, "t", 10)
            tp = TopicPartition("t", 0)
            result = await admin(broker, KafkaAdminClient.delete_records, {tp: 4})
            assert result[tp]["low_watermark"] == 4
            assert result[tp]["error_code"] == 0
            # Offsets below the log start stay where they are; -1 is the high watermark.
            assert (await admin(broker, KafkaAdminClient.delete_records, {tp: 2}))[tp][
                "low_watermark"
            ] == 4
            assert (await admin(broker, KafkaAdminClient.delete_records, {tp: -1}))[tp][
                "low_watermark"
            ] == 10
            assert broker.topics.partition("t", 0).log.log_start_offset == 10
            with pytest.raises(OffsetOutOfRangeError):
                await admin(broker, KafkaAdminClient.delete_records, {tp: 11})
            assert broker.topics.partition("t", 0).log.log_start_offset == 10


# --- DescribeLogDirs ------------------------------------------------------------------------


async def test_describe_log_dirs_reports_the_data_dir_and_partition_sizes(tmp_path):
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await admin(broker, KafkaAdminClient.create_topics, {"t": {"num_partitions": 2}})
            append_records(broker, "t", 5)
            described = await admin(broker, KafkaAdminClient.describe_log_dirs, {"t": [0, 1, 7]})
            [reply] = described
            [log_dir] = reply["log_dirs"]
            assert log_dir["error_code"] == 0
            assert log_dir["log_dir"] == str(tmp_path.absolute())
            assert log_dir["total_bytes"] >= log_dir["usable_bytes"] > 0
            # Only the asked-for partitions that exist; no topic without one.
            [topic] = log_dir["topics"]
            assert topic["name"] == "t"
            sizes = {p["partition_index"]: p["partition_size"] for p in topic["partitions"]}
            assert sizes == {0: broker.topics.partition("t", 0).log.size_bytes, 1: 0}
            assert sizes[0] > 0
            every = await admin(broker, KafkaAdminClient.describe_log_dirs)
            names = {t["name"] for t in every[0]["log_dirs"][0]["topics"]}
            assert names == {"t", "__consumer_offsets"}


# --- OffsetForLeaderEpoch -------------------------------------------------------------------


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
