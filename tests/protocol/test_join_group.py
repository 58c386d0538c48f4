from pathlib import Path

import pytest

from protocol.consumer_protocol import (
    decode_subscription,
    encode_subscription,
)
from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.join_group import (
    JoinGroupRequest,
    JoinGroupRequestProtocol,
    JoinGroupResponse,
    JoinGroupResponseMember,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip
from tests.protocol.test_consumer_protocol import GOLDEN_SUBSCRIPTIONS

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = JoinGroupRequest.VERSIONS

REQUEST = JoinGroupRequest(
    group_id="group-a",
    session_timeout_ms=45000,
    rebalance_timeout_ms=300000,
    member_id="m-1",
    group_instance_id="instance-1",
    protocol_type="consumer",
    protocols=[
        JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01meta"),
        JoinGroupRequestProtocol(name="roundrobin", metadata=b""),
    ],
    reason="rebalance needed",
)
REQUEST_NULLS = JoinGroupRequest(group_id="g", member_id="", group_instance_id=None, reason=None)
RESPONSE = JoinGroupResponse(
    throttle_time_ms=7,
    error_code=0,
    generation_id=12,
    protocol_type="consumer",
    protocol_name="range",
    leader="m-1",
    skip_assignment=True,
    member_id="m-2",
    members=[
        JoinGroupResponseMember(
            member_id="m-1", group_instance_id="instance-1", metadata=b"\x00\x03"
        ),
        JoinGroupResponseMember(member_id="m-2", group_instance_id=None, metadata=b""),
    ],
)
RESPONSE_NULLS = JoinGroupResponse(error_code=27, protocol_type=None, protocol_name=None)

CASES = [
    (REQUEST, VERSIONS),
    (REQUEST_NULLS, VERSIONS),
    (RESPONSE, VERSIONS),
    (RESPONSE_NULLS, range(7, 10)),
]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_null_protocol_name_is_refused_before_v7():
    with pytest.raises(ValueError, match="None in a non-nullable"):
        encode(RESPONSE_NULLS, 6)


def test_v0_request_decodes_rebalance_timeout_as_its_default():
    data = encode(REQUEST, 0)
    assert decode(JoinGroupRequest, 0, data).rebalance_timeout_ms == -1


# The subscriptions kafka-python's golden JoinGroup frames carry (the same capture).
SUBSCRIPTION_V0, SUBSCRIPTION_V1, SUBSCRIPTION_V3 = (GOLDEN_SUBSCRIPTIONS[v] for v in (0, 1, 3))

GOLDEN_REQUESTS = {
    0: JoinGroupRequest(
        group_id="group-a",
        session_timeout_ms=10000,
        member_id="",
        protocol_type="consumer",
        protocols=[
            JoinGroupRequestProtocol(name="range", metadata=encode_subscription(SUBSCRIPTION_V0, 0))
        ],
    ),
    6: JoinGroupRequest(
        group_id="group-a",
        session_timeout_ms=45000,
        rebalance_timeout_ms=300000,
        member_id="kafka-python-1-abc",
        group_instance_id="instance-1",
        protocol_type="consumer",
        protocols=[
            JoinGroupRequestProtocol(
                name="range", metadata=encode_subscription(SUBSCRIPTION_V1, 1)
            ),
            JoinGroupRequestProtocol(
                name="roundrobin", metadata=encode_subscription(SUBSCRIPTION_V1, 1)
            ),
        ],
    ),
    9: JoinGroupRequest(
        group_id="group-a",
        session_timeout_ms=45000,
        rebalance_timeout_ms=300000,
        member_id="m-1",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=[
            JoinGroupRequestProtocol(
                name="cooperative-sticky", metadata=encode_subscription(SUBSCRIPTION_V3, 3)
            )
        ],
        reason="rebalance needed",
    ),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"join_group_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, JoinGroupRequest.is_flexible(version))
    assert header == RequestHeader(11, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(JoinGroupRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


def test_kafka_python_metadata_is_a_consumer_subscription():
    frame = bytes.fromhex((GOLDEN / "join_group_v9.hex").read_text())
    _, pos = parse_request_header(frame, True)
    request = decode(JoinGroupRequest, 9, frame, pos)
    assert decode_subscription(request.protocols[0].metadata) == SUBSCRIPTION_V3


@pytest.mark.parametrize("version", range(VERSIONS.start, 7))
def test_error_response_below_v7_has_an_empty_protocol_name(version):
    response = error_response(REQUEST, ErrorCode.UNKNOWN_MEMBER_ID, version)
    decoded = decode(JoinGroupResponse, version, assert_roundtrip(response, version))
    assert decoded == JoinGroupResponse(
        error_code=ErrorCode.UNKNOWN_MEMBER_ID,
        generation_id=-1,
        protocol_name="",
        leader="",
        member_id="",
    )


@pytest.mark.parametrize("version", range(7, VERSIONS.stop))
def test_error_response_from_v7_has_a_null_protocol_name(version):
    response = error_response(REQUEST, ErrorCode.UNKNOWN_MEMBER_ID, version)
    data = assert_roundtrip(response, version)
    decoded = decode(JoinGroupResponse, version, data)
    assert decoded == JoinGroupResponse(
        error_code=ErrorCode.UNKNOWN_MEMBER_ID,
        generation_id=-1,
        protocol_type=None,
        protocol_name=None,
        leader="",
        member_id="",
    )
    # throttle, error, generation, then null protocol_type and protocol_name (compact: 0 each)
    assert data[:12] == bytes.fromhex("00000000 0019 ffffffff 00 00")
