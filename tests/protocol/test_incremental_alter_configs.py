from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    AlterConfigsResourceResponse,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = IncrementalAlterConfigsRequest(
    resources=[
        AlterConfigsResource(
            resource_type=2,
            resource_name="orders",
            configs=[
                AlterableConfig(name="retention.ms", config_operation=0, value="86400000"),
                AlterableConfig(name="cleanup.policy", config_operation=1, value=None),
            ],
        ),
        AlterConfigsResource(resource_type=4, resource_name="1", configs=[]),
    ],
    validate_only=False,
)

RESPONSE = IncrementalAlterConfigsResponse(
    throttle_time_ms=5,
    responses=[
        AlterConfigsResourceResponse(
            error_code=0, error_message=None, resource_type=2, resource_name="orders"
        ),
        AlterConfigsResourceResponse(
            error_code=ErrorCode.INVALID_CONFIG,
            error_message="unknown config",
            resource_type=4,
            resource_name="1",
        ),
    ],
)


def test_versions():
    assert (
        IncrementalAlterConfigsRequest.VERSIONS
        == IncrementalAlterConfigsResponse.VERSIONS
        == range(0, 2)
    )
    assert (
        IncrementalAlterConfigsRequest.FLEXIBLE_FROM
        == IncrementalAlterConfigsResponse.FLEXIBLE_FROM
        == 1
    )


@pytest.mark.parametrize("version", IncrementalAlterConfigsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", IncrementalAlterConfigsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


@pytest.mark.parametrize("version", [0, 1])
def test_golden_kafka_python(version):
    name = f"incremental_alter_configs_v{version}.hex"
    assert decode_golden(IncrementalAlterConfigsRequest, name) == (version, REQUEST)


@pytest.mark.parametrize("version", IncrementalAlterConfigsRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_resource(version):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert error_response(REQUEST, code, version) == IncrementalAlterConfigsResponse(
        responses=[
            AlterConfigsResourceResponse(
                error_code=code, error_message=None, resource_type=2, resource_name="orders"
            ),
            AlterConfigsResourceResponse(
                error_code=code, error_message=None, resource_type=4, resource_name="1"
            ),
        ]
    )
