import pytest

from protocol.errors import ErrorCode
from protocol.messages.add_partitions_to_txn import (
    AddPartitionsToTxnPartitionResult,
    AddPartitionsToTxnRequest,
    AddPartitionsToTxnResponse,
    AddPartitionsToTxnResult,
    AddPartitionsToTxnTopic,
    AddPartitionsToTxnTopicResult,
    AddPartitionsToTxnTransaction,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip
from tests.protocol.tagged import assert_unknown_top_level_tag_is_skipped

VERSIONS = AddPartitionsToTxnRequest.VERSIONS
TOPICS = [
    AddPartitionsToTxnTopic(name="orders", partitions=[0, 2]),
    AddPartitionsToTxnTopic(name="audit", partitions=[1]),
]
REQUEST = AddPartitionsToTxnRequest(
    transactions=[
        AddPartitionsToTxnTransaction(
            transactional_id="txn-a",
            producer_id=4000,
            producer_epoch=3,
            verify_only=True,
            topics=TOPICS,
        ),
        AddPartitionsToTxnTransaction(
            transactional_id="txn-b", producer_id=4001, producer_epoch=0, topics=TOPICS[:1]
        ),
    ],
    v3_and_below_transactional_id="txn-a",
    v3_and_below_producer_id=4000,
    v3_and_below_producer_epoch=3,
    v3_and_below_topics=TOPICS,
)
RESULTS = [
    AddPartitionsToTxnTopicResult(
        name="orders",
        results_by_partition=[
            AddPartitionsToTxnPartitionResult(partition_index=0, partition_error_code=0),
            AddPartitionsToTxnPartitionResult(
                partition_index=2, partition_error_code=ErrorCode.TRANSACTION_ABORTABLE
            ),
        ],
    )
]
RESPONSE = AddPartitionsToTxnResponse(
    throttle_time_ms=3,
    error_code=0,
    results_by_transaction=[
        AddPartitionsToTxnResult(transactional_id="txn-a", topic_results=RESULTS)
    ],
    results_by_topic_v3_and_below=RESULTS,
)


def test_versions():
    assert AddPartitionsToTxnRequest.VERSIONS == AddPartitionsToTxnResponse.VERSIONS == range(6)
    assert AddPartitionsToTxnRequest.FLEXIBLE_FROM == AddPartitionsToTxnResponse.FLEXIBLE_FROM == 3


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v3_client_form_bytes():
    data = encode(
        AddPartitionsToTxnRequest(
            v3_and_below_transactional_id="t",
            v3_and_below_producer_id=1,
            v3_and_below_producer_epoch=2,
            v3_and_below_topics=[AddPartitionsToTxnTopic(name="x", partitions=[5])],
        ),
        3,
    )
    assert data.hex() == (
        "0274"  # compact string "t"
        "0000000000000001"  # producer id
        "0002"  # epoch
        "02"  # one topic
        "0278"  # "x"
        "02"
        "00000005"  # [5]
        "00"  # topic tags
        "00"  # message tags
    )


def test_v4_broker_form_bytes():
    data = encode(
        AddPartitionsToTxnRequest(
            transactions=[
                AddPartitionsToTxnTransaction(
                    transactional_id="t", producer_id=1, producer_epoch=2, verify_only=True
                )
            ]
        ),
        4,
    )
    assert data.hex() == "0202740000000000000001000201010000"


@pytest.mark.parametrize("version", [v for v in VERSIONS if v >= 3])
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_unknown_tagged_field_is_skipped(msg, version):
    from tests.protocol.roundtrip import for_version

    assert_unknown_top_level_tag_is_skipped(for_version(msg, version), version)


def test_v2_is_not_flexible():
    data = encode(AddPartitionsToTxnResponse(throttle_time_ms=1), 2)
    assert data.hex() == "0000000100000000"
    assert decode(AddPartitionsToTxnResponse, 2, data) == AddPartitionsToTxnResponse(
        throttle_time_ms=1
    )


@pytest.mark.parametrize("version", [v for v in VERSIONS if v < 4])
def test_error_response_below_v4_sets_every_partition(version):
    code = ErrorCode.PRODUCER_FENCED
    response = error_response(REQUEST, code, version)
    assert response == AddPartitionsToTxnResponse(
        results_by_topic_v3_and_below=[
            AddPartitionsToTxnTopicResult(
                name="orders",
                results_by_partition=[
                    AddPartitionsToTxnPartitionResult(partition_index=0, partition_error_code=code),
                    AddPartitionsToTxnPartitionResult(partition_index=2, partition_error_code=code),
                ],
            ),
            AddPartitionsToTxnTopicResult(
                name="audit",
                results_by_partition=[
                    AddPartitionsToTxnPartitionResult(partition_index=1, partition_error_code=code)
                ],
            ),
        ]
    )
    assert_roundtrip(response, version)


@pytest.mark.parametrize("version", [4, 5])
def test_error_response_from_v4_is_top_level(version):
    response = error_response(REQUEST, ErrorCode.CLUSTER_AUTHORIZATION_FAILED, version)
    assert response == AddPartitionsToTxnResponse(error_code=ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
    assert_roundtrip(response, version)
