"""DescribeConfigs against a real broker, driven by kafka-python's KafkaAdminClient (in a
worker thread) for what an admin client exposes, and our own wire client (tests.wire) for
the answers as they are on the wire.
"""

from __future__ import annotations

import trio
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource

from broker.config import TOPIC_CONFIGS
from protocol.errors import ErrorCode
from protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from tests.broker.handlers.helpers import (
    BROKER,
    admin,
    describe_topic_configs,
    running_broker,
)
from tests.wire import wire_call


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
