from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse, error_response
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = HeartbeatRequest.VERSIONS

REQUEST = HeartbeatRequest(
    group_id="group-a", generation_id=7, member_id="m-1", group_instance_id="instance-1"
)
REQUEST_NULLS = HeartbeatRequest(
    group_id="group-a", generation_id=7, member_id="m-1", group_instance_id=None
)
RESPONSE = HeartbeatResponse(throttle_time_ms=9, error_code=ErrorCode.REBALANCE_IN_PROGRESS)

CASES = [(REQUEST, VERSIONS), (REQUEST_NULLS, VERSIONS), (RESPONSE, VERSIONS)]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v4_request_bytes_follow_the_grammar():
    # compact strings (length + 1), compact nullable string, empty tag buffer
    data = encode(REQUEST, 4)
    assert data.hex() == (
        "08"
        + b"group-a".hex()
        + "00000007"
        + "04"
        + b"m-1".hex()
        + "0b"
        + b"instance-1".hex()
        + "00"
    )


GOLDEN_REQUESTS = {
    0: HeartbeatRequest(group_id="group-a", generation_id=3, member_id="m-1"),
    4: HeartbeatRequest(
        group_id="group-a", generation_id=3, member_id="m-1", group_instance_id="instance-1"
    ),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"heartbeat_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, HeartbeatRequest.is_flexible(version))
    assert header == RequestHeader(12, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(HeartbeatRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_sets_top_level_code(version):
    response = error_response(REQUEST, ErrorCode.ILLEGAL_GENERATION, version)
    assert response == HeartbeatResponse(error_code=ErrorCode.ILLEGAL_GENERATION)
    assert_roundtrip(response, version)
