import pytest

from protocol.errors import ErrorCode
from protocol.messages.list_transactions import (
    ListedTransactionState,
    ListTransactionsRequest,
    ListTransactionsResponse,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip, for_version
from tests.protocol.tagged import assert_unknown_top_level_tag_is_skipped

REQUEST = ListTransactionsRequest(
    state_filters=["Ongoing", "Bogus"], producer_id_filters=[4000, 4001], duration_filter=5000
)
RESPONSE = ListTransactionsResponse(
    throttle_time_ms=0,
    error_code=0,
    unknown_state_filters=["Bogus"],
    transaction_states=[
        ListedTransactionState(
            transactional_id="txn-a", producer_id=4000, transaction_state="Ongoing"
        )
    ],
)


def test_versions():
    assert ListTransactionsRequest.VERSIONS == ListTransactionsResponse.VERSIONS == range(2)
    assert ListTransactionsRequest.FLEXIBLE_FROM == 0


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v0_has_no_duration_filter():
    request = decode(ListTransactionsRequest, 0, encode(REQUEST, 0))
    assert request.duration_filter == -1
    assert encode(REQUEST, 1) == encode(REQUEST, 0)[:-1] + bytes.fromhex("000000000000138800")


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_unknown_tagged_field_is_skipped(msg, version):
    assert_unknown_top_level_tag_is_skipped(for_version(msg, version), version)


@pytest.mark.parametrize("version", [0, 1])
def test_error_response_is_top_level(version):
    assert error_response(REQUEST, ErrorCode.COORDINATOR_NOT_AVAILABLE, version) == (
        ListTransactionsResponse(error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE)
    )
