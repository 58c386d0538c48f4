from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.find_coordinator import (
    Coordinator,
    FindCoordinatorRequest,
    FindCoordinatorResponse,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip, for_version

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = FindCoordinatorRequest.VERSIONS

REQUEST = FindCoordinatorRequest(key="group-a", key_type=1, coordinator_keys=["group-a", "txn-1"])
RESPONSE = FindCoordinatorResponse(
    throttle_time_ms=5,
    error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    error_message="loading",
    node_id=1,
    host="broker-1",
    port=9092,
    coordinators=[
        Coordinator(
            key="group-a", node_id=1, host="broker-1", port=9092, error_code=0, error_message=None
        ),
        Coordinator(key="txn-1", node_id=-1, host="", port=-1, error_code=15, error_message="no"),
    ],
)
RESPONSE_NULL_MESSAGE = FindCoordinatorResponse(error_message=None, node_id=2, host="h", port=1)

CASES = [
    (REQUEST, VERSIONS),
    (RESPONSE, VERSIONS),
    (RESPONSE_NULL_MESSAGE, range(1, 4)),
]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v0_response_bytes_follow_the_grammar():
    data = encode(FindCoordinatorResponse(error_code=0, node_id=1, host="h", port=9092), 0)
    # error_code, node_id, host "h", port 9092
    assert data.hex() == "0000" + "00000001" + "0001" + "68" + "00002384"


GOLDEN_REQUESTS = {
    0: FindCoordinatorRequest(key="group-a"),
    3: FindCoordinatorRequest(key="txn-1", key_type=1),
    6: FindCoordinatorRequest(key_type=0, coordinator_keys=["group-a", "group-b"]),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"find_coordinator_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, FindCoordinatorRequest.is_flexible(version))
    assert header == RequestHeader(10, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(FindCoordinatorRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


@pytest.mark.parametrize("version", range(VERSIONS.start, 4))
def test_error_response_below_v4_puts_the_code_at_the_top_level(version):
    request = for_version(REQUEST, version)
    response = error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE, version)
    decoded = decode(FindCoordinatorResponse, version, assert_roundtrip(response, version))
    assert decoded == FindCoordinatorResponse(
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
        error_message=None if version >= 1 else "",  # v0 has no error_message
        node_id=-1,
        host="",
        port=-1,
    )


@pytest.mark.parametrize("version", range(4, VERSIONS.stop))
def test_error_response_from_v4_answers_each_key(version):
    request = for_version(REQUEST, version)
    response = error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE, version)
    decoded = decode(FindCoordinatorResponse, version, assert_roundtrip(response, version))
    assert decoded == FindCoordinatorResponse(
        coordinators=[
            Coordinator(
                key="group-a", node_id=-1, host="", port=-1, error_code=15, error_message=None
            ),
            Coordinator(
                key="txn-1", node_id=-1, host="", port=-1, error_code=15, error_message=None
            ),
        ],
    )
