"""What Kafka 4.1 decides around a refusal, through real frames: a KIP-848 regex
subscription resolves only to topics the member may DESCRIBE; DescribeProducers validates
the topic name before READ; refused entries carry the error_message Kafka sends.
"""

from __future__ import annotations

from pathlib import Path

from broker.security.acls import AclOperation
from protocol.errors import ErrorCode
from protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
)
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
from protocol.messages.create_partitions import CreatePartitionsRequest, CreatePartitionsTopic
from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState
from protocol.messages.describe_configs import DescribeConfigsRequest, DescribeConfigsResource
from protocol.messages.describe_producers import DescribeProducersRequest
from protocol.messages.describe_producers import TopicRequest as ProducersTopic
from tests.broker.security.test_enforce import GROUP, TOPIC, D, R, acl, acl_broker

E = ErrorCode
TOPIC_REFUSED = "Topic authorization failed."


def regex_heartbeat(member_id: str, epoch: int) -> ConsumerGroupHeartbeatRequest:
    return ConsumerGroupHeartbeatRequest(
        group_id="g",
        member_id=member_id,
        member_epoch=epoch,
        rebalance_timeout_ms=30000,
        subscribed_topic_regex="t-.*",
        topic_partitions=[],
    )


async def test_a_regex_subscription_resolves_only_to_describable_topics(tmp_path: Path) -> None:
    acls = [acl(GROUP, "g", R), acl(TOPIC, "t-seen", D)]
    async with acl_broker(tmp_path, acls, "t-seen", "t-hidden") as (broker, client):
        joined = await client.call(regex_heartbeat("m1", 0), 1)
        assert joined.error_code == E.NONE
        seen = broker.topics.get("t-seen").topic_id
        assigned = [t.topic_id for t in joined.assignment.topic_partitions]
        assert assigned == [seen]
        group = broker.coordinator.coordinator.consumer.groups["g"]
        assert group.resolved_regular_expressions["t-.*"].topics == frozenset({"t-seen"})


async def test_describe_producers_validates_the_name_before_read(tmp_path: Path) -> None:
    async with acl_broker(tmp_path, [], "ro") as (_broker, client):
        response = await client.call(
            DescribeProducersRequest(
                topics=[
                    ProducersTopic(name=n, partition_indexes=[0]) for n in ("bad name", "ro", "..")
                ]
            ),
            0,
        )
        answers = {t.name: t.partitions[0] for t in response.topics}
        assert answers["bad name"].error_code == E.INVALID_TOPIC_EXCEPTION
        assert answers["bad name"].error_message == (
            'Topic name "bad name" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )
        assert answers[".."].error_code == E.INVALID_TOPIC_EXCEPTION
        assert answers[".."].error_message == 'Topic name cannot be "." or ".."'
        assert answers["ro"].error_code == E.TOPIC_AUTHORIZATION_FAILED
        assert answers["ro"].error_message == TOPIC_REFUSED


async def test_refused_topics_and_configs_carry_kafkas_messages(tmp_path: Path) -> None:
    acls = [acl(TOPIC, "ok", AclOperation.ALL)]
    async with acl_broker(tmp_path, acls, "ok", "ro") as (_broker, client):
        created = await client.call(
            CreateTopicsRequest(
                topics=[CreatableTopic(name="other", num_partitions=1, replication_factor=1)],
                timeout_ms=5000,
            ),
            7,
        )
        # ControllerApis.createTopics
        assert [(t.error_code, t.error_message) for t in created.topics] == [
            (E.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
        ]
        for version, request in (
            (6, DeleteTopicsRequest(topics=[DeleteTopicState(name="ro")], timeout_ms=5000)),
            (5, DeleteTopicsRequest(topic_names=["ro"], timeout_ms=5000)),
        ):
            deleted = await client.call(request, version)
            assert [(t.error_code, t.error_message) for t in deleted.responses] == [
                (E.TOPIC_AUTHORIZATION_FAILED, TOPIC_REFUSED)
            ]
        described = await client.call(
            DescribeConfigsRequest(
                resources=[
                    DescribeConfigsResource(resource_type=2, resource_name="ro"),
                    DescribeConfigsResource(resource_type=4, resource_name="0"),
                ]
            ),
            4,
        )
        assert {r.resource_name: r.error_message for r in described.results} == {
            "ro": TOPIC_REFUSED,
            "0": "Cluster authorization failed.",
        }
        altered = await client.call(
            AlterConfigsRequest(
                resources=[
                    AlterConfigsResource(
                        resource_type=2,
                        resource_name="ro",
                        configs=[AlterableConfig(name="retention.ms", value="1000")],
                    )
                ]
            ),
            2,
        )
        assert [r.error_message for r in altered.responses] == [TOPIC_REFUSED]
        # ControllerApis.createPartitions sends no message
        grown = await client.call(
            CreatePartitionsRequest(
                topics=[CreatePartitionsTopic(name="ro", count=2, assignments=None)],
                timeout_ms=5000,
            ),
            3,
        )
        assert [(r.error_code, r.error_message) for r in grown.results] == [
            (E.TOPIC_AUTHORIZATION_FAILED, None)
        ]
