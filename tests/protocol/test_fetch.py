import uuid
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.fetch import (
    AbortedTransaction,
    EpochEndOffset,
    FetchableTopicResponse,
    FetchPartition,
    FetchRequest,
    FetchResponse,
    FetchTopic,
    ForgottenTopic,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionData,
    ReplicaState,
    SnapshotId,
    error_response,
)
from protocol.schema import decode, encode, encode_chunks
from tests.protocol.roundtrip import assert_roundtrip, decode_golden, for_version

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
OTHER_TOPIC_ID = uuid.UUID("6ba7b811-9dad-11d1-80b4-00c04fd430c8")
RECORDS = bytes(range(256)) * 3

REQUEST = FetchRequest(
    cluster_id="kmock-cluster",
    replica_id=-1,
    replica_state=ReplicaState(replica_id=2, replica_epoch=9),
    max_wait_ms=500,
    min_bytes=1,
    max_bytes=52428800,
    isolation_level=1,
    session_id=77,
    session_epoch=3,
    topics=[
        FetchTopic(
            topic="orders",
            topic_id=TOPIC_ID,
            partitions=[
                FetchPartition(
                    partition=0,
                    current_leader_epoch=5,
                    fetch_offset=1234,
                    last_fetched_epoch=4,
                    log_start_offset=10,
                    partition_max_bytes=1048576,
                    replica_directory_id=OTHER_TOPIC_ID,
                ),
                FetchPartition(partition=1, fetch_offset=0, partition_max_bytes=65536),
            ],
        )
    ],
    forgotten_topics_data=[
        ForgottenTopic(topic="payments", topic_id=OTHER_TOPIC_ID, partitions=[3, 4])
    ],
    rack_id="rack-a",
)

RESPONSE = FetchResponse(
    throttle_time_ms=5,
    error_code=0,
    session_id=77,
    responses=[
        FetchableTopicResponse(
            topic="orders",
            topic_id=TOPIC_ID,
            partitions=[
                PartitionData(
                    partition_index=0,
                    error_code=0,
                    high_watermark=2000,
                    last_stable_offset=1990,
                    log_start_offset=10,
                    diverging_epoch=EpochEndOffset(epoch=3, end_offset=1500),
                    current_leader=LeaderIdAndEpoch(leader_id=1, leader_epoch=5),
                    snapshot_id=SnapshotId(end_offset=1000, epoch=2),
                    aborted_transactions=[AbortedTransaction(producer_id=4000, first_offset=1300)],
                    preferred_read_replica=1,
                    records=RECORDS,
                ),
                PartitionData(
                    partition_index=1,
                    error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
                    high_watermark=-1,
                    aborted_transactions=None,
                    records=None,
                ),
            ],
        )
    ],
    node_endpoints=[NodeEndpoint(node_id=1, host="localhost", port=9092, rack="rack-a")],
)


def test_versions():
    assert FetchRequest.VERSIONS == FetchResponse.VERSIONS == range(0, 19)
    assert FetchRequest.FLEXIBLE_FROM == FetchResponse.FLEXIBLE_FROM == 12


@pytest.mark.parametrize("version", FetchRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", FetchResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


def test_the_follower_fields_of_v17_and_v18_are_tagged():
    # Consumers never send them; a follower's tags are decoded and ignored.
    tagged = {name: (w.since, w.tag) for name, w in FetchPartition._wire_fields if w.since >= 17}
    assert tagged == {"replica_directory_id": (17, 0), "high_watermark": (18, 1)}


def test_records_encode_without_a_copy():
    view = memoryview(RECORDS)[1:]
    response = FetchResponse(
        responses=[
            FetchableTopicResponse(
                topic="orders", partitions=[PartitionData(partition_index=0, records=view)]
            )
        ]
    )
    for version in (4, 12):
        assert any(chunk is view for chunk in encode_chunks(response, version))


def test_records_decode_as_a_view_of_the_frame():
    data = encode(RESPONSE, 12)
    records = decode(FetchResponse, 12, data).responses[0].partitions[0].records
    assert isinstance(records, memoryview)
    assert records.obj is data
    assert records == RECORDS


def test_golden_kafka_python_v4():
    assert decode_golden(FetchRequest, "fetch_v4.hex") == (
        4,
        FetchRequest(
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=52428800,
            isolation_level=1,
            topics=[
                FetchTopic(
                    topic="orders",
                    partitions=[
                        FetchPartition(partition=0, fetch_offset=1234, partition_max_bytes=1048576),
                        FetchPartition(partition=1, fetch_offset=0, partition_max_bytes=1048576),
                    ],
                )
            ],
        ),
    )


def test_golden_kafka_python_v12():
    assert decode_golden(FetchRequest, "fetch_v12.hex") == (
        12,
        FetchRequest(
            cluster_id="kmock-cluster",
            replica_id=-1,
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=52428800,
            isolation_level=1,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchTopic(
                    topic="orders",
                    partitions=[
                        FetchPartition(
                            partition=0,
                            current_leader_epoch=5,
                            fetch_offset=1234,
                            last_fetched_epoch=4,
                            log_start_offset=-1,
                            partition_max_bytes=1048576,
                        ),
                        FetchPartition(
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
            forgotten_topics_data=[ForgottenTopic(topic="payments", partitions=[3, 4])],
            rack_id="rack-a",
        ),
    )


def test_golden_kafka_python_v16():
    assert decode_golden(FetchRequest, "fetch_v16.hex") == (
        16,
        FetchRequest(
            cluster_id="kmock-cluster",
            replica_state=ReplicaState(replica_id=-1, replica_epoch=-1),
            max_wait_ms=500,
            min_bytes=1,
            max_bytes=52428800,
            isolation_level=1,
            session_id=0,
            session_epoch=-1,
            topics=[
                FetchTopic(
                    topic_id=TOPIC_ID,
                    partitions=[
                        FetchPartition(
                            partition=0,
                            current_leader_epoch=5,
                            fetch_offset=1234,
                            last_fetched_epoch=4,
                            log_start_offset=-1,
                            partition_max_bytes=1048576,
                        ),
                        FetchPartition(
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
            forgotten_topics_data=[ForgottenTopic(topic_id=OTHER_TOPIC_ID, partitions=[3, 4])],
            rack_id="rack-a",
        ),
    )


@pytest.mark.parametrize("version", range(FetchRequest.VERSIONS.start, 13))
def test_error_response_below_v13_also_puts_the_code_on_every_partition(version):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    response = error_response(for_version(REQUEST, version), code, version)
    decoded = decode(FetchResponse, version, assert_roundtrip(response, version))
    assert decoded == FetchResponse(
        error_code=code if version >= 7 else 0,
        session_id=77 if version >= 7 else 0,
        responses=[
            FetchableTopicResponse(
                topic="orders",
                partitions=[
                    PartitionData(partition_index=0, error_code=code, high_watermark=-1),
                    PartitionData(partition_index=1, error_code=code, high_watermark=-1),
                ],
            )
        ],
    )


@pytest.mark.parametrize("version", range(13, FetchRequest.VERSIONS.stop))
def test_error_response_from_v13_has_the_top_level_code_and_no_partitions(version):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    response = error_response(for_version(REQUEST, version), code, version)
    data = assert_roundtrip(response, version)
    assert decode(FetchResponse, version, data) == FetchResponse(
        error_code=code, session_id=77, responses=[]
    )
    # throttle_time_ms, error_code 6, session_id 77, an empty compact array, no tagged fields
    assert data == bytes.fromhex("00000000 0006 0000004d 01 00")
