"""AlterConfigs (and what it shares with IncrementalAlterConfigs) against a real broker, driven
by kafka-python's KafkaAdminClient (in a worker thread) for what an admin client exposes,
and our own wire client (tests.wire) for the answers as they are on the wire.
"""

from __future__ import annotations

import trio
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource

from protocol.errors import ErrorCode
from protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from protocol.messages.incremental_alter_configs import (
    AlterableConfig as IncrementalAlterableConfig,
)
from protocol.messages.incremental_alter_configs import (
    AlterConfigsResource as IncrementalAlterConfigsResource,
)
from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from tests.broker.handlers.helpers import (
    BROKER,
    TOPIC,
    admin,
    running_broker,
)
from tests.wire import wire_call


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
