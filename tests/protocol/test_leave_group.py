from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.leave_group import (
    LeaveGroupRequest,
    LeaveGroupResponse,
    MemberIdentity,
    MemberResponse,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip, for_version

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = LeaveGroupRequest.VERSIONS

REQUEST = LeaveGroupRequest(
    group_id="group-a",
    member_id="m-1",
    members=[
        MemberIdentity(member_id="m-1", group_instance_id="instance-1", reason="shutdown"),
        MemberIdentity(member_id="", group_instance_id=None, reason=None),
    ],
)
RESPONSE = LeaveGroupResponse(
    throttle_time_ms=4,
    error_code=0,
    members=[
        MemberResponse(member_id="m-1", group_instance_id="instance-1", error_code=0),
        MemberResponse(
            member_id="m-9", group_instance_id=None, error_code=ErrorCode.UNKNOWN_MEMBER_ID
        ),
    ],
)

CASES = [(REQUEST, VERSIONS), (RESPONSE, VERSIONS)]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v3_replaces_member_id_with_members():
    assert for_version(REQUEST, 2).members == []
    assert for_version(REQUEST, 3).member_id == ""


GOLDEN_REQUESTS = {
    0: LeaveGroupRequest(group_id="group-a", member_id="m-1"),
    4: LeaveGroupRequest(
        group_id="group-a",
        members=[
            MemberIdentity(member_id="m-1", group_instance_id=None),
            MemberIdentity(member_id="", group_instance_id="instance-2"),
        ],
    ),
    5: LeaveGroupRequest(
        group_id="group-a",
        members=[
            MemberIdentity(member_id="m-1", group_instance_id="instance-1", reason="shutdown")
        ],
    ),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"leave_group_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, LeaveGroupRequest.is_flexible(version))
    assert header == RequestHeader(13, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(LeaveGroupRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_sets_top_level_code_without_member_results(version):
    response = error_response(REQUEST, ErrorCode.UNKNOWN_MEMBER_ID, version)
    assert response == LeaveGroupResponse(error_code=ErrorCode.UNKNOWN_MEMBER_ID, members=[])
    assert_roundtrip(response, version)
