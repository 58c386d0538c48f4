"""Property tests over every decoder that reads bytes a peer (or a disk) controls.

For every routed API (broker.routes.all_routes()), request and response, at every version:
  * a value drawn from the declaration round-trips: decode(encode(m)) == m;
  * random bytes, and valid encodings with bits flipped, cut, extended or with a length
    overwritten, either decode or raise DecodeError: never another exception, which
    at the connection would be a crash instead of a clean close.
The same for the frame layer (FrameBuffer, request and response headers), record batches
(split_batches, validate_batch, decode_records), the __consumer_offsets records replayed at
start, and the consumer-protocol metadata that JoinGroup carries as opaque bytes.

Examples per property: 25 with the suite, KMOCK_FUZZ_EXAMPLES=5000 for a long run.
scripts/fuzz_atheris.py drives the same decoders with coverage guidance, for as long as it
is given.
"""

from __future__ import annotations

import contextlib
import itertools
import struct
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from broker.routes import Route, all_routes
from protocol.consumer_offsets import decode_record, encode_key, encode_value
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.errors import KafkaError
from protocol.frames import (
    FrameBuffer,
    FrameTooLarge,
    parse_request_header,
    parse_response_header,
    peek_request_key,
)
from protocol.records import build_batch, decode_records, split_batches, validate_batch
from protocol.schema import DecodeError, Message, decode, encode
from tests.fuzz.strategies import FUZZ_SETTINGS, messages, mutations
from tests.protocol.roundtrip import _normalise

ROUTES = all_routes()
DIRECTIONS = [(r, "request") for r in ROUTES] + [(r, "response") for r in ROUTES]


def _ids(item: tuple[Route, str]) -> str:
    route, direction = item
    return f"{route.name}-{direction}"


def _cls(route: Route, direction: str) -> type[Message]:
    return route.request if direction == "request" else route.response


@st.composite
def _versioned_message(draw: Any, cls: type[Message]) -> tuple[int, Any]:
    version = draw(st.sampled_from(list(cls.VERSIONS)))
    return version, draw(messages(cls, version))


@pytest.mark.parametrize("item", DIRECTIONS, ids=_ids)
@FUZZ_SETTINGS
@given(data=st.data())
def test_every_message_round_trips_and_damaged_bytes_raise_decode_error_only(
    item: tuple[Route, str], data: Any
) -> None:
    cls = _cls(*item)
    version, msg = data.draw(_versioned_message(cls))
    encoded = encode(msg, version)
    assert _normalise(decode(cls, version, encoded)) == _normalise(msg)
    damaged = data.draw(st.one_of(mutations(encoded), st.binary(max_size=64)))
    try:
        decoded = decode(cls, version, damaged)
    except DecodeError:
        return
    assert isinstance(decoded, cls)
    # Whatever decoded must encode again (the broker may echo parts of it back).
    encode(decoded, version)


# --- frames and headers ------------------------------------------------------------------


@FUZZ_SETTINGS
@given(frames=st.lists(st.binary(max_size=300), max_size=8), cuts=st.lists(st.integers(0, 4000)))
def test_frame_buffer_returns_the_frames_whatever_the_chunking(
    frames: list[bytes], cuts: list[int]
) -> None:
    stream = b"".join(struct.pack(">i", len(f)) + f for f in frames)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    buffer = FrameBuffer(300)
    out = []
    for a, b in itertools.pairwise(points):
        buffer.feed(stream[a:b])
        while (frame := buffer.next_frame()) is not None:
            out.append(frame)
        assert buffer.bytes_needed() >= 1
    assert out == frames
    assert len(buffer) == 0


@FUZZ_SETTINGS
@given(data=st.binary(max_size=64), limit=st.integers(0, 100))
def test_frame_buffer_never_returns_more_than_its_limit(data: bytes, limit: int) -> None:
    buffer = FrameBuffer(limit)
    buffer.feed(data)
    with contextlib.suppress(FrameTooLarge):  # refusing a frame is within the contract
        while (frame := buffer.next_frame()) is not None:
            assert len(frame) <= limit


@FUZZ_SETTINGS
@given(frame=st.binary(max_size=40), flexible=st.booleans())
def test_headers_of_any_bytes_parse_or_raise_decode_error(frame: bytes, flexible: bool) -> None:
    for parse in (
        lambda: peek_request_key(frame),
        lambda: parse_request_header(frame, flexible),
        lambda: parse_response_header(frame, flexible),
    ):
        with contextlib.suppress(DecodeError):
            parse()


# --- record batches ----------------------------------------------------------------------

_batches = st.builds(
    lambda items, codec: build_batch(items, compression=codec),
    st.lists(
        st.tuples(
            st.one_of(st.none(), st.binary(max_size=8)),
            st.one_of(st.none(), st.binary(max_size=16)),
            st.lists(
                st.tuples(st.text(max_size=4), st.one_of(st.none(), st.binary(max_size=4))),
                max_size=2,
            ),
            st.integers(0, 2**40),
        ),
        min_size=1,
        max_size=4,
    ),
    st.sampled_from([0, 1, 2, 3, 4]),
)


@FUZZ_SETTINGS
@given(data=st.data())
def test_record_batch_readers_raise_kafka_error_only(data: Any) -> None:
    batch = data.draw(_batches)
    damaged = data.draw(st.one_of(mutations(batch), st.binary(max_size=120)))
    for read in (
        lambda: split_batches(damaged),
        lambda: validate_batch(damaged, 0, check_crc=False),
        lambda: decode_records(damaged),
    ):
        with contextlib.suppress(KafkaError):
            read()


# --- what replay and the group coordinator decode ----------------------------------------


@FUZZ_SETTINGS
@given(data=st.data())
def test_consumer_offsets_records_decode_or_raise_decode_error(data: Any) -> None:
    from protocol.consumer_offsets import (
        GroupMetadataKey,
        GroupMetadataValue,
        OffsetCommitKey,
        OffsetCommitValue,
    )

    if data.draw(st.booleans()):
        key = encode_key(data.draw(messages(OffsetCommitKey, 1)))
        version = data.draw(st.sampled_from(list(OffsetCommitValue.VERSIONS)))
        value = encode_value(data.draw(messages(OffsetCommitValue, version, version >= 4)), version)
    else:
        key = encode_key(data.draw(messages(GroupMetadataKey, 2)))
        version = data.draw(st.sampled_from(list(GroupMetadataValue.VERSIONS)))
        value = encode_value(
            data.draw(messages(GroupMetadataValue, version, version >= 4)), version
        )
    assert decode_record(key, value)  # undamaged: decodes
    key = data.draw(st.one_of(st.just(key), mutations(key)))
    value = data.draw(st.one_of(st.just(value), st.none(), mutations(value)))
    with contextlib.suppress(DecodeError):
        decode_record(key, value)


@FUZZ_SETTINGS
@given(data=st.data())
def test_consumer_protocol_metadata_decodes_or_raises_decode_error(data: Any) -> None:
    from protocol.consumer_protocol import (
        ConsumerProtocolAssignment,
        ConsumerProtocolSubscription,
        encode_assignment,
        encode_subscription,
    )

    sub_version = data.draw(st.sampled_from(list(ConsumerProtocolSubscription.VERSIONS)))
    sub = encode_subscription(
        data.draw(messages(ConsumerProtocolSubscription, sub_version, False)), sub_version
    )
    a_version = data.draw(st.sampled_from(list(ConsumerProtocolAssignment.VERSIONS)))
    assignment = encode_assignment(
        data.draw(messages(ConsumerProtocolAssignment, a_version, False)), a_version
    )
    for decoder, raw in ((decode_subscription, sub), (decode_assignment, assignment)):
        damaged = data.draw(st.one_of(mutations(raw), st.binary(max_size=40)))
        with contextlib.suppress(DecodeError):
            decoder(damaged)
