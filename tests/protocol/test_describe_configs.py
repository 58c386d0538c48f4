from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = DescribeConfigsRequest(
    resources=[
        DescribeConfigsResource(resource_type=2, resource_name="orders", configuration_keys=None),
        DescribeConfigsResource(
            resource_type=4,
            resource_name="1",
            configuration_keys=["log.retention.ms", "num.partitions"],
        ),
    ],
    include_synonyms=True,
    include_documentation=True,
)

RESPONSE = DescribeConfigsResponse(
    throttle_time_ms=5,
    results=[
        DescribeConfigsResult(
            error_code=0,
            error_message=None,
            resource_type=2,
            resource_name="orders",
            configs=[
                DescribeConfigsResourceResult(
                    name="retention.ms",
                    value="86400000",
                    read_only=False,
                    is_default=True,
                    config_source=1,
                    is_sensitive=False,
                    synonyms=[
                        DescribeConfigsSynonym(name="retention.ms", value="86400000", source=1),
                        DescribeConfigsSynonym(name="log.retention.ms", value=None, source=5),
                    ],
                    config_type=5,
                    documentation="How long to keep a log segment.",
                ),
                DescribeConfigsResourceResult(
                    name="ssl.key.password",
                    value=None,
                    read_only=True,
                    is_sensitive=True,
                    documentation=None,
                ),
            ],
        ),
        DescribeConfigsResult(
            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
            error_message="no such topic",
            resource_type=2,
            resource_name="payments",
        ),
    ],
)


def test_versions():
    assert DescribeConfigsRequest.VERSIONS == DescribeConfigsResponse.VERSIONS == range(0, 5)
    assert DescribeConfigsRequest.FLEXIBLE_FROM == DescribeConfigsResponse.FLEXIBLE_FROM == 4


@pytest.mark.parametrize("version", DescribeConfigsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", DescribeConfigsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


@pytest.mark.parametrize("version", [1, 4])
def test_golden_kafka_python(version):
    assert decode_golden(DescribeConfigsRequest, f"describe_configs_v{version}.hex") == (
        version,
        DescribeConfigsRequest(
            resources=[
                DescribeConfigsResource(
                    resource_type=2, resource_name="orders", configuration_keys=None
                ),
                DescribeConfigsResource(
                    resource_type=4,
                    resource_name="1",
                    configuration_keys=["log.retention.ms", "num.partitions"],
                ),
            ],
            include_synonyms=True,
            include_documentation=version >= 3,
        ),
    )


@pytest.mark.parametrize("version", DescribeConfigsRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_resource(version):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert error_response(REQUEST, code, version) == DescribeConfigsResponse(
        results=[
            DescribeConfigsResult(
                error_code=code, error_message=None, resource_type=2, resource_name="orders"
            ),
            DescribeConfigsResult(
                error_code=code, error_message=None, resource_type=4, resource_name="1"
            ),
        ]
    )
