from pathlib import Path

import pytest

from protocol.consumer_protocol import (
    decode_assignment,
    encode_assignment,
)
from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.sync_group import (
    SyncGroupRequest,
    SyncGroupRequestAssignment,
    SyncGroupResponse,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip
from tests.protocol.test_consumer_protocol import GOLDEN_ASSIGNMENTS

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = SyncGroupRequest.VERSIONS

REQUEST = SyncGroupRequest(
    group_id="group-a",
    generation_id=4,
    member_id="m-1",
    group_instance_id="instance-1",
    protocol_type="consumer",
    protocol_name="range",
    assignments=[
        SyncGroupRequestAssignment(member_id="m-1", assignment=b"\x00\x00a"),
        SyncGroupRequestAssignment(member_id="m-2", assignment=b""),
    ],
)
REQUEST_NULLS = SyncGroupRequest(
    group_id="g", generation_id=1, member_id="m", group_instance_id=None
)
RESPONSE = SyncGroupResponse(
    throttle_time_ms=3,
    error_code=0,
    protocol_type="consumer",
    protocol_name="range",
    assignment=b"\x00\x03x",
)
RESPONSE_NULLS = SyncGroupResponse(
    error_code=27, protocol_type=None, protocol_name=None, assignment=b""
)

CASES = [
    (REQUEST, VERSIONS),
    (REQUEST_NULLS, VERSIONS),
    (RESPONSE, VERSIONS),
    (RESPONSE_NULLS, VERSIONS),
]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


# The assignments kafka-python's golden SyncGroup frames carry (the same capture).
ASSIGNMENT_V0, ASSIGNMENT_V3 = GOLDEN_ASSIGNMENTS[0], GOLDEN_ASSIGNMENTS[3]

GOLDEN_REQUESTS = {
    0: SyncGroupRequest(
        group_id="group-a",
        generation_id=3,
        member_id="m-1",
        assignments=[
            SyncGroupRequestAssignment(
                member_id="m-1", assignment=encode_assignment(ASSIGNMENT_V0, 0)
            ),
            SyncGroupRequestAssignment(
                member_id="m-2", assignment=encode_assignment(ASSIGNMENT_V3, 3)
            ),
        ],
    ),
    4: SyncGroupRequest(
        group_id="group-a",
        generation_id=3,
        member_id="m-2",
        group_instance_id="instance-2",
        assignments=[],
    ),
    5: SyncGroupRequest(
        group_id="group-a",
        generation_id=4,
        member_id="m-1",
        group_instance_id=None,
        protocol_type="consumer",
        protocol_name="range",
        assignments=[
            SyncGroupRequestAssignment(
                member_id="m-1", assignment=encode_assignment(ASSIGNMENT_V3, 3)
            )
        ],
    ),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"sync_group_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, SyncGroupRequest.is_flexible(version))
    assert header == RequestHeader(14, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(SyncGroupRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


def test_kafka_python_assignments_are_consumer_assignments():
    frame = bytes.fromhex((GOLDEN / "sync_group_v0.hex").read_text())
    _, pos = parse_request_header(frame, False)
    request = decode(SyncGroupRequest, 0, frame, pos)
    assert [decode_assignment(a.assignment) for a in request.assignments] == [
        ASSIGNMENT_V0,
        ASSIGNMENT_V3,
    ]


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_sets_top_level_code_and_empty_assignment(version):
    response = error_response(REQUEST, ErrorCode.REBALANCE_IN_PROGRESS, version)
    assert response == SyncGroupResponse(error_code=ErrorCode.REBALANCE_IN_PROGRESS, assignment=b"")
    assert_roundtrip(response, version)
