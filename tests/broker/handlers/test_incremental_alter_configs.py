"""IncrementalAlterConfigs against a real broker, driven by kafka-python's KafkaAdminClient (in
a worker thread) for what an admin client exposes.
"""

from __future__ import annotations

import trio
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource

from tests.broker.handlers.helpers import (
    TOPIC,
    admin,
    describe_topic_configs,
    running_broker,
)


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
