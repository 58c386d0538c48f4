from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.describe_log_dirs import (
    DescribableLogDirTopic,
    DescribeLogDirsPartition,
    DescribeLogDirsRequest,
    DescribeLogDirsResponse,
    DescribeLogDirsResult,
    DescribeLogDirsTopic,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = DescribeLogDirsRequest(
    topics=[
        DescribableLogDirTopic(topic="orders", partitions=[0, 1, 2]),
        DescribableLogDirTopic(topic="payments", partitions=[]),
    ]
)

RESPONSE = DescribeLogDirsResponse(
    throttle_time_ms=5,
    error_code=ErrorCode.NONE,
    results=[
        DescribeLogDirsResult(
            error_code=0,
            log_dir="/var/lib/kmock/data",
            topics=[
                DescribeLogDirsTopic(
                    name="orders",
                    partitions=[
                        DescribeLogDirsPartition(
                            partition_index=0,
                            partition_size=4096,
                            offset_lag=0,
                            is_future_key=False,
                        ),
                        DescribeLogDirsPartition(
                            partition_index=1, partition_size=0, offset_lag=12, is_future_key=True
                        ),
                    ],
                )
            ],
            total_bytes=1 << 40,
            usable_bytes=1 << 39,
        ),
        DescribeLogDirsResult(error_code=ErrorCode.KAFKA_STORAGE_ERROR, log_dir="/mnt/broken"),
    ],
)


def test_versions():
    assert DescribeLogDirsRequest.VERSIONS == DescribeLogDirsResponse.VERSIONS == range(1, 5)
    assert DescribeLogDirsRequest.FLEXIBLE_FROM == DescribeLogDirsResponse.FLEXIBLE_FROM == 2


@pytest.mark.parametrize("version", DescribeLogDirsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", DescribeLogDirsRequest.VERSIONS)
def test_request_for_every_partition_is_a_null_array(version):
    assert_roundtrip(DescribeLogDirsRequest(topics=None), version)


@pytest.mark.parametrize("version", DescribeLogDirsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


def test_golden_kafka_python_v1():
    assert decode_golden(DescribeLogDirsRequest, "describe_log_dirs_v1.hex") == (
        1,
        DescribeLogDirsRequest(topics=None),
    )


@pytest.mark.parametrize("version", [2, 4])
def test_golden_kafka_python_flexible(version):
    assert decode_golden(DescribeLogDirsRequest, f"describe_log_dirs_v{version}.hex") == (
        version,
        DescribeLogDirsRequest(
            topics=[
                DescribableLogDirTopic(topic="orders", partitions=[0, 1, 2]),
                DescribableLogDirTopic(topic="payments", partitions=[]),
            ]
        ),
    )


@pytest.mark.parametrize("version", DescribeLogDirsRequest.VERSIONS)
def test_error_response_puts_the_code_at_the_top_only(version):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    response = error_response(REQUEST, code, version)
    assert response == DescribeLogDirsResponse(error_code=code, results=[])
