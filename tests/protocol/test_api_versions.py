import pytest

from protocol.messages.api_versions import (
    ApiVersion,
    ApiVersionsRequest,
    ApiVersionsResponse,
    SupportedFeatureKey,
)
from protocol.schema import DecodeError, decode, encode
from tests.protocol.roundtrip import assert_roundtrip

RESPONSE = ApiVersionsResponse(
    error_code=0,
    api_keys=[ApiVersion(api_key=0, min_version=3, max_version=11)],
    throttle_time_ms=5,
    supported_features=[SupportedFeatureKey(name="metadata.version", min_version=1, max_version=7)],
    finalized_features_epoch=7,
)


@pytest.mark.parametrize("version", ApiVersionsResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


@pytest.mark.parametrize("version", ApiVersionsRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(
        ApiVersionsRequest(client_software_name="kmock", client_software_version="0.1"), version
    )


def test_v3_response_bytes_match_kafka_grammar():
    # error_code, compact array of 1 (0x02), key 0 min 3 max 11, no tags (0x00),
    # throttle 5, then tags: count 1? no: epoch (tag 1) and features (tag 0) differ from default
    data = encode(
        ApiVersionsResponse(api_keys=[ApiVersion(api_key=0, min_version=3, max_version=11)]), 3
    )
    assert data.hex() == "00000200000003000b000000000000"


def test_unknown_tagged_field_is_skipped():
    data = bytes.fromhex("00000100000000011f02abcd")
    assert decode(ApiVersionsResponse, 3, data) == ApiVersionsResponse()


@pytest.mark.parametrize(
    "hexdata",
    [
        "0000020000",  # array says one element, frame ends inside it
        "0000010000000000ff",  # a byte left over
        "0000ffffffff0f",  # varint too long
        "0000010000000001010500",  # tagged field longer than the frame
    ],
)
def test_malformed_frames_raise_decode_error(hexdata):
    with pytest.raises(DecodeError):
        decode(ApiVersionsResponse, 3, bytes.fromhex(hexdata))


def test_huge_array_count_is_refused_without_allocating():
    with pytest.raises(DecodeError):
        decode(ApiVersionsResponse, 0, bytes.fromhex("00007fffffff"))
