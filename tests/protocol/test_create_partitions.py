from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.create_partitions import (
    CreatePartitionsAssignment,
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = CreatePartitionsRequest(
    topics=[
        CreatePartitionsTopic(name="orders", count=6, assignments=None),
        CreatePartitionsTopic(
            name="payments",
            count=3,
            assignments=[
                CreatePartitionsAssignment(broker_ids=[1, 2]),
                CreatePartitionsAssignment(broker_ids=[]),
            ],
        ),
    ],
    timeout_ms=15000,
    validate_only=True,
)

RESPONSE = CreatePartitionsResponse(
    throttle_time_ms=5,
    results=[
        CreatePartitionsTopicResult(name="orders", error_code=0, error_message=None),
        CreatePartitionsTopicResult(
            name="payments",
            error_code=ErrorCode.INVALID_PARTITIONS,
            error_message="Topic currently has 3 partitions.",
        ),
    ],
)


def test_versions():
    assert CreatePartitionsRequest.VERSIONS == CreatePartitionsResponse.VERSIONS == range(0, 4)
    assert CreatePartitionsRequest.FLEXIBLE_FROM == CreatePartitionsResponse.FLEXIBLE_FROM == 2


@pytest.mark.parametrize("version", CreatePartitionsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", CreatePartitionsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


@pytest.mark.parametrize("version", [0, 2, 3])
def test_golden_kafka_python(version):
    assert decode_golden(CreatePartitionsRequest, f"create_partitions_v{version}.hex") == (
        version,
        CreatePartitionsRequest(
            topics=[
                CreatePartitionsTopic(name="orders", count=6, assignments=None),
                CreatePartitionsTopic(
                    name="payments",
                    count=2,
                    assignments=[CreatePartitionsAssignment(broker_ids=[1])],
                ),
            ],
            timeout_ms=15000,
            validate_only=False,
        ),
    )


@pytest.mark.parametrize("version", CreatePartitionsRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_topic(version):
    code = ErrorCode.NOT_CONTROLLER
    assert error_response(REQUEST, code, version) == CreatePartitionsResponse(
        results=[
            CreatePartitionsTopicResult(name="orders", error_code=code),
            CreatePartitionsTopicResult(name="payments", error_code=code),
        ]
    )
