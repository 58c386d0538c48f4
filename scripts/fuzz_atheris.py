"""Coverage-guided fuzzing of kmock's decoders with atheris (libFuzzer for Python).

    pip install atheris            # optional; not a project dependency
    python scripts/fuzz_atheris.py -max_total_time=600          # ten minutes
    python scripts/fuzz_atheris.py -atheris_runs=1000000 corpus/ # a corpus directory

Each input is read as a request frame (without its size prefix), exactly as the broker's
connection reads one: the header picks the API and version, then the body is decoded with
that request's schema; the same bytes are also read as a response of that API, as a record
batch, as a __consumer_offsets record and as consumer-protocol metadata. Decoders may
refuse input only with DecodeError (protocol) or KafkaError (records); anything else is a
crash, which libFuzzer reports with the input that caused it (crash-<sha1> in the working
directory: replay it by passing the file as the only argument).

The tests in tests/fuzz/ run the same properties with hypothesis in the suite; this script
is for long runs that learn from coverage.
"""

from __future__ import annotations

import contextlib
import struct
import sys
from pathlib import Path

import atheris

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

with atheris.instrument_imports():
    from broker.routes import all_routes, route_for
    from protocol.consumer_offsets import decode_record
    from protocol.consumer_protocol import decode_assignment, decode_subscription
    from protocol.errors import KafkaError
    from protocol.frames import FrameBuffer, FrameTooLarge, parse_request_header, peek_request_key
    from protocol.records import decode_records, split_batches
    from protocol.schema import DecodeError, decode, encode

ROUTES = all_routes()


def _request(data: bytes) -> None:
    try:
        api_key, version, _ = peek_request_key(data)
    except DecodeError:
        return
    route = route_for(api_key)
    if route is None or version not in route.request.VERSIONS:
        # Still exercise a decoder: map the key onto a routed API.
        route = ROUTES[api_key % len(ROUTES)]
        versions = list(route.request.VERSIONS)
        version = versions[version % len(versions)]
    message = None
    with contextlib.suppress(DecodeError):
        _, pos = parse_request_header(data, route.request.is_flexible(version))
        message = decode(route.request, version, data, pos)
    if message is not None:
        encode(message, version)  # what decoded must encode again
    with contextlib.suppress(DecodeError):
        decode(route.response, version, data, 8)


def _frames(data: bytes) -> None:
    buffer = FrameBuffer(1 << 16)
    half = len(data) // 2
    with contextlib.suppress(FrameTooLarge):
        for chunk in (data[:half], data[half:]):
            buffer.feed(chunk)
            frames = list(iter(buffer.next_frame, None))  # every whole frame, in order
            assert all(isinstance(f, bytes) for f in frames)


def _records(data: bytes) -> None:
    for read in (split_batches, decode_records):
        with contextlib.suppress(KafkaError):
            read(data)


def _group_metadata(data: bytes) -> None:
    if len(data) >= 4:
        (key_len,) = struct.unpack_from(">H", data, 0)
        key, value = data[2 : 2 + key_len], data[2 + key_len :]
        with contextlib.suppress(DecodeError):
            decode_record(key, value or None)
    for decoder in (decode_subscription, decode_assignment):
        with contextlib.suppress(DecodeError):
            decoder(data)


def test_one_input(data: bytes) -> None:
    _request(data)
    _frames(data)
    _records(data)
    _group_metadata(data)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
