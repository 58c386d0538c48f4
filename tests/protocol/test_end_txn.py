import pytest

from protocol.errors import ErrorCode
from protocol.messages.end_txn import EndTxnRequest, EndTxnResponse, error_response
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip, for_version
from tests.protocol.tagged import assert_unknown_top_level_tag_is_skipped

REQUEST = EndTxnRequest(
    transactional_id="txn-1", producer_id=4000, producer_epoch=2, committed=True
)
RESPONSE = EndTxnResponse(throttle_time_ms=1, error_code=0, producer_id=4000, producer_epoch=3)
VERSIONS = EndTxnRequest.VERSIONS


def test_versions():
    assert EndTxnRequest.VERSIONS == EndTxnResponse.VERSIONS == range(6)
    assert EndTxnRequest.FLEXIBLE_FROM == EndTxnResponse.FLEXIBLE_FROM == 3


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v5_response_carries_the_bumped_epoch():
    assert encode(RESPONSE, 5).hex() == "0000000100000000000000000fa0000300"
    assert encode(RESPONSE, 4).hex() == "00000001000000"


def test_below_v5_producer_fields_decode_to_minus_one():
    response = decode(EndTxnResponse, 4, bytes.fromhex("00000000003000"))
    assert response == EndTxnResponse(error_code=ErrorCode.INVALID_TXN_STATE)
    assert (response.producer_id, response.producer_epoch) == (-1, -1)


@pytest.mark.parametrize("version", [3, 4, 5])
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_unknown_tagged_field_is_skipped(msg, version):
    assert_unknown_top_level_tag_is_skipped(for_version(msg, version), version)


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_has_no_producer(version):
    response = error_response(REQUEST, ErrorCode.PRODUCER_FENCED, version)
    assert response == EndTxnResponse(error_code=ErrorCode.PRODUCER_FENCED)
    assert (response.producer_id, response.producer_epoch) == (-1, -1)
