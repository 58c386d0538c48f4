from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.list_offsets import (
    ListOffsetsPartition,
    ListOffsetsPartitionResponse,
    ListOffsetsRequest,
    ListOffsetsResponse,
    ListOffsetsTopic,
    ListOffsetsTopicResponse,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = ListOffsetsRequest(
    replica_id=-1,
    isolation_level=1,
    topics=[
        ListOffsetsTopic(
            name="orders",
            partitions=[
                ListOffsetsPartition(
                    partition_index=0, current_leader_epoch=5, timestamp=-1, max_num_offsets=3
                ),
                ListOffsetsPartition(partition_index=1, timestamp=1_700_000_000_000),
            ],
        ),
        ListOffsetsTopic(name="payments", partitions=[]),
    ],
    timeout_ms=30000,
)

RESPONSE = ListOffsetsResponse(
    throttle_time_ms=5,
    topics=[
        ListOffsetsTopicResponse(
            name="orders",
            partitions=[
                ListOffsetsPartitionResponse(
                    partition_index=0,
                    error_code=0,
                    old_style_offsets=[120, 0],
                    timestamp=1_700_000_000_000,
                    offset=120,
                    leader_epoch=5,
                ),
                ListOffsetsPartitionResponse(
                    partition_index=1, error_code=ErrorCode.OFFSET_NOT_AVAILABLE
                ),
            ],
        )
    ],
)


def test_versions():
    assert ListOffsetsRequest.VERSIONS == ListOffsetsResponse.VERSIONS == range(1, 11)
    assert ListOffsetsRequest.FLEXIBLE_FROM == ListOffsetsResponse.FLEXIBLE_FROM == 6


@pytest.mark.parametrize("version", ListOffsetsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", ListOffsetsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


def test_golden_kafka_python_v1():
    assert decode_golden(ListOffsetsRequest, "list_offsets_v1.hex") == (
        1,
        ListOffsetsRequest(
            replica_id=-1,
            topics=[
                ListOffsetsTopic(
                    name="orders",
                    partitions=[
                        ListOffsetsPartition(partition_index=0, timestamp=-1),
                        ListOffsetsPartition(partition_index=1, timestamp=-2),
                        ListOffsetsPartition(partition_index=2, timestamp=1_700_000_000_000),
                    ],
                )
            ],
        ),
    )


@pytest.mark.parametrize("version", [6, 8])
def test_golden_kafka_python_flexible(version):
    assert decode_golden(ListOffsetsRequest, f"list_offsets_v{version}.hex") == (
        version,
        ListOffsetsRequest(
            replica_id=-1,
            isolation_level=1,
            topics=[
                ListOffsetsTopic(
                    name="orders",
                    partitions=[
                        ListOffsetsPartition(
                            partition_index=0, current_leader_epoch=5, timestamp=-1
                        ),
                        ListOffsetsPartition(
                            partition_index=1, current_leader_epoch=-1, timestamp=-2
                        ),
                        ListOffsetsPartition(
                            partition_index=2,
                            current_leader_epoch=-1,
                            timestamp=1_700_000_000_000,
                        ),
                    ],
                )
            ],
        ),
    )


@pytest.mark.parametrize("version", ListOffsetsRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_partition(version):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error_response(REQUEST, code, version) == ListOffsetsResponse(
        topics=[
            ListOffsetsTopicResponse(
                name="orders",
                partitions=[
                    ListOffsetsPartitionResponse(
                        partition_index=0, error_code=code, timestamp=-1, offset=-1
                    ),
                    ListOffsetsPartitionResponse(
                        partition_index=1, error_code=code, timestamp=-1, offset=-1
                    ),
                ],
            ),
            ListOffsetsTopicResponse(name="payments", partitions=[]),
        ]
    )
