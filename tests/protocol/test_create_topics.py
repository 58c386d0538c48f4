import uuid
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfig,
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")

REQUEST = CreateTopicsRequest(
    topics=[
        CreatableTopic(
            name="orders",
            num_partitions=3,
            replication_factor=1,
            assignments=[],
            configs=[
                CreatableTopicConfig(name="cleanup.policy", value="compact"),
                CreatableTopicConfig(name="retention.ms", value=None),
            ],
        ),
        CreatableTopic(
            name="payments",
            num_partitions=-1,
            replication_factor=-1,
            assignments=[
                CreatableReplicaAssignment(partition_index=0, broker_ids=[1, 2]),
                CreatableReplicaAssignment(partition_index=1, broker_ids=[2, 1]),
            ],
            configs=[],
        ),
    ],
    timeout_ms=15000,
    validate_only=True,
)

RESPONSE = CreateTopicsResponse(
    throttle_time_ms=5,
    topics=[
        CreatableTopicResult(
            name="orders",
            topic_id=TOPIC_ID,
            error_code=0,
            error_message=None,
            topic_config_error_code=ErrorCode.TOPIC_AUTHORIZATION_FAILED,
            num_partitions=3,
            replication_factor=1,
            configs=[
                CreatableTopicConfigs(
                    name="cleanup.policy",
                    value="compact",
                    read_only=False,
                    config_source=1,
                    is_sensitive=False,
                ),
                CreatableTopicConfigs(
                    name="sasl.jaas.config",
                    value=None,
                    read_only=True,
                    config_source=5,
                    is_sensitive=True,
                ),
            ],
        ),
        CreatableTopicResult(
            name="payments",
            error_code=ErrorCode.TOPIC_ALREADY_EXISTS,
            error_message="Topic 'payments' already exists.",
            configs=None,
        ),
    ],
)


def test_versions():
    assert CreateTopicsRequest.VERSIONS == CreateTopicsResponse.VERSIONS == range(2, 8)
    assert CreateTopicsRequest.FLEXIBLE_FROM == CreateTopicsResponse.FLEXIBLE_FROM == 5


@pytest.mark.parametrize("version", CreateTopicsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", CreateTopicsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


@pytest.mark.parametrize("version", [2, 5, 7])
def test_golden_kafka_python(version):
    assert decode_golden(CreateTopicsRequest, f"create_topics_v{version}.hex") == (
        version,
        CreateTopicsRequest(
            topics=[
                CreatableTopic(
                    name="orders",
                    num_partitions=3,
                    replication_factor=1,
                    assignments=[],
                    configs=[
                        CreatableTopicConfig(name="cleanup.policy", value="compact"),
                        CreatableTopicConfig(name="retention.ms", value=None),
                    ],
                ),
                CreatableTopic(
                    name="payments",
                    num_partitions=-1,
                    replication_factor=-1,
                    assignments=[
                        CreatableReplicaAssignment(partition_index=0, broker_ids=[1]),
                        CreatableReplicaAssignment(partition_index=1, broker_ids=[1]),
                    ],
                    configs=[],
                ),
            ],
            timeout_ms=15000,
            validate_only=True,
        ),
    )


@pytest.mark.parametrize("version", CreateTopicsRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_topic(version):
    code = ErrorCode.NOT_CONTROLLER
    assert error_response(REQUEST, code, version) == CreateTopicsResponse(
        topics=[
            CreatableTopicResult(name="orders", error_code=code, error_message=None),
            CreatableTopicResult(name="payments", error_code=code, error_message=None),
        ]
    )
