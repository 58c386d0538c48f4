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


def test_error_response_sets_top_level_and_one_coordinator_per_key():
    request = FindCoordinatorRequest(key_type=0, coordinator_keys=["a", "b"])
    response = error_response(request, ErrorCode.NOT_COORDINATOR)
    assert response == FindCoordinatorResponse(
        error_code=ErrorCode.NOT_COORDINATOR,
        node_id=-1,
        host="",
        port=-1,
        coordinators=[
            Coordinator(key="a", node_id=-1, host="", port=-1, error_code=16, error_message=None),
            Coordinator(key="b", node_id=-1, host="", port=-1, error_code=16, error_message=None),
        ],
    )


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_carries_the_code_at_every_version(version):
    request = for_version(REQUEST, version)
    response = error_response(request, ErrorCode.COORDINATOR_NOT_AVAILABLE)
    decoded = decode(FindCoordinatorResponse, version, assert_roundtrip(response, version))
    if version < 4:
        assert decoded.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert (decoded.node_id, decoded.host, decoded.port) == (-1, "", -1)
    else:
        assert [(c.key, c.error_code) for c in decoded.coordinators] == [
            ("group-a", 15),
            ("txn-1", 15),
        ]
