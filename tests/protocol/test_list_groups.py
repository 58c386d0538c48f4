from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.list_groups import (
    ListedGroup,
    ListGroupsRequest,
    ListGroupsResponse,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = ListGroupsRequest.VERSIONS

REQUEST = ListGroupsRequest(states_filter=["Stable", "Empty"], types_filter=["classic"])
RESPONSE = ListGroupsResponse(
    throttle_time_ms=6,
    error_code=0,
    groups=[
        ListedGroup(
            group_id="group-a", protocol_type="consumer", group_state="Stable", group_type="classic"
        ),
        ListedGroup(
            group_id="connect", protocol_type="", group_state="Empty", group_type="classic"
        ),
    ],
)

CASES = [(REQUEST, VERSIONS), (RESPONSE, VERSIONS)]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v0_request_is_empty_and_v3_only_has_tags():
    assert encode(REQUEST, 0) == b""
    assert encode(REQUEST, 3) == b"\x00"


GOLDEN_REQUESTS = {
    0: ListGroupsRequest(),
    3: ListGroupsRequest(),
    5: ListGroupsRequest(states_filter=["Stable", "Empty"], types_filter=["classic"]),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"list_groups_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, ListGroupsRequest.is_flexible(version))
    assert header == RequestHeader(16, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(ListGroupsRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_sets_top_level_code_and_no_groups(version):
    response = error_response(REQUEST, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, version)
    assert response == ListGroupsResponse(
        error_code=ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, groups=[]
    )
    assert_roundtrip(response, version)
