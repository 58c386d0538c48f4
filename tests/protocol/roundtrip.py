"""The one round-trip helper for message codecs (construct's `common` idea).

`assert_roundtrip(msg, version)` checks that:
  * decode(encode(msg)) == msg, with the compiled codec;
  * the interpreted construct builds the same bytes and parses the same value;
  * the compiled code never falls back to interpreted parsing (no `linkedparsers[`).
Fields absent at `version` must hold their defaults in `msg`, or the comparison fails:
build test messages with `for_version(msg, version)` to reset them.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from protocol.primitives import Reader
from protocol.schema import Message, Struct, _compiled, build_struct, decode, encode


def for_version(obj: Any, version: int) -> Any:
    """A copy of `obj` with every field that `version` does not carry reset to its default."""
    if isinstance(obj, list):
        return [for_version(x, version) for x in obj]
    if not isinstance(obj, Struct):
        return obj
    changes = {}
    fields = {f.name: f for f in dataclasses.fields(obj)}  # type: ignore[arg-type]
    for name, w in type(obj)._wire_fields:
        f = fields[name]
        if w.present_in(version):
            changes[name] = for_version(getattr(obj, name), version)
        elif f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
            changes[name] = f.default_factory()  # type: ignore[misc]
        else:
            changes[name] = f.default
    return dataclasses.replace(obj, **changes)


def _normalise(obj: Any) -> Any:
    # RECORDS decode as memoryviews; compare them as bytes.
    if isinstance(obj, memoryview):
        return bytes(obj)
    if isinstance(obj, list):
        return [_normalise(x) for x in obj]
    if isinstance(obj, Struct):
        return dataclasses.replace(
            obj, **{n: _normalise(getattr(obj, n)) for n, _ in type(obj)._wire_fields}
        )
    return obj


def assert_roundtrip(msg: Message, version: int) -> bytes:
    msg = for_version(msg, version)
    data = encode(msg, version)
    assert _normalise(decode(type(msg), version, data)) == _normalise(msg)
    interpreted = build_struct(type(msg), version)
    chunks: list[Any] = []
    interpreted._build(msg, chunks, None, "(test)")
    assert b"".join(bytes(c) for c in chunks) == data
    assert _normalise(interpreted._parse(Reader(data), None, "(test)")) == _normalise(msg)
    source = _compiled(type(msg), version).source
    assert "linkedparsers[" not in source
    assert "linkedbuilders[" not in source
    return data


GOLDEN = __import__("pathlib").Path(__file__).parent / "golden"


def decode_golden(cls: type[Message], name: str, client: str = "kafka_python") -> tuple[int, Any]:
    """Decode a captured request frame (header included, no size prefix) from golden/<client>/.

    Checks the header (correlation id 42 and client id "kafka-python" for kafka-python's
    captures) and that re-encoding the decoded body gives the captured bytes.
    """
    from protocol.frames import RequestHeader, parse_request_header, peek_request_key

    frame = bytes.fromhex(GOLDEN.joinpath(client, name).read_text())
    _, version, _ = peek_request_key(frame)
    header, start = parse_request_header(frame, flexible=cls.is_flexible(version))
    if client == "kafka_python":
        assert header == RequestHeader(cls.API_KEY, version, 42, "kafka-python")
    msg = decode(cls, version, frame, start)
    assert encode(msg, version) == frame[start:]
    return version, msg
