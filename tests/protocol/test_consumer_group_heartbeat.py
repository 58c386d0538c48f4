"""ConsumerGroupHeartbeat: round trips at both versions, the nullable Assignment struct's
marker byte, and the error response. Expected bytes are assembled from the JSON layouts."""

import dataclasses
import struct
import uuid
from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import parse_request_header, peek_request_key
from protocol.messages.consumer_group_heartbeat import (
    Assignment,
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
    TopicPartitions,
    error_response,
)
from protocol.schema import DecodeError, decode, encode
from tests.protocol.roundtrip import assert_roundtrip

TOPIC_A = uuid.UUID("0f4d0c4e-83f2-4b9a-9d47-1a6c2f5e9b01")
TOPIC_B = uuid.UUID("7a1b2c3d-4e5f-4061-8273-94a5b6c7d8e9")

JOIN = ConsumerGroupHeartbeatRequest(
    group_id="group-a",
    member_id="m-1",
    member_epoch=0,
    instance_id="instance-1",
    rack_id="rack-1",
    rebalance_timeout_ms=300000,
    subscribed_topic_names=["orders", "payments"],
    subscribed_topic_regex="^orders-.*",
    server_assignor="uniform",
    topic_partitions=[],
)
HEARTBEAT = ConsumerGroupHeartbeatRequest(
    group_id="group-a",
    member_id="m-1",
    member_epoch=5,
    topic_partitions=[TopicPartitions(topic_id=TOPIC_A, partitions=[0, 2])],
)
RESPONSE = ConsumerGroupHeartbeatResponse(
    throttle_time_ms=0,
    error_code=0,
    member_id="m-1",
    member_epoch=5,
    heartbeat_interval_ms=5000,
    assignment=Assignment(
        topic_partitions=[
            TopicPartitions(topic_id=TOPIC_A, partitions=[0, 2]),
            TopicPartitions(topic_id=TOPIC_B, partitions=[]),
        ]
    ),
)
NO_ASSIGNMENT = ConsumerGroupHeartbeatResponse(
    error_code=ErrorCode.FENCED_MEMBER_EPOCH,
    error_message="member m-1 epoch 3 is fenced",
    member_epoch=-1,
)

CASES = [JOIN, HEARTBEAT, RESPONSE, NO_ASSIGNMENT]


@pytest.mark.parametrize("version", ConsumerGroupHeartbeatRequest.VERSIONS)
@pytest.mark.parametrize("msg", CASES)
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def compact_string(s: str | None) -> bytes:
    return b"\x00" if s is None else bytes([len(s) + 1]) + s.encode()


def test_heartbeat_request_v1_matches_the_json_layout():
    before_regex = (
        compact_string("group-a")
        + compact_string("m-1")
        + struct.pack(">i", 5)
        + compact_string(None)  # instance_id
        + compact_string(None)  # rack_id
        + struct.pack(">i", -1)  # rebalance_timeout_ms
        + b"\x00"  # subscribed_topic_names: null
    )
    after_regex = (
        compact_string(None)  # server_assignor
        + b"\x02"  # one topic
        + TOPIC_A.bytes
        + b"\x03"
        + struct.pack(">ii", 0, 2)
        + b"\x00"  # the topic's tags
        + b"\x00"  # the request's tags
    )
    assert encode(HEARTBEAT, 1) == before_regex + compact_string(None) + after_regex
    assert encode(HEARTBEAT, 0) == before_regex + after_regex  # v0 has no regex


def test_null_assignment_is_one_negative_marker_byte():
    data = encode(NO_ASSIGNMENT, 0)
    assert data[-2:] == b"\xff\x00"  # marker -1, then the response's empty tag section
    absent = encode(dataclasses.replace(RESPONSE, assignment=None), 0)
    present = encode(RESPONSE, 0)
    assert absent[:-2] == present[: len(absent) - 2]
    assert present[len(absent) - 2] == 1  # marker 1, then the struct


def test_any_negative_marker_reads_as_null():
    data = bytearray(encode(NO_ASSIGNMENT, 1))
    data[-2] = 0x80  # -128
    assert decode(ConsumerGroupHeartbeatResponse, 1, bytes(data)).assignment is None


def test_assignment_cut_short_is_a_decode_error():
    data = encode(RESPONSE, 1)
    with pytest.raises(DecodeError):
        decode(ConsumerGroupHeartbeatResponse, 1, data[:-5])


@pytest.mark.parametrize("version", ConsumerGroupHeartbeatRequest.VERSIONS)
def test_error_response_carries_the_code_at_the_top_level(version):
    response = error_response(HEARTBEAT, ErrorCode.COORDINATOR_NOT_AVAILABLE, version)
    assert response == ConsumerGroupHeartbeatResponse(
        throttle_time_ms=0,
        error_code=ErrorCode.COORDINATOR_NOT_AVAILABLE,
        error_message=None,
        member_id=None,
        member_epoch=0,
        heartbeat_interval_ms=0,
        assignment=None,
    )
    assert_roundtrip(response, version)


# --- golden frames: librdkafka with group.protocol=consumer ---------------------------------

GOLDEN = Path(__file__).parent / "golden" / "librdkafka_consumer_group"
GOLDEN_FILES = sorted(GOLDEN.glob("*.hex"))


def decode_golden(path: Path) -> tuple[int, ConsumerGroupHeartbeatRequest]:
    frame = bytes.fromhex(path.read_text())
    key, version, _ = peek_request_key(frame)
    header, start = parse_request_header(frame, ConsumerGroupHeartbeatRequest.is_flexible(version))
    assert (key, header.client_id) == (68, "kmock-golden")
    request = decode(ConsumerGroupHeartbeatRequest, version, frame, start)
    assert encode(request, version) == frame[start:]
    return version, request


def test_golden_frames_cover_join_heartbeat_and_leave_for_each_mode():
    assert [p.name for p in GOLDEN_FILES] == [
        f"{mode}_{step}.hex"
        for mode in ("dynamic", "regex", "static")
        for step in ("heartbeat", "join", "leave")
    ]


@pytest.mark.parametrize("path", GOLDEN_FILES, ids=lambda p: p.stem)
def test_librdkafka_frames_decode_and_reencode_to_the_same_bytes(path):
    version, request = decode_golden(path)
    mode, step = path.stem.split("_")
    assert version == 1
    assert request.group_id == "golden-group"
    assert request.instance_id == ("golden-instance" if mode == "static" else None)
    if step == "leave":
        assert request.member_epoch == (-2 if mode == "static" else -1)
        assert request.subscribed_topic_names is None
        assert request.topic_partitions is None
        return
    assert request.member_epoch == (0 if step == "join" else 1)
    assert request.rebalance_timeout_ms == 300000
    assert request.server_assignor == "range"
    assert request.topic_partitions == []
    if mode == "regex":
        # librdkafka sends its regex subscriptions as one alternation, each in parentheses.
        assert (request.subscribed_topic_names, request.subscribed_topic_regex) == (
            [],
            "(^golden-.*)",
        )
    else:
        # ... and an empty regex (not null) beside topic names.
        assert (request.subscribed_topic_names, request.subscribed_topic_regex) == (
            ["golden-orders"],
            "",
        )
