import uuid
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.metadata import (
    MetadataRequest,
    MetadataRequestTopic,
    MetadataResponse,
    MetadataResponseBroker,
    MetadataResponsePartition,
    MetadataResponseTopic,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
TOPIC_ID = uuid.UUID("6ba7b810-9dad-11d1-80b4-00c04fd430c8")

REQUEST = MetadataRequest(
    topics=[
        MetadataRequestTopic(topic_id=TOPIC_ID, name="orders"),
        MetadataRequestTopic(name="payments"),
    ],
    allow_auto_topic_creation=False,
    include_cluster_authorized_operations=True,
    include_topic_authorized_operations=True,
)

RESPONSE = MetadataResponse(
    throttle_time_ms=5,
    brokers=[
        MetadataResponseBroker(node_id=1, host="localhost", port=9092, rack="rack-a"),
        MetadataResponseBroker(node_id=2, host="localhost", port=9093, rack=None),
    ],
    cluster_id="kmock-cluster",
    controller_id=1,
    topics=[
        MetadataResponseTopic(
            error_code=0,
            name="orders",
            topic_id=TOPIC_ID,
            is_internal=False,
            partitions=[
                MetadataResponsePartition(
                    error_code=0,
                    partition_index=0,
                    leader_id=1,
                    leader_epoch=4,
                    replica_nodes=[1, 2],
                    isr_nodes=[1],
                    offline_replicas=[2],
                )
            ],
            topic_authorized_operations=0x0DF8,
        ),
        MetadataResponseTopic(
            error_code=ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, name="__consumer_offsets"
        ),
    ],
    cluster_authorized_operations=0x0FF0,
)


def test_versions():
    assert MetadataRequest.VERSIONS == MetadataResponse.VERSIONS == range(0, 14)
    assert MetadataRequest.FLEXIBLE_FROM == MetadataResponse.FLEXIBLE_FROM == 9


@pytest.mark.parametrize("version", MetadataRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", range(1, 13))
def test_request_for_all_topics_is_a_null_array_from_v1(version):
    data = assert_roundtrip(MetadataRequest(topics=None), version)
    assert data.startswith(b"\x00" if version >= 9 else b"\xff\xff\xff\xff")


@pytest.mark.parametrize("version", range(10, 13))
def test_request_topic_by_id_has_a_null_name_from_v10(version):
    assert_roundtrip(
        MetadataRequest(topics=[MetadataRequestTopic(topic_id=TOPIC_ID, name=None)]), version
    )


@pytest.mark.parametrize("version", MetadataResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


def test_response_topic_name_is_nullable_at_v12():
    topic = MetadataResponseTopic(
        error_code=ErrorCode.UNKNOWN_TOPIC_ID, name=None, topic_id=TOPIC_ID
    )
    assert_roundtrip(MetadataResponse(topics=[topic]), 12)


def test_golden_kafka_python_v0():
    assert decode_golden(MetadataRequest, "metadata_v0.hex") == (
        0,
        MetadataRequest(
            topics=[MetadataRequestTopic(name="orders"), MetadataRequestTopic(name="payments")],
        ),
    )


def test_golden_kafka_python_v9():
    assert decode_golden(MetadataRequest, "metadata_v9.hex") == (
        9,
        MetadataRequest(
            topics=[MetadataRequestTopic(name="orders"), MetadataRequestTopic(name="payments")],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=True,
            include_topic_authorized_operations=True,
        ),
    )


def test_golden_kafka_python_v12():
    assert decode_golden(MetadataRequest, "metadata_v12.hex") == (
        12,
        MetadataRequest(
            topics=[
                MetadataRequestTopic(topic_id=TOPIC_ID, name=None),
                MetadataRequestTopic(topic_id=uuid.UUID(int=0), name="payments"),
            ],
            allow_auto_topic_creation=False,
            include_cluster_authorized_operations=False,
            include_topic_authorized_operations=True,
        ),
    )


@pytest.mark.parametrize("version", MetadataRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_requested_topic(version):
    request = MetadataRequest(
        topics=[
            MetadataRequestTopic(name="orders"),
            MetadataRequestTopic(topic_id=TOPIC_ID, name=None),
        ]
    )
    code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    assert error_response(request, code, version) == MetadataResponse(
        error_code=code if version >= 13 else ErrorCode.NONE,
        topics=[
            MetadataResponseTopic(error_code=code, name="orders"),
            MetadataResponseTopic(error_code=code, name="", topic_id=TOPIC_ID),
        ],
    )


@pytest.mark.parametrize("version", MetadataRequest.VERSIONS)
def test_error_response_for_all_topics_has_the_code_only_at_the_top_from_v13(version):
    request = MetadataRequest(topics=None)
    code = ErrorCode.UNKNOWN_SERVER_ERROR
    expected = MetadataResponse(error_code=code if version >= 13 else ErrorCode.NONE)
    assert error_response(request, code, version) == expected
