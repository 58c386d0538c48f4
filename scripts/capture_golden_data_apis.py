"""Capture golden request frames for the data and admin APIs from kafka-python's own codec.

Writes tests/protocol/golden/kafka_python/<api>_v<N>.hex: one request frame per file, as
one line of hex, the request header included and the 4-byte size prefix left out (what
FrameBuffer.next_frame returns). For each API it captures the lowest version we support,
the first flexible one and the highest; tests/protocol/test_<api>.py decodes each file and
compares it with a spelled-out dataclass.

kafka-python 3.x encodes from Kafka's JSON specs with its own code, so these bytes are an
independent check of our declarations. Run it again only when a capture has to change:

    /tmp/venv/bin/python scripts/capture_golden_data_apis.py
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafka.protocol.admin import (
    AlterConfigsRequest,
    CreatePartitionsRequest,
    CreateTopicsRequest,
    DeleteRecordsRequest,
    DeleteTopicsRequest,
    DescribeClusterRequest,
    DescribeConfigsRequest,
    DescribeLogDirsRequest,
    IncrementalAlterConfigsRequest,
)
from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest, OffsetForLeaderEpochRequest
from kafka.protocol.metadata import MetadataRequest
from kafka.protocol.producer import InitProducerIdRequest, ProduceRequest
from kafka.record.default_records import DefaultRecordBatchBuilder

OUT = Path(__file__).resolve().parent.parent / "tests" / "protocol" / "golden" / "kafka_python"
CLIENT_ID = "kafka-python"
CORRELATION_ID = 42
TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
OTHER_TOPIC_ID = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")


def record_batch() -> bytes:
    """A RecordBatch v2 of two records with fixed timestamps, from an idempotent producer."""
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=False,
        producer_id=4000,
        producer_epoch=3,
        base_sequence=17,
        batch_size=1 << 20,
    )
    builder.append(0, timestamp=1_700_000_000_000, key=b"k0", value=b"hello", headers=[])
    builder.append(1, timestamp=1_700_000_000_005, key=None, value=b"world", headers=[("h", b"v")])
    return bytes(builder.build())


def metadata(version: int) -> Any:
    topic = MetadataRequest.MetadataRequestTopic
    if version >= 12:
        topics = [topic(name=None, topic_id=TOPIC_ID), topic(name="payments")]
    else:
        topics = [topic(name="orders"), topic(name="payments")]
    return MetadataRequest(
        topics=topics,
        allow_auto_topic_creation=False,
        include_cluster_authorized_operations=version <= 10,
        include_topic_authorized_operations=True,
    )


def produce(version: int) -> Any:
    topic = ProduceRequest.TopicProduceData
    partition = topic.PartitionProduceData
    return ProduceRequest(
        transactional_id="txn-1",
        acks=-1,
        timeout_ms=30000,
        topic_data=[
            topic(name="orders", partition_data=[partition(index=2, records=record_batch())])
        ],
    )


def fetch(version: int) -> Any:
    topic = FetchRequest.FetchTopic
    partition = topic.FetchPartition
    by_id = version >= 13
    return FetchRequest(
        cluster_id="kmock-cluster" if version >= 12 else None,
        replica_id=-1,
        max_wait_ms=500,
        min_bytes=1,
        max_bytes=52428800,
        isolation_level=1,
        session_id=0,
        session_epoch=-1,
        topics=[
            topic(
                topic="" if by_id else "orders",
                topic_id=TOPIC_ID if by_id else uuid.UUID(int=0),
                partitions=[
                    partition(
                        partition=0,
                        current_leader_epoch=5,
                        fetch_offset=1234,
                        last_fetched_epoch=4 if version >= 12 else -1,
                        log_start_offset=-1,
                        partition_max_bytes=1048576,
                    ),
                    partition(
                        partition=1,
                        current_leader_epoch=5,
                        fetch_offset=0,
                        last_fetched_epoch=-1,
                        log_start_offset=-1,
                        partition_max_bytes=1048576,
                    ),
                ],
            )
        ],
        forgotten_topics_data=[
            FetchRequest.ForgottenTopic(
                topic="" if by_id else "payments",
                topic_id=OTHER_TOPIC_ID if by_id else uuid.UUID(int=0),
                partitions=[3, 4],
            )
        ],
        rack_id="rack-a",
    )


def list_offsets(version: int) -> Any:
    topic = ListOffsetsRequest.ListOffsetsTopic
    partition = topic.ListOffsetsPartition
    return ListOffsetsRequest(
        replica_id=-1,
        isolation_level=1,
        topics=[
            topic(
                name="orders",
                partitions=[
                    partition(partition_index=0, current_leader_epoch=5, timestamp=-1),
                    partition(partition_index=1, current_leader_epoch=-1, timestamp=-2),
                    partition(
                        partition_index=2, current_leader_epoch=-1, timestamp=1_700_000_000_000
                    ),
                ],
            )
        ],
    )


def create_topics(version: int) -> Any:
    topic = CreateTopicsRequest.CreatableTopic
    return CreateTopicsRequest(
        topics=[
            topic(
                name="orders",
                num_partitions=3,
                replication_factor=1,
                assignments=[],
                configs=[
                    topic.CreatableTopicConfig(name="cleanup.policy", value="compact"),
                    topic.CreatableTopicConfig(name="retention.ms", value=None),
                ],
            ),
            topic(
                name="payments",
                num_partitions=-1,
                replication_factor=-1,
                assignments=[
                    topic.CreatableReplicaAssignment(partition_index=0, broker_ids=[1]),
                    topic.CreatableReplicaAssignment(partition_index=1, broker_ids=[1]),
                ],
                configs=[],
            ),
        ],
        timeout_ms=15000,
        validate_only=True,
    )


def delete_topics(version: int) -> Any:
    state = DeleteTopicsRequest.DeleteTopicState
    if version >= 6:
        return DeleteTopicsRequest(
            topics=[state(name="orders"), state(name=None, topic_id=TOPIC_ID)],
            timeout_ms=15000,
        )
    return DeleteTopicsRequest(topic_names=["orders", "payments"], timeout_ms=15000)


def create_partitions(version: int) -> Any:
    topic = CreatePartitionsRequest.CreatePartitionsTopic
    return CreatePartitionsRequest(
        topics=[
            topic(name="orders", count=6, assignments=None),
            topic(
                name="payments",
                count=2,
                assignments=[topic.CreatePartitionsAssignment(broker_ids=[1])],
            ),
        ],
        timeout_ms=15000,
        validate_only=False,
    )


def describe_configs(version: int) -> Any:
    resource = DescribeConfigsRequest.DescribeConfigsResource
    return DescribeConfigsRequest(
        resources=[
            resource(resource_type=2, resource_name="orders", configuration_keys=None),
            resource(
                resource_type=4,
                resource_name="1",
                configuration_keys=["log.retention.ms", "num.partitions"],
            ),
        ],
        include_synonyms=True,
        include_documentation=version >= 3,
    )


def describe_cluster(version: int) -> Any:
    return DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1)


def init_producer_id(version: int) -> Any:
    return InitProducerIdRequest(
        transactional_id="txn-1" if version >= 2 else None,
        transaction_timeout_ms=60000,
        producer_id=4000 if version >= 3 else -1,
        producer_epoch=3 if version >= 3 else -1,
    )


def offset_for_leader_epoch(version: int) -> Any:
    topic = OffsetForLeaderEpochRequest.OffsetForLeaderTopic
    return OffsetForLeaderEpochRequest(
        replica_id=-1,
        topics=[
            topic(
                topic="orders",
                partitions=[
                    topic.OffsetForLeaderPartition(
                        partition=0, current_leader_epoch=7, leader_epoch=6
                    ),
                    topic.OffsetForLeaderPartition(
                        partition=1, current_leader_epoch=-1, leader_epoch=2
                    ),
                ],
            )
        ],
    )


def alter_configs(version: int) -> Any:
    resource = AlterConfigsRequest.AlterConfigsResource
    return AlterConfigsRequest(
        resources=[
            resource(
                resource_type=2,
                resource_name="orders",
                configs=[
                    resource.AlterableConfig(name="retention.ms", value="86400000"),
                    resource.AlterableConfig(name="cleanup.policy", value=None),
                ],
            )
        ],
        validate_only=True,
    )


def incremental_alter_configs(version: int) -> Any:
    resource = IncrementalAlterConfigsRequest.AlterConfigsResource
    return IncrementalAlterConfigsRequest(
        resources=[
            resource(
                resource_type=2,
                resource_name="orders",
                configs=[
                    resource.AlterableConfig(
                        name="retention.ms", config_operation=0, value="86400000"
                    ),
                    resource.AlterableConfig(name="cleanup.policy", config_operation=1, value=None),
                ],
            ),
            resource(resource_type=4, resource_name="1", configs=[]),
        ],
        validate_only=False,
    )


def delete_records(version: int) -> Any:
    topic = DeleteRecordsRequest.DeleteRecordsTopic
    return DeleteRecordsRequest(
        topics=[
            topic(
                name="orders",
                partitions=[
                    topic.DeleteRecordsPartition(partition_index=0, offset=100),
                    topic.DeleteRecordsPartition(partition_index=1, offset=-1),
                ],
            )
        ],
        timeout_ms=15000,
    )


def describe_log_dirs(version: int) -> Any:
    topic = DescribeLogDirsRequest.DescribableLogDirTopic
    if version == 1:
        return DescribeLogDirsRequest(topics=None)
    return DescribeLogDirsRequest(
        topics=[topic(topic="orders", partitions=[0, 1, 2]), topic(topic="payments", partitions=[])]
    )


# api -> (request builder, versions to capture: lowest, first flexible, highest we support)
CAPTURES: dict[str, tuple[Callable[[int], Any], tuple[int, ...]]] = {
    "metadata": (metadata, (0, 9, 12)),
    "produce": (produce, (3, 9, 11)),
    "fetch": (fetch, (4, 12, 16)),
    "list_offsets": (list_offsets, (1, 6, 8)),
    "create_topics": (create_topics, (2, 5, 7)),
    "delete_topics": (delete_topics, (1, 4, 6)),
    "create_partitions": (create_partitions, (0, 2, 3)),
    "describe_configs": (describe_configs, (1, 4)),
    "describe_cluster": (describe_cluster, (0, 1)),
    "init_producer_id": (init_producer_id, (0, 2, 5)),
    "offset_for_leader_epoch": (offset_for_leader_epoch, (2, 4)),
    "alter_configs": (alter_configs, (0, 2)),
    "incremental_alter_configs": (incremental_alter_configs, (0, 1)),
    "delete_records": (delete_records, (0, 2)),
    "describe_log_dirs": (describe_log_dirs, (1, 2, 4)),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for api, (build, versions) in CAPTURES.items():
        for version in versions:
            request = build(version)
            request.with_header(correlation_id=CORRELATION_ID, client_id=CLIENT_ID)
            frame = bytes(request.encode(version=version, header=True))
            path = OUT / f"{api}_v{version}.hex"
            path.write_text(frame.hex() + "\n")
            print(f"{path.relative_to(OUT.parent.parent.parent.parent)}: {len(frame)} bytes")


if __name__ == "__main__":
    main()
