from protocol.errors import ErrorCode
from protocol.messages.describe_transactions import (
    DescribeTransactionsRequest,
    DescribeTransactionsResponse,
    TopicData,
    TransactionState,
    error_response,
)
from protocol.schema import encode
from tests.protocol.roundtrip import assert_roundtrip
from tests.protocol.tagged import assert_unknown_top_level_tag_is_skipped

REQUEST = DescribeTransactionsRequest(transactional_ids=["txn-a", "txn-b"])
RESPONSE = DescribeTransactionsResponse(
    throttle_time_ms=0,
    transaction_states=[
        TransactionState(
            error_code=0,
            transactional_id="txn-a",
            transaction_state="Ongoing",
            transaction_timeout_ms=60000,
            transaction_start_time_ms=1_700_000_000_000,
            producer_id=4000,
            producer_epoch=2,
            topics=[TopicData(topic="orders", partitions=[0, 3])],
        ),
        TransactionState(error_code=ErrorCode.TRANSACTIONAL_ID_NOT_FOUND, transactional_id="txn-b"),
    ],
)


def test_versions():
    assert DescribeTransactionsRequest.VERSIONS == DescribeTransactionsResponse.VERSIONS == range(1)
    assert DescribeTransactionsRequest.FLEXIBLE_FROM == 0


def test_roundtrip():
    assert_roundtrip(REQUEST, 0)
    assert_roundtrip(RESPONSE, 0)


def test_request_bytes_are_compact():
    assert encode(REQUEST, 0).hex() == "0306" + b"txn-a".hex() + "06" + b"txn-b".hex() + "00"


def test_unknown_tagged_field_is_skipped():
    assert_unknown_top_level_tag_is_skipped(REQUEST, 0)
    assert_unknown_top_level_tag_is_skipped(RESPONSE, 0)


def test_error_response_answers_every_id():
    assert error_response(REQUEST, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, 0) == (
        DescribeTransactionsResponse(
            transaction_states=[
                TransactionState(
                    error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, transactional_id=t
                )
                for t in ("txn-a", "txn-b")
            ]
        )
    )
