import uuid
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
    DeleteTopicState,
    error_response,
)
from protocol.schema import decode
from tests.protocol.roundtrip import assert_roundtrip, decode_golden, for_version

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")
ZERO_ID = uuid.UUID(int=0)

REQUEST = DeleteTopicsRequest(
    topics=[
        DeleteTopicState(name="orders", topic_id=ZERO_ID),
        DeleteTopicState(name=None, topic_id=TOPIC_ID),
    ],
    topic_names=["orders", "payments"],
    timeout_ms=15000,
)

RESPONSE = DeleteTopicsResponse(
    throttle_time_ms=5,
    responses=[
        DeletableTopicResult(name="orders", topic_id=TOPIC_ID, error_code=0, error_message=None),
        DeletableTopicResult(
            name="payments",
            error_code=ErrorCode.TOPIC_DELETION_DISABLED,
            error_message="Topic deletion is disabled.",
        ),
    ],
)


def test_versions():
    assert DeleteTopicsRequest.VERSIONS == DeleteTopicsResponse.VERSIONS == range(1, 7)
    assert DeleteTopicsRequest.FLEXIBLE_FROM == DeleteTopicsResponse.FLEXIBLE_FROM == 4


@pytest.mark.parametrize("version", DeleteTopicsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", DeleteTopicsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


def test_response_name_is_nullable_at_v6():
    result = DeletableTopicResult(
        name=None, topic_id=TOPIC_ID, error_code=ErrorCode.UNKNOWN_TOPIC_ID
    )
    assert_roundtrip(DeleteTopicsResponse(responses=[result]), 6)


@pytest.mark.parametrize("version", [1, 4])
def test_golden_kafka_python_by_name(version):
    assert decode_golden(DeleteTopicsRequest, f"delete_topics_v{version}.hex") == (
        version,
        DeleteTopicsRequest(topic_names=["orders", "payments"], timeout_ms=15000),
    )


def test_golden_kafka_python_v6():
    assert decode_golden(DeleteTopicsRequest, "delete_topics_v6.hex") == (
        6,
        DeleteTopicsRequest(
            topics=[
                DeleteTopicState(name="orders", topic_id=ZERO_ID),
                DeleteTopicState(name=None, topic_id=TOPIC_ID),
            ],
            timeout_ms=15000,
        ),
    )


@pytest.mark.parametrize("version", range(DeleteTopicsRequest.VERSIONS.start, 6))
def test_error_response_below_v6_answers_each_topic_name(version):
    code = ErrorCode.NOT_CONTROLLER
    response = error_response(for_version(REQUEST, version), code, version)
    decoded = decode(DeleteTopicsResponse, version, assert_roundtrip(response, version))
    assert decoded == DeleteTopicsResponse(
        responses=[
            DeletableTopicResult(name="orders", error_code=code),
            DeletableTopicResult(name="payments", error_code=code),
        ]
    )


def test_error_response_from_v6_answers_each_topic_by_name_and_id():
    code = ErrorCode.NOT_CONTROLLER
    response = error_response(for_version(REQUEST, 6), code, 6)
    decoded = decode(DeleteTopicsResponse, 6, assert_roundtrip(response, 6))
    assert decoded == DeleteTopicsResponse(
        responses=[
            DeletableTopicResult(name="orders", topic_id=ZERO_ID, error_code=code),
            DeletableTopicResult(name=None, topic_id=TOPIC_ID, error_code=code),
        ]
    )
