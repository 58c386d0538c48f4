"""The client side of `protocol.frames`: whole request frames, frame sizes, response frames."""

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.errors import ErrorCode
from protocol.frames import (
    FrameBuffer,
    FrameTooLarge,
    decode_response,
    encode_request,
    frame_response,
    frame_size,
    header_tags_end,
    parse_request_header,
    parse_response_frame,
    peek_request_key,
    request_client_id,
    request_header,
)
from protocol.messages.api_versions import ApiVersion, ApiVersionsResponse
from protocol.messages.heartbeat import HeartbeatRequest, HeartbeatResponse
from protocol.primitives import DecodeError
from protocol.schema import encode, encode_chunks

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"


@pytest.mark.parametrize("version", [0, 4])
def test_request_frame_is_kafka_pythons_byte_for_byte(version):
    # v0: header v1; v4 (flexible): header v2 with its empty tag buffer.
    golden = bytes.fromhex((GOLDEN / f"heartbeat_v{version}.hex").read_text())
    request = HeartbeatRequest(
        group_id="group-a",
        generation_id=3,
        member_id="m-1",
        group_instance_id="instance-1" if version >= 3 else None,
    )
    frame = encode_request(request, version, 42, "kafka-python")
    assert frame == struct.pack(">i", len(golden)) + golden
    assert frame_size(frame) == len(golden)


def test_request_frame_without_client_id_has_a_null_string():
    frame = encode_request(
        HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 0, 7, None
    )
    assert frame[4:14] == struct.pack(">hhih", 12, 0, 7, -1)


@pytest.mark.parametrize(
    ("after_key", "flexible", "expected"),
    [
        (b"\xff\xff" + b"body", False, (None, 10)),
        (b"\x00\x03abc" + b"body", False, ("abc", 13)),
        (b"\x00\x00" + b"body", False, ("", 10)),
        (b"\x00\x03abc\x00" + b"body", True, ("abc", 14)),
        # A tagged field in the header (none is defined): skipped.
        (b"\x00\x01a\x01\x05\x02xy" + b"body", True, ("a", 16)),
    ],
)
def test_request_client_id_and_where_the_body_starts(after_key, flexible, expected):
    frame = struct.pack(">hhi", 3, 9, 7) + after_key
    assert request_client_id(frame, flexible) == expected
    assert request_client_id(bytearray(frame), flexible) == expected
    assert request_client_id(memoryview(frame), flexible) == expected
    assert parse_request_header(frame, flexible)[1] == expected[1]


@pytest.mark.parametrize(
    ("after_key", "flexible", "message"),
    [
        (b"", False, "request header"),
        (b"\x00", False, "request header"),
        (b"\x00\x05abc", False, "need 5 bytes at 10, frame has 3"),
        (b"\x00\x02\xff\xfe", False, "request header"),  # not UTF-8
        (b"\x00\x01a", True, "past the end"),  # no tagged-field section
        (b"\x00\x01a\x01\x05\x09xy", True, "need 9 bytes"),
    ],
)
def test_a_truncated_or_invalid_client_id_is_a_decode_error(after_key, flexible, message):
    frame = struct.pack(">hhi", 3, 9, 7) + after_key
    with pytest.raises(DecodeError, match=message):
        request_client_id(frame, flexible)


def _header_the_long_way(frame: bytes, flexible: bool) -> tuple[object, ...]:
    """What `request_header` (then `header_tags_end` when flexible) shortcuts: the header
    read field by field, or the DecodeError it raises."""
    try:
        key, version, correlation_id = peek_request_key(frame)
    except DecodeError:
        return ("unreadable",)
    try:
        client_id, end = request_client_id(frame, flexible)
    except DecodeError as e:
        return key, version, correlation_id, "malformed", str(e)
    return key, version, correlation_id, client_id, end


def _header_the_short_way(frame: bytes, flexible: bool) -> tuple[object, ...]:
    try:
        key, version, correlation_id, client_id, end = request_header(frame)
    except DecodeError:
        return ("unreadable",)
    try:
        if end < 0:  # as the dispatch site: the long way says what is wrong
            client_id, end = request_client_id(frame, flexible)
        elif flexible:
            end = header_tags_end(frame, end)
    except DecodeError as e:
        return key, version, correlation_id, "malformed", str(e)
    return key, version, correlation_id, client_id, end


@pytest.mark.parametrize("flexible", [False, True])
@pytest.mark.parametrize(
    "frame",
    [
        b"",
        b"\x00\x03\x00\x09\x00\x00",  # no correlation id
        b"\x00\x03\x00\x09\x00\x00\x00\x07",  # nothing after it
        b"\x00\x03\x00\x09\x00\x00\x00\x07\x00",  # half a client id length
        b"\x00\x03\x00\x09\x00\x00\x00\x07\xff\xff",  # null, and no tagged fields
        b"\x00\x03\x00\x09\x00\x00\x00\x07\xff\xfb\x00body",  # negative: null too
        b"\x00\x03\x00\x09\x00\x00\x00\x07\x00\x03abc\x00body",
        b"\x00\x03\x00\x09\x00\x00\x00\x07\x00\x05abc",  # cut short
        b"\x00\x03\x00\x09\x00\x00\x00\x07\x00\x02\xff\xfe\x00",  # not UTF-8
        b"\x00\x03\x00\x09\x00\x00\x00\x07\x00\x01a\x01\x05\x02xy",  # a tagged field
    ],
)
def test_request_header_reads_what_the_field_by_field_functions_read(frame, flexible):
    expected = _header_the_long_way(frame, flexible)
    assert _header_the_short_way(frame, flexible) == expected
    assert _header_the_short_way(bytearray(frame), flexible) == expected
    assert _header_the_short_way(memoryview(frame), flexible) == expected


@settings(max_examples=40, deadline=None)
@given(
    st.binary(min_size=8, max_size=8),
    st.one_of(st.integers(-3, 40), st.just(-1)),
    st.one_of(st.text(max_size=20).map(str.encode), st.binary(max_size=20)),
    st.binary(max_size=8),
    st.booleans(),
)
def test_request_header_agrees_with_the_field_by_field_read_on_any_bytes(
    head, n, client_id, rest, flexible
):
    frame = head + struct.pack(">h", n) + client_id + rest
    assert _header_the_short_way(frame, flexible) == _header_the_long_way(frame, flexible)
    cut = frame[: len(frame) // 2]
    assert _header_the_short_way(cut, flexible) == _header_the_long_way(cut, flexible)


@pytest.mark.parametrize("prefix", [b"", b"\x00\x00\x01", b"\xff\xff\xff\xfe"])
def test_frame_size_rejects_short_and_negative_prefixes(prefix):
    with pytest.raises(DecodeError):
        frame_size(prefix)


def _response_frame(response, version, correlation_id, flexible_header):
    data = b"".join(
        frame_response(correlation_id, encode_chunks(response, version), flexible_header)
    )
    assert frame_size(data) == len(data) - 4
    return data[4:]


@pytest.mark.parametrize("version", HeartbeatResponse.VERSIONS)
def test_response_frame_header_follows_the_body_version(version):
    response = HeartbeatResponse(
        throttle_time_ms=5 if version >= 1 else 0, error_code=ErrorCode.REBALANCE_IN_PROGRESS
    )
    flexible = HeartbeatResponse.is_flexible(version)
    frame = _response_frame(response, version, 9, flexible)
    assert parse_response_frame(HeartbeatResponse, version, frame) == (9, 5 if flexible else 4)
    assert decode_response(HeartbeatResponse, version, frame) == (9, response)


def test_api_versions_response_header_is_v0_even_when_flexible():
    response = ApiVersionsResponse(
        error_code=0, api_keys=[ApiVersion(api_key=12, min_version=0, max_version=4)]
    )
    frame = _response_frame(response, 3, 1, False)
    assert decode_response(ApiVersionsResponse, 3, frame) == (1, response)


def test_response_with_bytes_left_over_is_refused():
    response = HeartbeatResponse(throttle_time_ms=0, error_code=0)
    frame = _response_frame(response, 0, 1, False) + b"\x00"
    with pytest.raises(DecodeError):
        decode_response(HeartbeatResponse, 0, frame)
    assert encode(response, 0) == frame[4:-1]


def test_a_large_frame_is_handed_over_with_what_arrived_and_filled_in_place():
    frames = FrameBuffer(1 << 20)
    body = bytes(range(256)) * 1000
    frames.feed(struct.pack(">i", len(body)) + body[:70_000])
    buffer, got = frames.start_large_frame(65_536)
    assert type(buffer) is bytearray
    assert len(buffer) == len(body)
    assert got == 70_000
    assert len(frames) == 0  # the buffer took over what had arrived
    assert buffer[:got] == body[:got]
    memoryview(buffer)[got:] = body[got:]  # what the connection's readv does
    assert buffer == body


def test_feed_next_gives_the_frames_feed_and_next_frame_give() -> None:
    def framed(body: bytes) -> bytes:
        return struct.pack(">i", len(body)) + body

    frames = FrameBuffer(16)
    assert frames.feed_next(framed(b"one")) == b"one"  # a lone whole frame
    assert len(frames) == 0
    assert frames.feed_next(framed(b"two")[:5]) is None  # part of one: buffered
    assert frames.feed_next(framed(b"two")[5:] + framed(b"three")) == b"two"
    assert frames.next_frame() == b"three"
    assert frames.feed_next(framed(b"")) == b""
    assert frames.next_frame() is None
    with pytest.raises(FrameTooLarge):
        frames.feed_next(framed(b"x" * 17))  # over the limit, whole or not
    with pytest.raises(FrameTooLarge):
        FrameBuffer(16).feed_next(struct.pack(">i", -1))
    frames = FrameBuffer(16)
    assert frames.feed_next(b"\x00\x00") is None  # part of a size prefix: buffered
    assert frames.feed_next(b"\x00\x01x") == b"x"
    assert frames.feed_next(framed(b"y" * 16)) == b"y" * 16  # at the limit


@settings(max_examples=40, deadline=None)
@given(st.lists(st.binary(max_size=40), max_size=6), st.lists(st.integers(1, 50), max_size=12))
def test_feed_next_cuts_any_chunking_into_the_frames_sent(bodies, cuts):
    """Read as Connection.step reads: feed_next for each chunk received, then next_frame
    while the buffer holds bytes; `not buffer` says exactly when nothing is buffered."""
    stream = b"".join(struct.pack(">i", len(b)) + b for b in bodies)
    chunks, pos = [], 0
    for n in cuts:
        chunks.append(stream[pos : pos + n])
        pos += n
    chunks = [c for c in [*chunks, stream[pos:]] if c]
    frames, got = FrameBuffer(64), []
    for chunk in chunks:
        frame = frames.feed_next(chunk)
        while frame is not None:
            got.append(frame)
            frame = frames.next_frame() if frames.buffer else None
        assert bool(frames.buffer) == (len(frames) > 0)
    assert got == bodies
    assert not frames.buffer
