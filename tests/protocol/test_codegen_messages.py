"""Every message and versioned struct, at every version, through the generated code and
through the interpreted construct (protocol.schema.KStruct), which is the reference.

Each (class, version) is filled from its own schema in four ways: every field set to a
value other than its default (tagged fields included, so that they are written; strings
with a non-ASCII character; RECORDS of two-byte length), everything empty (empty strings,
arrays and bytes, tagged fields at their defaults), everything nullable null, and long
values (strings and bytes past a one-byte length, arrays of fixed-width values and
strings of 130 elements, RECORDS past two bytes of length). Both builders must write the
same bytes, both parsers must read them back to the message, and on every prefix and on
single changed bytes of the first encoding both parsers must agree: the same message
ending at the same byte, or both refuse, and then `decode` raises the interpreted
construct's error.
"""

from __future__ import annotations

import importlib
import pkgutil
import uuid
from typing import Any

import pytest

import protocol.messages
from protocol.codegen import CompiledStruct
from protocol.primitives import DecodeError, KArray, KNullableStruct, Leaf, Reader
from protocol.schema import (
    _MALFORMED,
    Message,
    Struct,
    _compiled,
    _versioned_codec,
    decode,
    decode_versioned,
    encode,
    encode_versioned,
)

VARIANTS = ("full", "empty", "null", "long")

_INTS = {
    "int8": -5,
    "int16": -300,
    "uint16": 65000,
    "int32": -70000,
    "uint32": 4_000_000_000,
    "int64": -(1 << 40),
    "float64": 2.5,
    "bool": True,
}


def _leaf(leaf: Leaf, variant: str) -> Any:
    name = leaf.name
    if name in _INTS:
        return 0 if variant == "empty" else _INTS[name]
    if name == "uuid":
        return uuid.UUID(int=0) if variant == "empty" else uuid.UUID(int=0x1234 << 64 | 0x5678)
    if variant == "null" and ("nullable" in name or "records" in name):
        return None
    text = {"full": "ab-\u00fc", "empty": "", "null": "n", "long": "x" * 200}[variant]
    if name.endswith("string"):
        return text
    if "records" in name:
        return {"full": b"r" * 130, "empty": b"", "null": b"n", "long": b"r" * 16_500}[variant]
    return text.encode()


def _value(c: Any, variant: str) -> Any:
    if isinstance(c, CompiledStruct):
        return _struct(c, variant)
    if isinstance(c, KArray):
        if variant == "empty":
            return []
        if variant == "null" and c.nullable:
            return None
        n = 130 if variant == "long" and isinstance(c.element, Leaf) else 2
        return [_value(c.element, variant) for _ in range(n)]
    if isinstance(c, KNullableStruct):
        return None if variant == "null" else _struct(c.element, variant)
    return _leaf(c, variant)


def _struct(s: Any, variant: str) -> Any:
    values = {name: _value(c, variant) for name, c in s.fields}
    if variant != "empty":
        for _, name, c, default in s.tagged:
            value = _value(c, "full")
            values[name] = value if value != default else _value(c, "long")
    return s.cls(**values)


# Outcomes compare messages with ==: Struct compares field by field, a RECORDS memoryview
# equals the bytes it holds.


def _generated(codec: Any, data: bytes, pos: int) -> tuple[Any, ...]:
    try:
        msg, end = codec.decodefunc(data, pos)
    except _MALFORMED:
        return ("refused",)
    if end > len(data):  # past the end: refused by every caller
        return ("refused",)
    return ("ok", msg, end)


def _interpreted(codec: Any, data: bytes, pos: int) -> tuple[Any, ...]:
    r = Reader(data, pos)
    try:
        msg = codec.defersubcon._parse(r, None, "(test)")
    except _MALFORMED:
        return ("refused",)
    return ("ok", msg, r.pos)


def _changed(data: bytes, limit: int = 32, step: int = 5) -> list[bytes]:
    """Prefixes, and bytes changed to values that change what a length, count or marker
    byte means: at each of the first `limit` positions and the last eight, and at 40 more
    at most (every `step`th or further apart)."""
    n = len(data)
    step = max(step, (n - limit) // 40)
    positions = sorted({*range(min(limit, n)), *range(limit, n, step), *range(max(n - 8, 0), n)})
    out = [data[:i] for i in positions]
    for i in positions:
        for b in (0x00, 0x01, 0x7F, 0x80, 0xFF):
            if data[i] != b:
                out.append(data[:i] + bytes((b,)) + data[i + 1 :])
    return out


def _check(codec: Any, msg: Any, data: bytes, pos: int, mutate: bool) -> None:
    chunks: list[Any] = []
    codec.defersubcon._build(msg, chunks, None, "(test)")
    assert b"".join(bytes(c) for c in chunks) == data[pos:]
    want = ("ok", msg, len(data))
    assert _generated(codec, data, pos) == want
    assert _generated(codec, bytearray(data), pos) == want
    assert _interpreted(codec, data, pos) == want
    assert _generated(codec, data + b"tail", pos)[2] == len(data)
    if mutate:
        for changed in _changed(data[pos:]):
            changed = data[:pos] + changed
            assert _generated(codec, changed, pos) == _interpreted(codec, changed, pos), (
                changed.hex()
            )


def _messages() -> list[type[Message]]:
    found = set()
    for info in pkgutil.iter_modules(protocol.messages.__path__):
        module = importlib.import_module(f"protocol.messages.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Message) and value.VERSIONS:
                found.add(value)
    return sorted(found, key=lambda c: (c.API_KEY, c.__name__))


def _versioned() -> list[type[Struct]]:
    modules = ("consumer_offsets", "consumer_protocol", "transaction_log")
    found = []
    for name in modules:
        module = importlib.import_module(f"protocol.{name}")
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, Struct)
                and value.__module__ == module.__name__
                and isinstance(getattr(value, "VERSIONS", None), range)
            ):
                found.append(value)
    return found


MESSAGES = _messages()
VERSIONED = _versioned()


def test_the_messages_are_found():
    assert len(MESSAGES) > 90
    assert len(VERSIONED) > 20


def _shapes(cls: type[Message]) -> set[int]:
    """The first, the first flexible and the last version."""
    versions = cls.VERSIONS
    return {versions[0], versions[-1], cls.FLEXIBLE_FROM or versions[0]} & set(versions)


def _every_version(cls: type[Message], mutate: set[int]) -> None:
    for version in cls.VERSIONS:
        codec = _compiled(cls, version)
        assert "linkedparsers[" not in codec.source
        assert "linkedbuilders[" not in codec.source
        for variant in VARIANTS:
            msg = _struct(codec.defersubcon, variant)
            data = encode(msg, version)
            assert decode(cls, version, data) == msg
            assert decode(cls, version, memoryview(b"head" + data), 4) == msg
            _check(codec, msg, data, 0, mutate=variant == "full" and version in mutate)
            _check(codec, msg, b"head" + data, 4, mutate=False)


@pytest.mark.parametrize("cls", MESSAGES, ids=lambda c: c.__name__)
def test_every_message_at_every_version_as_the_interpreted_construct(cls):
    """Changed bytes at three versions: the first, the first flexible, the last."""
    _every_version(cls, _shapes(cls))


@pytest.mark.slow
@pytest.mark.parametrize("cls", MESSAGES, ids=lambda c: c.__name__)
def test_every_message_changed_at_every_version(cls):
    _every_version(cls, set(cls.VERSIONS))


@pytest.mark.parametrize("cls", VERSIONED, ids=lambda c: c.__name__)
def test_every_versioned_struct_at_every_version_as_the_interpreted_construct(cls):
    for version in cls.VERSIONS:
        codec = _versioned_codec(cls, version)
        for variant in VARIANTS:
            msg = _struct(codec.defersubcon, variant)
            data = encode_versioned(msg, version)
            assert decode_versioned(cls, data) == msg
            _check(codec, msg, data, 2, mutate=variant == "full")


@pytest.mark.parametrize("cls", MESSAGES[::7], ids=lambda c: c.__name__)
def test_decode_raises_the_interpreted_constructs_error(cls):
    version = cls.VERSIONS[-1]
    codec = _compiled(cls, version)
    data = encode(_struct(codec.defersubcon, "full"), version)
    for changed in _changed(data, limit=16, step=3):
        try:
            codec.defersubcon._parse(Reader(changed), None, "(test)")
            assert len(changed) == len(data)  # a prefix is refused
        except _MALFORMED as e:
            text = str(e) if isinstance(e, DecodeError) else f"{cls.__name__} v{version}: {e}"
            with pytest.raises(DecodeError) as raised:
                decode(cls, version, changed, allow_trailing=True)
            assert str(raised.value) == text
            with pytest.raises(DecodeError) as raised:  # a view: read again as bytes
                decode(cls, version, memoryview(changed), allow_trailing=True)
            assert str(raised.value) == text
