from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.describe_groups import (
    DescribedGroup,
    DescribedGroupMember,
    DescribeGroupsRequest,
    DescribeGroupsResponse,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = DescribeGroupsRequest.VERSIONS

REQUEST = DescribeGroupsRequest(groups=["group-a", "group-b"], include_authorized_operations=True)
RESPONSE = DescribeGroupsResponse(
    throttle_time_ms=1,
    groups=[
        DescribedGroup(
            error_code=0,
            group_id="group-a",
            group_state="Stable",
            protocol_type="consumer",
            protocol_data="range",
            members=[
                DescribedGroupMember(
                    member_id="m-1",
                    group_instance_id="instance-1",
                    client_id="kafka-python",
                    client_host="/127.0.0.1",
                    member_metadata=b"\x00\x00meta",
                    member_assignment=b"\x00\x00assignment",
                ),
                DescribedGroupMember(
                    member_id="m-2",
                    group_instance_id=None,
                    client_id="rdkafka",
                    client_host="/10.0.0.2",
                    member_metadata=b"",
                    member_assignment=b"",
                ),
            ],
            authorized_operations=0b1100,
        ),
        DescribedGroup(
            error_code=ErrorCode.GROUP_ID_NOT_FOUND, group_id="group-b", group_state="Dead"
        ),
    ],
)

CASES = [(REQUEST, VERSIONS), (RESPONSE, VERSIONS)]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


GOLDEN_REQUESTS = {
    0: DescribeGroupsRequest(groups=["group-a", "group-b"]),
    5: DescribeGroupsRequest(groups=["group-a"], include_authorized_operations=True),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"describe_groups_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, DescribeGroupsRequest.is_flexible(version))
    assert header == RequestHeader(15, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(DescribeGroupsRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_has_one_group_per_requested_group(version):
    response = error_response(REQUEST, ErrorCode.COORDINATOR_NOT_AVAILABLE, version)
    assert response == DescribeGroupsResponse(
        groups=[
            DescribedGroup(
                error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                group_id="group-a",
                group_state="",
                protocol_type="",
                protocol_data="",
                members=[],
                authorized_operations=-2147483648,
            ),
            DescribedGroup(
                error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
                group_id="group-b",
                group_state="",
                protocol_type="",
                protocol_data="",
                members=[],
                authorized_operations=-2147483648,
            ),
        ]
    )
    assert_roundtrip(response, version)
