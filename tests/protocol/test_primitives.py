"""The inline fast paths of protocol.primitives agree with the general readers and writers."""

from __future__ import annotations

import pytest

from protocol.primitives import (
    DecodeError,
    Reader,
    read_compact_nullable_string,
    read_compact_records,
    read_compact_string,
    read_tagged,
    uvarint_bytes,
    write_compact_nullable_string,
    write_compact_string,
)


@pytest.mark.parametrize("text", ["", "t", "bench-sync", "x" * 126, "x" * 127, "x" * 300])
def test_compact_string_reads_back_what_is_written(text):
    chunks: list[bytes] = []
    write_compact_string(chunks, text)
    nullable: list[bytes] = []
    write_compact_nullable_string(nullable, text)
    data = b"".join(chunks)
    assert data == b"".join(nullable)
    r = Reader(data + b"tail")
    assert read_compact_string(r) == text
    assert r.pos == len(data)
    assert read_compact_nullable_string(Reader(data)) == text


def test_compact_string_refuses_null_and_a_cut_off_string():
    with pytest.raises(DecodeError):
        read_compact_string(Reader(b"\x00"))
    with pytest.raises(DecodeError):
        read_compact_string(Reader(b"\x05abc"))
    with pytest.raises(DecodeError):
        read_compact_string(Reader(uvarint_bytes(201) + b"x" * 199))
    with pytest.raises(ValueError, match="None"):
        write_compact_string([], None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "size", [0, 1, 126, 127, 128, 170, 16382, 16383, 70000, 480000, 2**21 - 2, 2**21 - 1]
)
def test_compact_records_of_every_length_encoding(size):
    body = bytes(range(256)) * (size // 256 + 1)
    data = uvarint_bytes(size + 1) + body[:size]
    r = Reader(data + b"tail")
    assert bytes(read_compact_records(r)) == body[:size]
    assert r.pos == len(data)


def test_compact_records_null_and_cut_off():
    r = Reader(b"\x00rest")
    assert read_compact_records(r) is None
    assert r.pos == 1
    r = Reader(b"\x80\x00rest")  # a two-byte encoding of 0: null as well
    assert read_compact_records(r) is None
    assert r.pos == 2
    r = Reader(b"\x80\x80\x00rest")  # and a three-byte one
    assert read_compact_records(r) is None
    assert r.pos == 3
    for data in (uvarint_bytes(171) + b"x" * 100, b"\x05ab", b"\xab", uvarint_bytes(20001) + b"x"):
        with pytest.raises(DecodeError):
            read_compact_records(Reader(data))


def test_tagged_fields_empty_and_present():
    r = Reader(b"\x00rest")
    assert read_tagged(r) == {}
    assert r.pos == 1
    r = Reader(b"\x02\x00\x01a\x03\x02bc")
    assert {k: bytes(v) for k, v in read_tagged(r).items()} == {0: b"a", 3: b"bc"}
    assert r.pos == 8
    with pytest.raises(DecodeError):
        read_tagged(Reader(b"\x02\x03\x01a\x00\x01b"))  # out of order
