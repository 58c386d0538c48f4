"""Kafka's primitive wire types, as construct `Construct`s that compile to straight-line code.

Wire grammar (Kafka protocol guide, "Protocol Primitive Types"):

    INT8/16/32/64, UINT16, FLOAT64   big-endian fixed width
    BOOLEAN                          int8, 0 or 1
    UUID                             16 bytes
    UNSIGNED_VARINT                  7 bits per byte, low group first, high bit = more
    STRING / NULLABLE_STRING         int16 length (-1 = null) + UTF-8
    BYTES / NULLABLE_BYTES / RECORDS int32 length (-1 = null) + bytes
    COMPACT_*                        unsigned varint length + 1 (0 = null) + payload
    ARRAY / COMPACT_ARRAY            int32 count (-1 = null) / uvarint count + 1
    TAG_BUFFER                       uvarint count, then (uvarint tag, uvarint size, bytes)*

Every primitive here is a `Construct` subclass with the interpreted `_parse`/`_build` *and*
`_emitparse`/`_emitbuild`, so that `.compile()` inlines it instead of falling back to the
interpreted parser (PERF-NOTES §1: the fallback costs 3-6x). Both paths call the same
module-level `read_*`/`write_*` functions, so there is one definition of each encoding.

The "stream" both paths read from is a `Reader` (a memoryview and a position), not a file
object: reads are bounds-checked slices, so a length field pointing past the end of the frame
raises `DecodeError` instead of silently returning a short value (the bug of compiled
`Prefixed` in construct 2.10), and RECORDS come back as zero-copy memoryview slices. The
build side writes into a plain list of byte chunks that the caller joins once.
"""

from __future__ import annotations

import struct
import uuid
from typing import Any

from construct import Construct

__all__ = [
    "DecodeError",
    "KArray",
    "KNullableStruct",
    "Leaf",
    "Reader",
    "read_uvarint",
    "uvarint_bytes",
    "write_uvarint",
]


class DecodeError(ValueError):
    """Bytes that are not a valid encoding of the expected message."""


class Reader:
    """A position in an immutable buffer. Slices are views: they live as long as the buffer.

    `raw` is the buffer as bytes or bytearray (a memoryview given is copied into bytes):
    generated parsers index and slice it, which is cheaper than through the view, and
    decode strings with its `decode()`; what is kept as a view (RECORDS) is sliced from
    `buf`. Frames come as bytes or bytearray; views are small (a __consumer_offsets
    value, a tagged field)."""

    __slots__ = ("buf", "pos", "raw")

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        if type(buf) is bytes or type(buf) is bytearray:
            self.raw = buf
            self.buf = memoryview(buf)
        else:
            self.buf = view = buf if isinstance(buf, memoryview) else memoryview(buf)
            self.raw = view.tobytes()
        self.pos = pos

    def remaining(self) -> int:
        return len(self.buf) - self.pos


_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_U16 = struct.Struct(">H")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I64 = struct.Struct(">q")
_F64 = struct.Struct(">d")

_ZERO_UUID = uuid.UUID(int=0)


def _take(r: Reader, n: int) -> memoryview:
    start = r.pos
    end = start + n
    if n < 0 or end > len(r.buf):
        raise DecodeError(f"need {n} bytes at {start}, frame has {len(r.buf) - start}")
    r.pos = end
    return r.buf[start:end]


# --- readers -------------------------------------------------------------------------------


def read_int8(r: Reader) -> int:
    v: int = _I8.unpack_from(r.buf, r.pos)[0]
    r.pos += 1
    return v


def read_int16(r: Reader) -> int:
    v: int = _I16.unpack_from(r.buf, r.pos)[0]
    r.pos += 2
    return v


def read_uint16(r: Reader) -> int:
    v: int = _U16.unpack_from(r.buf, r.pos)[0]
    r.pos += 2
    return v


def read_int32(r: Reader) -> int:
    v: int = _I32.unpack_from(r.buf, r.pos)[0]
    r.pos += 4
    return v


def read_uint32(r: Reader) -> int:
    v: int = _U32.unpack_from(r.buf, r.pos)[0]
    r.pos += 4
    return v


def read_int64(r: Reader) -> int:
    v: int = _I64.unpack_from(r.buf, r.pos)[0]
    r.pos += 8
    return v


def read_float64(r: Reader) -> float:
    v: float = _F64.unpack_from(r.buf, r.pos)[0]
    r.pos += 8
    return v


def read_bool(r: Reader) -> bool:
    return read_int8(r) != 0


def read_uuid(r: Reader) -> uuid.UUID:
    return uuid.UUID(bytes=bytes(_take(r, 16)))


def read_uvarint(r: Reader) -> int:
    buf = r.buf
    pos = r.pos
    if pos < len(buf) and buf[pos] < 0x80:  # one byte: nearly every length and count
        r.pos = pos + 1
        return buf[pos]
    if pos + 1 < len(buf) and buf[pos + 1] < 0x80:  # two: the length of a small batch
        r.pos = pos + 2
        return (buf[pos] & 0x7F) | (buf[pos + 1] << 7)
    result = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise DecodeError("varint runs past the end of the frame")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            r.pos = pos
            return result
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes")


def read_string(r: Reader) -> str:
    n = read_int16(r)
    if n < 0:
        raise DecodeError("null in a non-nullable string")
    return str(_take(r, n), "utf-8")


def read_nullable_string(r: Reader) -> str | None:
    n = read_int16(r)
    if n < 0:
        return None
    return str(_take(r, n), "utf-8")


def read_compact_string(r: Reader) -> str:
    # read_compact_nullable_string's one-byte case, inline (a topic name per request).
    buf = r.buf
    pos = r.pos
    if pos < len(buf) and 0 < buf[pos] < 0x80:
        end = pos + buf[pos]  # the length is n + 1, and the string starts one byte on
        if end <= len(buf):
            r.pos = end
            return str(buf[pos + 1 : end], "utf-8")
    s = read_compact_nullable_string(r)
    if s is None:
        raise DecodeError("null in a non-nullable compact string")
    return s


def read_compact_nullable_string(r: Reader) -> str | None:
    # The hot path of every flexible request (group ids, member ids, topic names): the
    # one-byte length and the bounds check inline, the rest as in read_uvarint and _take.
    buf = r.buf
    pos = r.pos
    if pos < len(buf) and buf[pos] < 0x80:
        n = buf[pos] - 1
        start = pos + 1
    else:
        n = read_uvarint(r) - 1
        start = r.pos
    if n < 0:
        r.pos = start
        return None
    end = start + n
    if end > len(buf):
        raise DecodeError(f"need {end - start} bytes at {start}, frame has {len(buf) - start}")
    r.pos = end
    return str(buf[start:end], "utf-8")


def read_bytes(r: Reader) -> bytes:
    n = read_int32(r)
    if n < 0:
        raise DecodeError("null in non-nullable bytes")
    return bytes(_take(r, n))


def read_nullable_bytes(r: Reader) -> bytes | None:
    n = read_int32(r)
    if n < 0:
        return None
    return bytes(_take(r, n))


def read_compact_bytes(r: Reader) -> bytes:
    n = read_uvarint(r) - 1
    if n < 0:
        raise DecodeError("null in non-nullable compact bytes")
    return bytes(_take(r, n))


def read_compact_nullable_bytes(r: Reader) -> bytes | None:
    n = read_uvarint(r) - 1
    if n < 0:
        return None
    return bytes(_take(r, n))


def read_records(r: Reader) -> memoryview | None:
    n = read_int32(r)
    if n < 0:
        return None
    return _take(r, n)


def read_compact_records(r: Reader) -> memoryview | None:
    # One per partition of a Produce: read_uvarint's two- and three-byte cases (the length
    # of a batch of 127 B to 16 KiB, and to 2 MiB: a producer's large batch, whose read in
    # read_uvarint's loop cost 145 bytecodes) and _take, inline.
    buf = r.buf
    pos = r.pos
    if pos + 1 < len(buf) and buf[pos + 1] < 0x80 <= buf[pos]:
        n = (buf[pos] & 0x7F) + (buf[pos + 1] << 7) - 1
        pos += 2
    elif pos + 2 < len(buf) and buf[pos + 2] < 0x80 <= buf[pos + 1] and buf[pos] >= 0x80:
        n = (buf[pos] & 0x7F) + ((buf[pos + 1] & 0x7F) << 7) + (buf[pos + 2] << 14) - 1
        pos += 3
    else:
        n = read_uvarint(r) - 1
        pos = r.pos
    if n < 0:
        r.pos = pos
        return None
    end = pos + n
    if end > len(buf):
        raise DecodeError(f"need {n} bytes at {pos}, frame has {len(buf) - pos}")
    r.pos = end
    return buf[pos:end]


def read_array_len(r: Reader) -> int:
    return read_int32(r)


def read_compact_array_len(r: Reader) -> int:
    buf = r.buf
    pos = r.pos
    if pos < len(buf) and buf[pos] < 0x80:  # read_uvarint's one-byte case, inline
        r.pos = pos + 1
        return buf[pos] - 1
    return read_uvarint(r) - 1


def check_count(r: Reader, n: int) -> None:
    # Every element takes at least one byte, so a count larger than what is left is a lie
    # (and would otherwise let four bytes of input allocate a list of two billion items).
    if n > len(r.buf) - r.pos:
        raise DecodeError(f"array of {n} elements in {len(r.buf) - r.pos} bytes")


def read_tagged(r: Reader) -> dict[int, memoryview]:
    buf = r.buf
    pos = r.pos
    if pos < len(buf) and buf[pos] == 0:  # no tagged fields: nearly always
        r.pos = pos + 1
        return {}
    n = read_uvarint(r)
    if n == 0:
        return {}
    check_count(r, n)
    fields: dict[int, memoryview] = {}
    last = -1
    for _ in range(n):
        tag = read_uvarint(r)
        if tag <= last:
            raise DecodeError("tagged fields out of order")
        last = tag
        fields[tag] = _take(r, read_uvarint(r))
    return fields


def check_consumed(r: Reader) -> None:
    if r.pos != len(r.buf):
        raise DecodeError(f"{len(r.buf) - r.pos} bytes left over")


# --- writers (into a list of chunks) --------------------------------------------------------


def uvarint_bytes(v: int) -> bytes:
    if v < 0x80:
        return bytes((v,))
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


_SMALL_UVARINTS = [bytes((i,)) for i in range(128)]


def write_uvarint(w: list[Any], v: int) -> None:
    w.append(_SMALL_UVARINTS[v] if 0 <= v < 128 else uvarint_bytes(v))


def write_int8(w: list[Any], v: int) -> None:
    w.append(_I8.pack(v))


def write_int16(w: list[Any], v: int) -> None:
    w.append(_I16.pack(v))


def write_uint16(w: list[Any], v: int) -> None:
    w.append(_U16.pack(v))


def write_int32(w: list[Any], v: int) -> None:
    w.append(_I32.pack(v))


def write_uint32(w: list[Any], v: int) -> None:
    w.append(_U32.pack(v))


def write_int64(w: list[Any], v: int) -> None:
    w.append(_I64.pack(v))


def write_float64(w: list[Any], v: float) -> None:
    w.append(_F64.pack(v))


def write_bool(w: list[Any], v: bool) -> None:
    w.append(b"\x01" if v else b"\x00")


def write_uuid(w: list[Any], v: uuid.UUID | None) -> None:
    w.append((v or _ZERO_UUID).bytes)


def write_string(w: list[Any], v: str) -> None:
    if v is None:
        raise ValueError("None in a non-nullable string")
    data = v.encode()
    w.append(_I16.pack(len(data)))
    w.append(data)


def write_nullable_string(w: list[Any], v: str | None) -> None:
    if v is None:
        w.append(b"\xff\xff")
        return
    data = v.encode()
    w.append(_I16.pack(len(data)))
    w.append(data)


def write_compact_string(w: list[Any], v: str) -> None:
    if v is None:
        raise ValueError("None in a non-nullable compact string")
    data = v.encode()  # write_compact_nullable_string's body, inline (names in answers)
    n = len(data) + 1
    w.append(_SMALL_UVARINTS[n] if n < 128 else uvarint_bytes(n))
    w.append(data)


def write_compact_nullable_string(w: list[Any], v: str | None) -> None:
    if v is None:
        w.append(b"\x00")
        return
    data = v.encode()
    n = len(data) + 1
    w.append(_SMALL_UVARINTS[n] if n < 128 else uvarint_bytes(n))
    w.append(data)


def write_bytes(w: list[Any], v: bytes) -> None:
    if v is None:
        raise ValueError("None in non-nullable bytes")
    w.append(_I32.pack(len(v)))
    w.append(v)


def write_nullable_bytes(w: list[Any], v: bytes | None) -> None:
    if v is None:
        w.append(b"\xff\xff\xff\xff")
        return
    w.append(_I32.pack(len(v)))
    w.append(v)


def write_compact_bytes(w: list[Any], v: bytes) -> None:
    if v is None:
        raise ValueError("None in non-nullable compact bytes")
    write_uvarint(w, len(v) + 1)
    w.append(v)


def write_compact_nullable_bytes(w: list[Any], v: bytes | None) -> None:
    if v is None:
        w.append(b"\x00")
        return
    write_uvarint(w, len(v) + 1)
    w.append(v)


write_records = write_nullable_bytes
write_compact_records = write_compact_nullable_bytes


def write_array_len(w: list[Any], v: int) -> None:
    w.append(_I32.pack(v))


def write_compact_array_len(w: list[Any], v: int) -> None:
    w.append(_SMALL_UVARINTS[v + 1] if -1 <= v < 127 else uvarint_bytes(v + 1))


def write_tagged(w: list[Any], fields: list[tuple[int, list[Any]]]) -> None:
    if not fields:
        w.append(b"\x00")
        return
    write_uvarint(w, len(fields))
    for tag, chunks in fields:
        data = b"".join(chunks)
        write_uvarint(w, tag)
        write_uvarint(w, len(data))
        w.append(data)


# --- constructs ------------------------------------------------------------------------------


def _emit_import(code: Any, *names: str) -> None:
    code.append("from protocol.primitives import " + ", ".join(sorted(set(names))))


# The struct formats of the fixed-width encodings. BOOLEAN as "?" reads any non-zero byte as
# true and writes 0/1, as read_bool/write_bool do.
_FIXED_FORMATS = {
    "int8": "b",
    "int16": "h",
    "uint16": "H",
    "int32": "i",
    "uint32": "I",
    "int64": "q",
    "float64": "d",
    "bool": "?",
}


class Leaf(Construct):  # type: ignore[misc]
    """One primitive encoding, named by its `read_<name>`/`write_<name>` pair above.

    `fixed_format` is its struct format when it is fixed-width (None otherwise): generated
    code reads and writes a run of those fields with one struct call.
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name
        self.fixed_format = _FIXED_FORMATS.get(name)
        self._reader = globals()["read_" + name]
        self._writer = globals()["write_" + name]

    def _parse(self, stream: Reader, context: Any, path: str) -> Any:
        return self._reader(stream)

    def _build(self, obj: Any, stream: list[Any], context: Any, path: str) -> Any:
        self._writer(stream, obj)
        return obj

    def _emitparse(self, code: Any) -> str:
        _emit_import(code, "read_" + self.name)
        return f"read_{self.name}(io)"

    def _emitbuild(self, code: Any) -> str:
        _emit_import(code, "write_" + self.name)
        return f"write_{self.name}(io, obj)"

    def __repr__(self) -> str:
        return f"Leaf({self.name})"


class KNullableStruct(Construct):  # type: ignore[misc]
    """A nullable nested struct: INT8 -1 for null, else 1 and the struct (Kafka's encoding of
    a struct field with nullableVersions, e.g. DescribeTopicPartitions' Cursor)."""

    def __init__(self, element: Construct) -> None:
        super().__init__()
        self.element = element

    def _parse(self, stream: Reader, context: Any, path: str) -> Any:
        if read_int8(stream) < 0:
            return None
        return self.element._parse(stream, context, path)

    def _build(self, obj: Any, stream: list[Any], context: Any, path: str) -> Any:
        if obj is None:
            write_int8(stream, -1)
            return obj
        write_int8(stream, 1)
        self.element._build(obj, stream, context, path)
        return obj

    def _emitparse(self, code: Any) -> str:
        _emit_import(code, "read_int8")
        fname = f"parse_nullable_struct_{code.allocateId()}"
        code.append(f"""
            def {fname}(io, this):
                if read_int8(io) < 0:
                    return None
                return {self.element._compileparse(code)}
        """)
        return f"{fname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        _emit_import(code, "write_int8")
        fname = f"build_nullable_struct_{code.allocateId()}"
        code.append(f"""
            def {fname}(obj, io, this):
                if obj is None:
                    write_int8(io, -1)
                    return obj
                write_int8(io, 1)
                {self.element._compilebuild(code)}
                return obj
        """)
        return f"{fname}(obj, io, this)"


class KArray(Construct):  # type: ignore[misc]
    """ARRAY / COMPACT_ARRAY of one element construct; None only where the field is nullable."""

    def __init__(self, element: Construct, *, flexible: bool, nullable: bool) -> None:
        super().__init__()
        self.element = element
        self.flexible = flexible
        self.nullable = nullable

    def _len_names(self) -> tuple[str, str]:
        if self.flexible:
            return "read_compact_array_len", "write_compact_array_len"
        return "read_array_len", "write_array_len"

    def _parse(self, stream: Reader, context: Any, path: str) -> Any:
        n = globals()[self._len_names()[0]](stream)
        if n < 0:
            if self.nullable:
                return None
            raise DecodeError("null in a non-nullable array")
        check_count(stream, n)
        return [self.element._parse(stream, context, path) for _ in range(n)]

    def _build(self, obj: Any, stream: list[Any], context: Any, path: str) -> Any:
        write_len = globals()[self._len_names()[1]]
        if obj is None:
            if not self.nullable:
                raise ValueError("None in a non-nullable array")
            write_len(stream, -1)
            return obj
        write_len(stream, len(obj))
        for item in obj:
            self.element._build(item, stream, context, path)
        return obj

    def _emitparse(self, code: Any) -> str:
        read_len, _ = self._len_names()
        _emit_import(code, read_len, "check_count", "DecodeError")
        fname = f"parse_array_{code.allocateId()}"
        null = (
            "return None" if self.nullable else "raise DecodeError('null in a non-nullable array')"
        )
        code.append(f"""
            def {fname}(io, this):
                n = {read_len}(io)
                if n < 0:
                    {null}
                if n > len(io.buf) - io.pos:
                    check_count(io, n)  # raises
                return [{self.element._compileparse(code)} for _ in range(n)]
        """)
        return f"{fname}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        _, write_len = self._len_names()
        _emit_import(code, write_len)
        fname = f"build_array_{code.allocateId()}"
        null = (
            f"{write_len}(io, -1)\n                    return items"
            if self.nullable
            else "raise ValueError('None in a non-nullable array')"
        )
        code.append(f"""
            def {fname}(obj, io, this):
                items = obj
                if items is None:
                    {null}
                {write_len}(io, len(items))
                for obj in items:
                    {self.element._compilebuild(code)}
                return items
        """)
        return f"{fname}(obj, io, this)"
