"""The generated code (protocol.codegen) against the interpreted construct it compiles.

The generated parser reads compact and int16 strings, array counts and the empty tag
section in place, and falls back to the general readers for everything else; the
interpreted `KStruct._parse` calls the general readers for every field. Both are run on
the same bytes, valid and not: the edge cases of each fast path (length 0, the 127/128
boundary of a one-byte varint, null, truncated, bad UTF-8, a length past the end), every
prefix of a valid encoding, and every byte of one set to each value that changes its
meaning. They must give the same message and stop at the same byte, or both refuse the
bytes with one of the errors `decode` turns into a DecodeError. The builders must write
the same bytes and refuse the same values.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, ClassVar

import pytest

from protocol.primitives import DecodeError, Reader, uvarint_bytes
from protocol.schema import (
    _MALFORMED,
    Array,
    Bytes,
    Int16,
    Int32,
    Int64,
    Message,
    Records,
    String,
    Struct,
    Uuid,
    build_struct,
    decode,
    encode,
    wire,
)


class Item(Struct):
    name: str = wire(String)
    note: str | None = wire(String, nullable=True)
    value: int = wire(Int32)
    tag_note: str = wire(String, tag=1, default="")


class Probe(Message):
    VERSIONS: ClassVar[range] = range(0, 2)
    FLEXIBLE_FROM: ClassVar[int | None] = 1
    name: str = wire(String)
    note: str | None = wire(String, nullable=True)
    ids: list[int] = wire(Array(Int32))
    items: list[Item] | None = wire(Array(Item), nullable=True)
    names: list[str] = wire(Array(String))
    cursor: Item | None = wire(Item, nullable=True)
    blob: bytes = wire(Bytes)
    records: Any = wire(Records)
    topic_id: Any = wire(Uuid, since=1)
    small: int = wire(Int16)
    big: int = wire(Int64, since=1, default=5)
    extra: str = wire(String, tag=0, default="")


def _text(n: int) -> str:
    return "".join(chr(ord("a") + i % 26) for i in range(n))


def _probes() -> list[Probe]:
    out = [Probe()]
    for n in (0, 1, 126, 127, 128, 200):
        s = _text(n)
        out.append(
            Probe(
                name=s,
                note=s,
                ids=list(range(n)),
                items=[Item(name=s, note=None, value=n)] * (1 if n > 100 else n),
                names=[s, ""],
                cursor=Item(name="c", note=s, value=-1, tag_note=s[:3]),
                blob=s.encode(),
                records=s.encode(),
                small=-n,
                extra=s[:5],
            )
        )
    out.append(Probe(note=None, items=None, cursor=None, name="ünïcödé", records=None))
    # A null int16 string (0xffff) in front of more than 64 KiB: not a length to read.
    out.append(Probe(note=None, names=[], blob=b"x" * 70_000))
    # RECORDS around the ends of a two-byte length (126, 127 and 16382, 16383 bytes).
    out += [Probe(records=b"r" * n) for n in (125, 126, 127, 16381, 16382, 16383, 16384)]
    return out


def _outcome(parse: Any, data: bytes | bytearray | memoryview) -> tuple[Any, ...]:
    r = Reader(data)
    try:
        msg = parse(r)
    except _MALFORMED:
        return ("refused",)
    return ("ok", _normalise(msg), r.pos)


def _normalise(obj: Any) -> Any:
    if isinstance(obj, memoryview):
        return bytes(obj)
    if isinstance(obj, list):
        return [_normalise(x) for x in obj]
    if isinstance(obj, Struct):
        return (type(obj).__name__, {k: _normalise(v) for k, v in vars(obj).items()})
    return obj


@functools.cache
def _codecs(cls: type[Struct], version: int) -> tuple[Any, Any]:
    return build_struct(cls, version).compile(), build_struct(cls, version)


def _agree(cls: type[Struct], version: int, data: bytes) -> tuple[Any, ...]:
    """The generated parser's answer to `data`, checked against the interpreted one's."""
    compiled, interpreted = _codecs(cls, version)
    got = _outcome(lambda r: compiled.parsefunc(r, None), data)
    want = _outcome(lambda r: interpreted._parse(r, None, "(test)"), data)
    assert got == want, data.hex()
    # A frame received into a bytearray, and a view (which Reader copies into bytes).
    assert _outcome(lambda r: compiled.parsefunc(r, None), bytearray(data)) == want
    assert _outcome(lambda r: compiled.parsefunc(r, None), memoryview(data)) == want
    return got


def _mutations(data: bytes) -> list[bytes]:
    out = [data[:i] for i in range(len(data))]  # every prefix
    for i in range(len(data)):
        for b in (0x00, 0x01, 0x7F, 0x80, 0xFF, 0xC3):
            if data[i] != b:
                out.append(data[:i] + bytes((b,)) + data[i + 1 :])
    return out


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("index", range(len(_probes())))
def test_generated_code_writes_and_reads_what_the_interpreted_construct_does(index, version):
    msg = _probes()[index]
    if version == 0:
        msg = dataclasses.replace(msg, topic_id=Probe().topic_id, big=5, extra="")
        msg = dataclasses.replace(
            msg,
            items=msg.items and [dataclasses.replace(i, tag_note="") for i in msg.items],
            cursor=msg.cursor and dataclasses.replace(msg.cursor, tag_note=""),
        )
    data = encode(msg, version)
    chunks: list[Any] = []
    build_struct(Probe, version)._build(msg, chunks, None, "(test)")
    assert b"".join(bytes(c) for c in chunks) == data
    decoded = decode(Probe, version, data)
    assert _normalise(decoded) == _normalise(msg)
    if msg.records is not None:  # a view of the frame, not a copy
        assert isinstance(decoded.records, memoryview)
    assert _agree(Probe, version, data + b"tail")[2] == len(data)


@pytest.mark.parametrize("version", [0, 1])
def test_every_prefix_and_changed_byte_gets_the_same_answer(version):
    msg = Probe(
        name="ab",
        note="c",
        ids=[1],
        items=[Item(name="x", note="y", value=2)],
        names=["n"],
        cursor=Item(name="c"),
        blob=b"b",
        records=b"r" * 130,
        small=3,
    )
    if version == 1:
        msg = dataclasses.replace(msg, extra="e", cursor=Item(name="c", tag_note="t"))
    data = encode(msg, version)
    answers = {_agree(Probe, version, m)[0] for m in _mutations(data)}
    assert answers == {"ok", "refused"}


def _string_field(flexible: bool, nullable: bool, length: int | None) -> bytes:
    if length is None:
        return (b"\x00" if flexible else b"\xff\xff") if nullable else b""
    if flexible:
        return uvarint_bytes(length + 1)
    return length.to_bytes(2, "big")


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("length", [0, 1, 125, 126, 127, 128, 129, 300])
@pytest.mark.parametrize("short", [0, 1])
def test_string_lengths_around_the_one_byte_boundary(version, length, short):
    """`name` then `note` (nullable) of Probe: each length, whole or one byte short."""
    flexible = version == 1
    body = _text(length).encode()
    rest = encode(Probe(), version)[2 if flexible else 4 :]  # Probe() minus name and note
    for prefix in (
        _string_field(flexible, False, length) + body[: length - short],
        _string_field(flexible, False, length) + body + _string_field(flexible, True, None),
        b"\x00" if flexible else b"\x00\x00",  # empty name, then note
    ):
        for note in (b"", _string_field(flexible, True, length) + body[: length - short]):
            _agree(Probe, version, prefix + note + rest)


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize(
    "raw",
    [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"ok\x80", b"\xf0\x9f\x98"],
    ids=["ff", "bad-continuation", "surrogate", "stray", "cut-4-byte"],
)
def test_bad_utf8_is_refused_as_by_the_general_reader(version, raw):
    flexible = version == 1
    rest = encode(Probe(), version)[1 if flexible else 2 :]
    data = _string_field(flexible, False, len(raw)) + raw + rest
    assert _agree(Probe, version, data) == ("refused",)
    with pytest.raises(DecodeError):
        decode(Probe, version, data)


def test_a_long_varint_and_a_null_in_a_non_nullable_string_are_refused():
    rest = encode(Probe(), 1)[1:]
    for head in (b"\x00", b"\x80\x80\x80\x80\x80\x01", b"\x80", b"\x83\x00abc"):
        assert _agree(Probe, 1, head + rest)[0] == "refused"
    # A two-byte length the fast path leaves to the general reader: "\x81\x00" is 1 (+1).
    assert _agree(Probe, 1, b"\x81\x00" + rest)[0] == "ok"


@pytest.mark.parametrize("count", [0, 1, 126, 127, 128, 200])
def test_array_counts_around_the_one_byte_boundary(count):
    flexible_ids = uvarint_bytes(count + 1) + b"\x00\x00\x00\x07" * count
    head = encode(Probe(), 1)[:2]  # name and note
    rest = encode(Probe(), 1)[3:]  # after ids
    _, msg, _ = _agree(Probe, 1, head + flexible_ids + rest)
    assert msg[1]["ids"] == [7] * count
    assert _agree(Probe, 1, head + flexible_ids[:-1] + rest)[0] in ("ok", "refused")
    # A count larger than the bytes left: refused before any list is made.
    assert _agree(Probe, 1, head + uvarint_bytes(10_000) + b"\x00" * 50)[0] == "refused"


@pytest.mark.parametrize(
    ("field", "value"),
    [("name", None), ("ids", None), ("names", [None]), ("items", [Item(name=None)])],
)
@pytest.mark.parametrize("version", [0, 1])
def test_none_where_the_field_is_not_nullable_is_refused_when_building(field, value, version):
    msg = dataclasses.replace(Probe(), **{field: value})
    with pytest.raises(ValueError, match="None"):
        encode(msg, version)
    with pytest.raises(ValueError, match="None"):
        build_struct(Probe, version)._build(msg, [], None, "(test)")


def _real_messages() -> list[tuple[Message, int]]:
    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
    from protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    commit = OffsetCommitRequest(
        group_id="bench-group",
        generation_id_or_member_epoch=1,
        member_id="m-1",
        group_instance_id=None,
        topics=[
            OffsetCommitRequestTopic(
                name="bench-sync",
                partitions=[OffsetCommitRequestPartition(partition_index=0, committed_offset=9)],
            )
        ],
    )
    meta = MetadataRequest(topics=[MetadataRequestTopic(name="bench-meta")])
    return [(commit, 9), (commit, 2), (meta, 8), (meta, 12)]


@pytest.mark.parametrize("index", range(4))
def test_real_messages_every_prefix_and_changed_byte(index):
    msg, version = _real_messages()[index]
    data = encode(msg, version)
    assert decode(type(msg), version, data) == msg
    for m in _mutations(data):
        _agree(type(msg), version, m)
