from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.describe_cluster import (
    DescribeClusterBroker,
    DescribeClusterRequest,
    DescribeClusterResponse,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=2)

RESPONSE = DescribeClusterResponse(
    throttle_time_ms=5,
    error_code=0,
    error_message=None,
    endpoint_type=2,
    cluster_id="kmock-cluster",
    controller_id=1,
    brokers=[
        DescribeClusterBroker(broker_id=1, host="localhost", port=9092, rack="rack-a"),
        DescribeClusterBroker(broker_id=2, host="localhost", port=9093, rack=None),
    ],
    cluster_authorized_operations=0x0FF0,
)


def test_versions():
    assert DescribeClusterRequest.VERSIONS == DescribeClusterResponse.VERSIONS == range(0, 3)
    assert DescribeClusterRequest.FLEXIBLE_FROM == DescribeClusterResponse.FLEXIBLE_FROM == 0


@pytest.mark.parametrize("version", DescribeClusterRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", DescribeClusterResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


@pytest.mark.parametrize("version", [0, 1])
def test_golden_kafka_python(version):
    assert decode_golden(DescribeClusterRequest, f"describe_cluster_v{version}.hex") == (
        version,
        DescribeClusterRequest(include_cluster_authorized_operations=True, endpoint_type=1),
    )


@pytest.mark.parametrize("version", DescribeClusterRequest.VERSIONS)
def test_error_response_puts_the_code_at_the_top(version):
    code = ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    assert error_response(REQUEST, code, version) == DescribeClusterResponse(error_code=code)
