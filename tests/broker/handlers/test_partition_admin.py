"""The partition admin APIs Kafka 4.1 serves, as a single Kafka node answers them, driven by
kafka-python's KafkaAdminClient (in a worker thread): DescribeTopicPartitions (with its
cursor), ElectLeaders, AlterPartitionReassignments, ListPartitionReassignments and
AlterReplicaLogDirs.
"""

from __future__ import annotations

from typing import Any

import trio
from kafka import KafkaAdminClient, TopicPartition
from kafka import errors as kerrors
from kafka.structs import TopicPartitionReplica

from protocol.errors import ErrorCode
from protocol.messages.describe_topic_partitions import (
    Cursor,
    DescribeTopicPartitionsRequest,
    TopicRequest,
)
from protocol.messages.elect_leaders import ElectLeadersRequest, TopicPartitions
from tests.broker.handlers.helpers import admin, running_broker
from tests.reliability.inproc import create_topics_request
from tests.wire import WireClient


async def _create(broker: Any, name: str, partitions: int) -> None:
    client = await WireClient.connect(broker)
    response = await client.call(create_topics_request(name, partitions), 7)
    assert response.topics[0].error_code == ErrorCode.NONE
    await client.aclose()


async def test_describe_topic_partitions_pages_with_a_cursor(tmp_path):
    with trio.fail_after(60):
        async with running_broker(tmp_path) as broker:
            await _create(broker, "a", 3)
            await _create(broker, "b", 2)
            node = broker.node_id

            def pages(client: KafkaAdminClient) -> list[Any]:
                out = []
                cursor = None
                while True:
                    page = client.describe_topic_partitions(
                        ["b", "a", "missing"], response_partition_limit=2, cursor=cursor
                    )
                    out.append(page)
                    cursor = page["next_cursor"]
                    if cursor is None:
                        return out

            got = await admin(broker, pages)
            seen = [
                (t["name"], p["partition_index"])
                for page in got
                for t in page["topics"]
                for p in t["partitions"]
            ]
            assert seen == [("a", 0), ("a", 1), ("a", 2), ("b", 0), ("b", 1)]
            assert got[0]["next_cursor"] == {"topic_name": "a", "partition_index": 2}
            first = got[0]["topics"][0]
            assert first["topic_id"] == broker.topics.get("a").topic_id
            assert first["partitions"][0]["leader_id"] == node
            assert first["partitions"][0]["replica_nodes"] == [node]
            # No ELR on a single node: empty lists, as KRaftMetadataCache sends (our codec
            # reads them; kafka-python reads an empty nullable array as None).
            client = await WireClient.connect(broker)
            raw = await client.call(
                DescribeTopicPartitionsRequest(topics=[TopicRequest(name="a")]), 0
            )
            assert raw.next_cursor is None
            assert raw.topics[0].partitions[0].eligible_leader_replicas == []
            assert raw.topics[0].partitions[0].last_known_elr == []
            assert first["topic_authorized_operations"] != -(2**31)
            missing = [t for page in got for t in page["topics"] if t["name"] == "missing"]
            assert [t["error_code"] for t in missing] == [ErrorCode.UNKNOWN_TOPIC_OR_PARTITION]


async def test_a_cursor_that_cannot_be_resumed_is_an_invalid_request(tmp_path):
    # Found by the live fuzzer: a negative partition in the cursor once crashed the handler.
    with trio.fail_after(30):
        async with running_broker(tmp_path) as broker:
            await _create(broker, "a", 2)
            client = await WireClient.connect(broker)
            for cursor in (Cursor(topic_name="a", partition_index=-3), Cursor(topic_name="zz")):
                request = DescribeTopicPartitionsRequest(
                    topics=[TopicRequest(name="a")], cursor=cursor
                )
                response = await client.call(request, 0)
                assert [t.error_code for t in response.topics] == [ErrorCode.INVALID_REQUEST]
            beyond = DescribeTopicPartitionsRequest(
                topics=[], cursor=Cursor(topic_name="a", partition_index=7)
            )
            response = await client.call(beyond, 0)
            assert response.topics[0].name == "a"
            assert response.topics[0].partitions == []


async def test_elections_are_not_needed_on_a_single_node(tmp_path):
    with trio.fail_after(60):
        async with running_broker(tmp_path) as broker:
            await _create(broker, "t", 2)
            response = await admin(
                broker,
                KafkaAdminClient.elect_leaders,
                0,
                {"t": [0, 1, 9]},
                raise_errors=False,
            )
            assert response.error_code == 0
            (result,) = response.replica_election_results
            assert [(p.partition_id, p.error_code) for p in result.partition_result] == [
                (0, ErrorCode.ELECTION_NOT_NEEDED),
                (1, ErrorCode.ELECTION_NOT_NEEDED),
                (9, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION),
            ]
            client = await WireClient.connect(broker)
            every = await client.call(
                ElectLeadersRequest(election_type=1, topic_partitions=None), 2
            )
            assert (every.error_code, every.replica_election_results) == (0, [])
            bad = ElectLeadersRequest(
                election_type=7, topic_partitions=[TopicPartitions(topic="t", partitions=[0])]
            )
            assert (await client.call(bad, 2)).error_code == ErrorCode.INVALID_REQUEST


async def test_reassignments_on_a_single_node(tmp_path):
    with trio.fail_after(60):
        async with running_broker(tmp_path) as broker:
            await _create(broker, "t", 1)
            node = broker.node_id
            results = await admin(
                broker,
                KafkaAdminClient.alter_partition_reassignments,
                {
                    TopicPartition("t", 0): [node],
                    TopicPartition("t", 5): [node],
                    TopicPartition("u", 0): None,
                },
            )
            assert results == {
                TopicPartition("t", 0): None,
                TopicPartition("t", 5): kerrors.UnknownTopicOrPartitionError,
                TopicPartition("u", 0): kerrors.UnknownTopicOrPartitionError,
            }
            results = await admin(
                broker,
                KafkaAdminClient.alter_partition_reassignments,
                {TopicPartition("t", 0): None},
            )
            assert results == {TopicPartition("t", 0): kerrors.NoReassignmentInProgressError}
            results = await admin(
                broker,
                KafkaAdminClient.alter_partition_reassignments,
                {TopicPartition("t", 0): [node, node + 1]},
            )
            assert results == {TopicPartition("t", 0): kerrors.InvalidReplicationAssignmentError}
            listed = await admin(broker, KafkaAdminClient.list_partition_reassignments)
            assert listed == {}


async def test_alter_replica_log_dirs_to_the_one_log_dir(tmp_path):
    with trio.fail_after(60):
        async with running_broker(tmp_path) as broker:
            await _create(broker, "t", 1)
            node = broker.node_id
            here = str(broker.data_dir.absolute())
            results = await admin(
                broker,
                KafkaAdminClient.alter_replica_log_dirs,
                {
                    TopicPartitionReplica("t", 0, node): here,
                    TopicPartitionReplica("t", 3, node): here,
                },
            )
            assert results == {
                TopicPartitionReplica("t", 0, node): kerrors.NoError,
                TopicPartitionReplica("t", 3, node): kerrors.ReplicaNotAvailableError,
            }
            results = await admin(
                broker,
                KafkaAdminClient.alter_replica_log_dirs,
                {TopicPartitionReplica("t", 0, node): "/elsewhere"},
            )
            assert results == {TopicPartitionReplica("t", 0, node): kerrors.LogDirNotFoundError}
