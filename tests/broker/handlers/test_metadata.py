"""Metadata through the in-process broker and real frames (our own codec as the client):
"all topics" as each version spells it, auto-creation and what refuses it, lookups by topic
id, and the per-topic errors.
"""

from __future__ import annotations

import uuid
from typing import Any

import trio

from protocol.errors import ErrorCode
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from storage.layout import OFFSETS_TOPIC
from tests.reliability.inproc import create, create_partitions_request, delete, running
from tests.wire import WireClient

# Kafka's AclOperation codes, and what a Kafka 4.x broker without an authorizer reports
# (AclEntry.supportedOperations).
ACL = {
    "READ": 3,
    "WRITE": 4,
    "CREATE": 5,
    "DELETE": 6,
    "ALTER": 7,
    "DESCRIBE": 8,
    "CLUSTER_ACTION": 9,
    "DESCRIBE_CONFIGS": 10,
    "ALTER_CONFIGS": 11,
    "IDEMPOTENT_WRITE": 12,
}
TOPIC_OPS = {"READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS"}
TOPIC_OPS |= {"ALTER_CONFIGS"}
CLUSTER_OPS = {"CREATE", "CLUSTER_ACTION", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"}
CLUSTER_OPS |= {"IDEMPOTENT_WRITE", "ALTER", "DESCRIBE"}


def bits(names: set[str]) -> int:
    return sum(1 << ACL[n] for n in names)


ALL_TOPIC_OPERATIONS = bits(TOPIC_OPS)
NOT_REQUESTED = -(2**31)


def named(*names: str | None, topic_id: uuid.UUID | None = None) -> list[MetadataRequestTopic]:
    return [MetadataRequestTopic(name=n, topic_id=topic_id or uuid.UUID(int=0)) for n in names]


def by_name(response: Any) -> dict[str | None, int]:
    return {t.name: t.error_code for t in response.topics}


async def test_every_version_describes_this_broker_and_the_topics(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "a", "b")
            host, port = broker.advertised[0]
            for version in MetadataRequest.VERSIONS:
                everything = [] if version == 0 else None  # v0: empty means all
                response = await client.call(MetadataRequest(topics=everything), version)
                assert [(b.node_id, b.host, b.port) for b in response.brokers] == [
                    (broker.node_id, host, port)
                ]
                assert response.controller_id == (broker.node_id if version >= 1 else -1)
                assert response.cluster_id == (broker.cluster_id if version >= 2 else None)
                assert sorted(by_name(response).items()) == [("a", 0), ("b", 0)], version
                (part,) = response.topics[0].partitions
                assert (part.leader_id, part.replica_nodes, part.isr_nodes) == (
                    broker.node_id,
                    [broker.node_id],
                    [broker.node_id],
                )
                if version >= 1:
                    none = await client.call(MetadataRequest(topics=[]), version)
                    assert none.topics == []
                if version >= 10:
                    assert {t.topic_id for t in response.topics} == {
                        broker.topics.get(n).topic_id for n in ("a", "b")
                    }


async def test_authorized_operations_only_when_asked_for(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "a")
            for ask, expected in ((True, ALL_TOPIC_OPERATIONS), (False, NOT_REQUESTED)):
                request = MetadataRequest(
                    topics=named("a"),
                    include_topic_authorized_operations=ask,
                    include_cluster_authorized_operations=False,
                )
                response = await client.call(request, 9)
                assert response.topics[0].topic_authorized_operations == expected
            request = MetadataRequest(
                topics=named("a"),
                include_topic_authorized_operations=False,
                include_cluster_authorized_operations=True,
            )
            response = await client.call(request, 9)
            assert response.cluster_authorized_operations == bits(CLUSTER_OPS)
            described = await client.call(
                DescribeClusterRequest(include_cluster_authorized_operations=True), 0
            )
            assert described.cluster_authorized_operations == bits(CLUSTER_OPS)


async def test_unknown_topics_are_created_unless_refused(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            unknown = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            request = MetadataRequest(topics=named("made"), allow_auto_topic_creation=True)
            assert by_name(await client.call(request, 9)) == {"made": ErrorCode.NONE}
            assert broker.topics.get("made") is not None
            request = MetadataRequest(topics=named("kept-out"), allow_auto_topic_creation=False)
            assert by_name(await client.call(request, 9)) == {"kept-out": unknown}
            # Below v4 the request cannot refuse: the broker's setting decides.
            request = MetadataRequest(topics=named("old"), allow_auto_topic_creation=False)
            assert by_name(await client.call(request, 3)) == {"old": ErrorCode.NONE}
            assert broker.topics.get("kept-out") is None
            request = MetadataRequest(
                topics=named(OFFSETS_TOPIC, "bad name!", "x" * 250), allow_auto_topic_creation=True
            )
            assert by_name(await client.call(request, 9)) == {
                OFFSETS_TOPIC: unknown,  # created by the group coordinator only
                "bad name!": ErrorCode.INVALID_TOPIC_EXCEPTION,
                "x" * 250: ErrorCode.INVALID_TOPIC_EXCEPTION,
            }


async def test_auto_creation_disabled_on_the_broker(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path, **{"auto.create.topics.enable": "false"}) as broker:
            client = await WireClient.connect(broker)
            for version in (3, 9):
                request = MetadataRequest(topics=named("t"), allow_auto_topic_creation=True)
                response = await client.call(request, version)
                assert by_name(response) == {"t": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            assert broker.topics.get("t") is None


async def test_topics_by_id_from_v12_and_refused_below(tmp_path):
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "a")
            topic_id = broker.topics.get("a").topic_id
            response = await client.call(MetadataRequest(topics=named(None, topic_id=topic_id)), 12)
            assert [(t.error_code, t.name, t.topic_id) for t in response.topics] == [
                (ErrorCode.NONE, "a", topic_id)
            ]
            stranger = uuid.uuid4()
            response = await client.call(MetadataRequest(topics=named(None, topic_id=stranger)), 12)
            assert [(t.error_code, t.name, t.topic_id) for t in response.topics] == [
                (ErrorCode.UNKNOWN_TOPIC_ID, None, stranger)
            ]
            for version in (10, 11):
                request = MetadataRequest(topics=named(None, topic_id=topic_id))
                response = await client.call(request, version)
                assert [(t.error_code, t.name) for t in response.topics] == [
                    (ErrorCode.INVALID_REQUEST, "")
                ]


async def test_a_repeated_question_follows_partitions_added_and_a_topic_recreated(tmp_path):
    """Answers about existing topics are kept encoded (broker.handlers.metadata): the same
    request after CreatePartitions, and after a delete and re-create, sees the change."""
    with trio.fail_after(30):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "a")
            request = MetadataRequest(topics=named("a"), allow_auto_topic_creation=False)
            for version in (1, 9, 12):
                first = await client.call(request, version)
                assert first == await client.call(request, version)
                assert [p.partition_index for p in first.topics[0].partitions] == [0]
            response = await client.call(create_partitions_request("a", 3), 3)
            assert [r.error_code for r in response.results] == [ErrorCode.NONE]
            answer = await client.call(request, 12)
            assert [p.partition_index for p in answer.topics[0].partitions] == [0, 1, 2]
            await delete(client, "a")
            gone = await client.call(request, 12)
            assert by_name(gone) == {"a": ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}
            await create(client, "a")
            again = await client.call(request, 12)
            assert again.topics[0].topic_id == broker.topics.get("a").topic_id
            assert again.topics[0].topic_id != answer.topics[0].topic_id
            assert [p.partition_index for p in again.topics[0].partitions] == [0]
