from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.delete_groups import (
    DeletableGroupResult,
    DeleteGroupsRequest,
    DeleteGroupsResponse,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = DeleteGroupsRequest.VERSIONS

REQUEST = DeleteGroupsRequest(groups_names=["group-a", "group-b"])
RESPONSE = DeleteGroupsResponse(
    throttle_time_ms=11,
    results=[
        DeletableGroupResult(group_id="group-a", error_code=0),
        DeletableGroupResult(group_id="group-b", error_code=ErrorCode.NON_EMPTY_GROUP),
    ],
)

CASES = [(REQUEST, VERSIONS), (RESPONSE, VERSIONS)]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


GOLDEN_REQUESTS = {
    0: DeleteGroupsRequest(groups_names=["group-a"]),
    2: DeleteGroupsRequest(groups_names=["group-a", "group-b"]),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"delete_groups_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, DeleteGroupsRequest.is_flexible(version))
    assert header == RequestHeader(42, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(DeleteGroupsRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_has_one_result_per_group(version):
    response = error_response(REQUEST, ErrorCode.NOT_COORDINATOR, version)
    assert response == DeleteGroupsResponse(
        results=[
            DeletableGroupResult(group_id="group-a", error_code=ErrorCode.NOT_COORDINATOR),
            DeletableGroupResult(group_id="group-b", error_code=ErrorCode.NOT_COORDINATOR),
        ]
    )
    assert_roundtrip(response, version)
