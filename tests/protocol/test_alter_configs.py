from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.alter_configs import (
    AlterableConfig,
    AlterConfigsRequest,
    AlterConfigsResource,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = AlterConfigsRequest(
    resources=[
        AlterConfigsResource(
            resource_type=2,
            resource_name="orders",
            configs=[
                AlterableConfig(name="retention.ms", value="86400000"),
                AlterableConfig(name="cleanup.policy", value=None),
            ],
        ),
        AlterConfigsResource(resource_type=4, resource_name="1", configs=[]),
    ],
    validate_only=True,
)

RESPONSE = AlterConfigsResponse(
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
    assert AlterConfigsRequest.VERSIONS == AlterConfigsResponse.VERSIONS == range(0, 3)
    assert AlterConfigsRequest.FLEXIBLE_FROM == AlterConfigsResponse.FLEXIBLE_FROM == 2


@pytest.mark.parametrize("version", AlterConfigsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", AlterConfigsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


@pytest.mark.parametrize("version", [0, 2])
def test_golden_kafka_python(version):
    assert decode_golden(AlterConfigsRequest, f"alter_configs_v{version}.hex") == (
        version,
        AlterConfigsRequest(
            resources=[
                AlterConfigsResource(
                    resource_type=2,
                    resource_name="orders",
                    configs=[
                        AlterableConfig(name="retention.ms", value="86400000"),
                        AlterableConfig(name="cleanup.policy", value=None),
                    ],
                )
            ],
            validate_only=True,
        ),
    )


@pytest.mark.parametrize("version", AlterConfigsRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_resource(version):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert error_response(REQUEST, code, version) == AlterConfigsResponse(
        responses=[
            AlterConfigsResourceResponse(
                error_code=code, error_message=None, resource_type=2, resource_name="orders"
            ),
            AlterConfigsResourceResponse(
                error_code=code, error_message=None, resource_type=4, resource_name="1"
            ),
        ]
    )
