from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.delete_records import (
    DeleteRecordsPartition,
    DeleteRecordsPartitionResult,
    DeleteRecordsRequest,
    DeleteRecordsResponse,
    DeleteRecordsTopic,
    DeleteRecordsTopicResult,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = DeleteRecordsRequest(
    topics=[
        DeleteRecordsTopic(
            name="orders",
            partitions=[
                DeleteRecordsPartition(partition_index=0, offset=100),
                DeleteRecordsPartition(partition_index=1, offset=-1),
            ],
        )
    ],
    timeout_ms=15000,
)

RESPONSE = DeleteRecordsResponse(
    throttle_time_ms=5,
    topics=[
        DeleteRecordsTopicResult(
            name="orders",
            partitions=[
                DeleteRecordsPartitionResult(partition_index=0, low_watermark=100, error_code=0),
                DeleteRecordsPartitionResult(
                    partition_index=1,
                    low_watermark=-1,
                    error_code=ErrorCode.OFFSET_OUT_OF_RANGE,
                ),
            ],
        ),
        DeleteRecordsTopicResult(name="payments", partitions=[]),
    ],
)


def test_versions():
    assert DeleteRecordsRequest.VERSIONS == DeleteRecordsResponse.VERSIONS == range(0, 3)
    assert DeleteRecordsRequest.FLEXIBLE_FROM == DeleteRecordsResponse.FLEXIBLE_FROM == 2


@pytest.mark.parametrize("version", DeleteRecordsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", DeleteRecordsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


@pytest.mark.parametrize("version", [0, 2])
def test_golden_kafka_python(version):
    assert decode_golden(DeleteRecordsRequest, f"delete_records_v{version}.hex") == (
        version,
        DeleteRecordsRequest(
            topics=[
                DeleteRecordsTopic(
                    name="orders",
                    partitions=[
                        DeleteRecordsPartition(partition_index=0, offset=100),
                        DeleteRecordsPartition(partition_index=1, offset=-1),
                    ],
                )
            ],
            timeout_ms=15000,
        ),
    )


@pytest.mark.parametrize("version", DeleteRecordsRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_partition(version):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error_response(REQUEST, code, version) == DeleteRecordsResponse(
        topics=[
            DeleteRecordsTopicResult(
                name="orders",
                partitions=[
                    DeleteRecordsPartitionResult(
                        partition_index=0, low_watermark=-1, error_code=code
                    ),
                    DeleteRecordsPartitionResult(
                        partition_index=1, low_watermark=-1, error_code=code
                    ),
                ],
            )
        ]
    )
