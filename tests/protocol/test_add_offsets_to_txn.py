import pytest

from protocol.errors import ErrorCode
from protocol.messages.add_offsets_to_txn import (
    AddOffsetsToTxnRequest,
    AddOffsetsToTxnResponse,
    error_response,
)
from protocol.schema import encode
from tests.protocol.roundtrip import assert_roundtrip
from tests.protocol.tagged import assert_unknown_top_level_tag_is_skipped

REQUEST = AddOffsetsToTxnRequest(
    transactional_id="txn-1", producer_id=4000, producer_epoch=2, group_id="g"
)
RESPONSE = AddOffsetsToTxnResponse(throttle_time_ms=7, error_code=ErrorCode.CONCURRENT_TRANSACTIONS)
VERSIONS = AddOffsetsToTxnRequest.VERSIONS


def test_versions():
    assert AddOffsetsToTxnRequest.VERSIONS == AddOffsetsToTxnResponse.VERSIONS == range(5)
    assert AddOffsetsToTxnRequest.FLEXIBLE_FROM == AddOffsetsToTxnResponse.FLEXIBLE_FROM == 3


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_request_bytes_v2_and_v3():
    assert encode(REQUEST, 2).hex() == (
        "0005" + b"txn-1".hex() + "0000000000000fa0" + "0002" + "0001" + b"g".hex()
    )
    assert encode(REQUEST, 3).hex() == (
        "06" + b"txn-1".hex() + "0000000000000fa0" + "0002" + "02" + b"g".hex() + "00"
    )


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_unknown_tagged_field_is_skipped(msg, version):
    assert_unknown_top_level_tag_is_skipped(msg, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_is_top_level(version):
    assert error_response(REQUEST, ErrorCode.PRODUCER_FENCED, version) == AddOffsetsToTxnResponse(
        error_code=ErrorCode.PRODUCER_FENCED
    )
