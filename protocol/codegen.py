"""The code construct's compile path generates for a message: one function per struct.

`KStruct` (protocol.schema) compiles to `decode_struct_N(buf, pos) -> (message, end)`, with
`parse_struct_N(io, this)` around it for construct, and to `build_struct_N(obj, io, this)`.
Their bodies hold the whole struct, its arrays and its nested structs inline: nested
elements are loops in the same function, not calls, and the common encodings are written
out in place of a call to their `read_*`/`write_*`:

    fixed-width fields, UUID        a run of them is one struct unpack / pack
    COMPACT_STRING, COMPACT_BYTES   a one-byte length (< 0x80) read in place
    STRING / NULLABLE_STRING        a non-negative int16 length read in place
    COMPACT_RECORDS / RECORDS       a two-byte length (127 B to 16 KiB) / an int32 length
    COMPACT_ARRAY / ARRAY           a one-byte count / an int32 count; fixed-width
                                    elements in one unpack / pack
    TAG_BUFFER                      the empty section (one zero byte)

The first byte of a compact field or of the tag section after a run of fixed-width fields
is read by the run's unpack (its `B`). Every fast path falls back to the general reader in
protocol.primitives, from the field's first byte, for every other case (a longer varint, a
null, a tagged field): that reader decides the value.

Bounds are checked once, at the end: a length that points past the end of the frame makes
a short slice and leaves the position past the end, which `decode` refuses (a read at a
position past the end raises, so nothing loops or allocates on a lie: every element of a
flexible array takes at least one byte, and an int32 count larger than the bytes left is
refused before its list is made). What the generated parser refuses, `decode` hands to the
interpreted construct, whose error is the one raised: the errors are the general path's
(tests/protocol/test_codegen.py compares the two on the edge cases of each fast path,
tests/protocol/test_codegen_messages.py on every message and versioned struct at every
version: filled, empty, null and long, every prefix and changed bytes).

The builder writes a run of pieces with one `append` of their concatenation (one `extend`
when RECORDS or BYTES, chunks of their own, are among them): fixed-width fields in one
pack, strings and counts from tables of their encodings (`_Memo`), arrays of fixed-width
values or strings in one call, the tag section as one zero byte unless a tagged field
differs from its default (compared in place; a nested struct by its class and its
`__dict__`). A value the builder cannot write (None where the field is not nullable, a
wrong type) raises whatever Python raises, and `encode` raises the interpreted
construct's error for it.

A decoded struct is made as its class's generated `__init__` would make it (every field of
the dataclass in its `__dict__`, absent ones at their defaults), in two C calls.
"""

from __future__ import annotations

import dataclasses
import struct
import uuid
from collections.abc import Callable
from typing import Any

from construct import Construct

from protocol.primitives import _I16, KArray, KNullableStruct, Leaf, uvarint_bytes

# Classes, codecs and defaults the generated code refers to, by a small integer id.
_REGISTRY: dict[int, Any] = {}


def _register(obj: Any) -> int:
    key = len(_REGISTRY)
    _REGISTRY[key] = obj
    return key


MEMO_KEYS = 1024  # values a _Memo keeps (all dropped when full)
MEMO_MAX_BYTES = 256  # the longest encoding a _Memo keeps


class _Memo(dict[Any, Any]):
    """`fn(key)`, computed on a key's first use and kept: a table the generated code
    indexes in one step (a topic name's encoding, a count's varint). Bounded: at most
    MEMO_KEYS keys (all dropped when full, `seed` put back), none whose value is longer
    than MEMO_MAX_BYTES. A key `fn` refuses (None for a non-nullable string) raises."""

    __slots__ = ("fn", "seed")

    def __init__(self, fn: Callable[[Any], Any], seed: dict[Any, Any] | None = None) -> None:
        super().__init__(seed or {})
        self.fn = fn
        self.seed = dict(self)

    def __missing__(self, key: Any) -> Any:
        value = self.fn(key)
        if not isinstance(value, bytes) or len(value) <= MEMO_MAX_BYTES:
            if len(self) >= MEMO_KEYS:
                self.clear()
                self.update(self.seed)
            self[key] = value
        return value


def _compact(s: str) -> bytes:
    data = s.encode()
    return uvarint_bytes(len(data) + 1) + data


def _int16(s: str) -> bytes:
    data = s.encode()
    return _I16.pack(len(data)) + data


_ZERO_UUID = uuid.UUID(int=0)
# The encodings the generated builders and parsers look up (imported by name, _HEADER).
_COMPACT = _Memo(_compact)  # COMPACT_STRING
_COMPACT_NULLABLE = _Memo(_compact, {None: b"\x00"})
_INT16 = _Memo(_int16)  # STRING
_INT16_NULLABLE = _Memo(_int16, {None: b"\xff\xff"})
_COUNT = _Memo(lambda n: uvarint_bytes(n + 1))  # the compact length or count of n
_UUIDS = _Memo(lambda b: uuid.UUID(bytes=b), {bytes(16): _ZERO_UUID})


# Per struct code, n -> the struct of n of them (an array of fixed-width values).
def _array_struct(code: str) -> Callable[[int], struct.Struct]:
    return lambda n: struct.Struct(f">{n}{code}")


_ARRAYS = {code: _Memo(_array_struct(code)) for code in "bhHiIqd?"}
_LEN1 = frozenset(range(1, 0x80))  # a one-byte length + 1 of a non-null value
_COUNT1 = frozenset(range(0x7F))  # a count read from one byte, less one

_HEADER = """
from protocol.codegen import _REGISTRY, _ZERO_UUID as ZERO_UUID, _LEN1 as LEN1
from protocol.codegen import _COUNT1 as COUNT1, _COUNT as COUNT, _UUIDS as UUIDS
from protocol.codegen import _COMPACT as CS, _COMPACT_NULLABLE as NCS
from protocol.codegen import _INT16 as S16, _INT16_NULLABLE as NS16
from protocol.primitives import DecodeError, Reader, check_count, read_tagged, write_tagged
from protocol.primitives import _I32 as I32, _U16 as U16
new_ = object.__new__
setattr_ = object.__setattr__
join_ = b"".join
"""

_FIXED: dict[str, struct.Struct] = {}


def _fixed(fmt: str) -> struct.Struct:
    s = _FIXED.get(fmt)
    if s is None:
        s = _FIXED[fmt] = struct.Struct(">" + fmt)
    return s


def _code(c: Any) -> str | None:
    """The struct code of a fixed-width field (a UUID is its 16 bytes), else None."""
    if isinstance(c, Leaf):
        if c.fixed_format is not None:
            return c.fixed_format
        if c.name == "uuid":
            return "16s"
    return None


class _Gen:
    """The lines of one generated function, with fresh local names, and (building) the
    pieces not yet appended."""

    def __init__(self, code: Any) -> None:
        self.code = code
        self.lines: list[str] = []
        self.count = 0
        self.view = False  # the parser slices RECORDS from a view of the frame
        self.pending: list[tuple[str, Any, Any]] = []
        code.append(_HEADER)

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def emit(self, ind: int, text: str) -> None:
        self.lines.append("    " * ind + text)

    def const(self, obj: Any, prefix: str) -> str:
        key = _register(obj)
        self.code.append(f"{prefix}_{key} = _REGISTRY[{key}]")
        return f"{prefix}_{key}"

    def imported(self, name: str) -> str:
        self.code.append(f"from protocol.primitives import {name}")
        return name

    def fallback(self, ind: int, target: str, reader: str, at: str) -> None:
        """The general reader, from the field's first byte (at `at`)."""
        self.emit(ind, f"io = Reader(buf, {at})")
        self.emit(ind, f"{target} = {self.imported(reader)}(io)")
        self.emit(ind, "pos = io.pos")

    # --- building: pieces joined into one append -------------------------------------

    def pack(self, fmt: str, args: list[str]) -> None:
        last = self.pending[-1] if self.pending else None
        if last is not None and last[0] == "pack":
            self.pending[-1] = ("pack", last[1] + fmt, last[2] + args)
        elif last is not None and last[0] == "bytes" and not any(last[1]):
            self.pending[-1] = ("pack", "x" * len(last[1]) + fmt, args)
        else:
            self.pending.append(("pack", fmt, args))

    def literal(self, data: bytes) -> None:
        last = self.pending[-1] if self.pending else None
        if last is not None and last[0] == "pack" and not any(data):
            self.pending[-1] = ("pack", last[1] + "x" * len(data), last[2])
        elif last is not None and last[0] == "bytes":
            self.pending[-1] = ("bytes", last[1] + data, None)
        else:
            self.pending.append(("bytes", data, None))

    def piece(self, expr: str) -> None:
        self.pending.append(("expr", expr, None))

    def chunk(self, expr: str) -> None:
        """A value appended as a chunk of its own (RECORDS: a view, never copied)."""
        self.pending.append(("chunk", expr, None))

    def flush(self, ind: int) -> None:
        """One append of the pending pieces' concatenation (or one extend of it and the
        chunks among them)."""
        groups: list[list[str]] = [[]]
        for kind, value, args in self.pending:
            if kind == "pack":
                groups[-1].append(f"{self.const(_fixed(value), 'S')}.pack({', '.join(args)})")
            elif kind == "bytes":
                groups[-1].append(repr(value))
            elif kind == "chunk":
                groups += [[value], []]
            else:
                groups[-1].append(value)
        parts = [" + ".join(group) for group in groups if group]
        if len(parts) == 1:
            self.emit(ind, f"app({parts[0]})")
        elif parts:
            self.emit(ind, f"ext(({', '.join(parts)}))")
        self.pending = []


def _items(s: CompiledStruct) -> list[tuple[list[tuple[str, Any]], str | None]]:
    """The fields in order, each run of consecutive fixed-width fields as one item with its
    struct format, any other field alone (format None)."""
    items: list[tuple[list[tuple[str, Any]], str | None]] = []
    for name, c in s.fields:
        code = _code(c)
        if code is not None and items and items[-1][1] is not None:
            items[-1][0].append((name, c))
            items[-1] = (items[-1][0], items[-1][1] + code)
        else:
            items.append(([(name, c)], code))
    return items


def _default_expr(g: _Gen, f: dataclasses.Field[Any]) -> str:
    """The default of a dataclass field, as the generated __init__ gives it."""
    if f.default_factory is not dataclasses.MISSING:
        if f.default_factory is list:
            return "[]"
        return f"{g.const(f.default_factory, 'F')}()"
    if f.default is None or type(f.default) in (int, bool, str):
        return repr(f.default)
    return g.const(f.default, "D")


# --- parsing ---------------------------------------------------------------------------------

_TAGS: Any = object()  # the tag section, as the item after a struct's last field


def _peeks(c: Any) -> bool:
    """Whether a run of fixed fields before `c` reads c's first byte (into `c`)."""
    if c is _TAGS or isinstance(c, KNullableStruct):
        return True
    if isinstance(c, KArray):
        return c.flexible
    return isinstance(c, Leaf) and c.name in (
        "compact_string",
        "compact_nullable_string",
        "compact_bytes",
        "compact_nullable_bytes",
        "compact_records",
    )


def _first(g: _Gen, ind: int, peeked: bool) -> tuple[str, str, str]:
    """Reads a field's first byte into `c` unless a run read it; gives the position after
    it, the end of a value of `c - 1` bytes after it, and the byte's own position."""
    if peeked:
        return "pos", "pos + c - 1", "pos - 1"
    g.emit(ind, "c = buf[pos]")
    return "pos + 1", "pos + c", "pos"


def _parse_value(g: _Gen, c: Construct, target: str, ind: int, peeked: bool = False) -> None:
    if isinstance(c, CompiledStruct):
        _parse_struct(g, c, target, ind)
    elif isinstance(c, KArray):
        _parse_array(g, c, target, ind, peeked)
    elif isinstance(c, KNullableStruct):
        if not peeked:
            g.emit(ind, "c = buf[pos]")
            g.emit(ind, "pos += 1")
        g.emit(ind, "if c >= 0x80:")  # INT8 < 0: null
        g.emit(ind + 1, f"{target} = None")
        g.emit(ind, "else:")
        _parse_value(g, c.element, target, ind + 1)
    elif isinstance(c, Leaf):
        _parse_leaf(g, c, target, ind, peeked)
    else:  # pragma: no cover - every construct of a message is one of the above
        g.emit(ind, "io = Reader(buf, pos)")
        g.emit(ind, f"{target} = {c._compileparse(g.code)}")
        g.emit(ind, "pos = io.pos")


def _parse_leaf(g: _Gen, leaf: Leaf, target: str, ind: int, peeked: bool) -> None:
    name = leaf.name
    code = _code(leaf)
    if code is not None:  # alone: an element of an array
        s = _fixed(code)
        value = f"{g.const(s, 'S')}.unpack_from(buf, pos)[0]"
        g.emit(ind, f"{target} = {f'UUIDS[{value}]' if code == '16s' else value}")
        g.emit(ind, f"pos += {s.size}")
    elif name.startswith("compact_") and name != "compact_records":  # strings, bytes
        start, end, at = _first(g, ind, peeked)
        g.emit(ind, "if c in LEN1:")
        value = f"buf[{start} : (pos := {end})]"
        value = f"{value}.decode()" if name.endswith("string") else f"bytes({value})"
        g.emit(ind + 1, f"{target} = {value}")
        if "nullable" in name:
            g.emit(ind, "elif not c:")
            g.emit(ind + 1, f"{target} = None")
            if not peeked:
                g.emit(ind + 1, "pos += 1")
        g.emit(ind, "else:")
        g.fallback(ind + 1, target, "read_" + name, at)
    elif name in ("string", "nullable_string"):
        g.emit(ind, "c, = U16.unpack_from(buf, pos)")
        g.emit(ind, "if c < 0x8000:")
        g.emit(ind + 1, f"{target} = buf[pos + 2 : (pos := pos + 2 + c)].decode()")
        if name == "nullable_string":
            g.emit(ind, "elif c == 0xFFFF:")
            g.emit(ind + 1, f"{target} = None")
            g.emit(ind + 1, "pos += 2")
        g.emit(ind, "else:")
        g.fallback(ind + 1, target, "read_" + name, "pos")
    elif name == "compact_records":  # a batch of 127 B to 16 KiB: a two-byte length
        g.view = True
        _, _, at = _first(g, ind, peeked)
        if peeked:
            g.emit(ind, "if c >= 0x80 and (d := buf[pos]) < 0x80:")
            g.emit(ind + 1, f"{target} = view[pos + 1 : (pos := pos + (c & 0x7F | d << 7))]")
        else:
            g.emit(ind, "if c >= 0x80 and (d := buf[pos + 1]) < 0x80:")
            end = "pos + 1 + (c & 0x7F | d << 7)"
            g.emit(ind + 1, f"{target} = view[pos + 2 : (pos := {end})]")
        g.emit(ind, "else:")
        g.fallback(ind + 1, target, "read_compact_records", at)
    elif name == "records":
        g.view = True
        g.emit(ind, "c, = I32.unpack_from(buf, pos)")
        g.emit(ind, "if c >= 0:")
        g.emit(ind + 1, f"{target} = view[pos + 4 : (pos := pos + 4 + c)]")
        g.emit(ind, "else:")
        g.emit(ind + 1, f"{target} = None")
        g.emit(ind + 1, "pos += 4")
    else:
        g.fallback(ind, target, "read_" + name, "pos")


def _parse_array(g: _Gen, a: KArray, target: str, ind: int, peeked: bool) -> None:
    n = g.fresh("n")
    element = a.element
    code = _code(element)
    bulk = code is not None and code != "16s"  # one unpack of all the elements
    if code is not None and bulk:
        unpack = f"{g.const(_ARRAYS[code], 'A')}[{n}].unpack_from(buf, pos)"
        start = [f"{target} = list({unpack})", f"pos += {n} * {struct.calcsize(code)}"]
    else:
        start = [f"{target} = []"]
    if a.flexible:
        g.emit(ind, f"{n} = c - 1" if peeked else f"{n} = buf[pos] - 1")
        g.emit(ind, f"if {n} in COUNT1:")
        if not peeked:
            g.emit(ind + 1, "pos += 1")
        for line in start:
            g.emit(ind + 1, line)
        if a.nullable:  # null: a zero byte
            g.emit(ind, f"elif {n} < 0:")
            if not peeked:
                g.emit(ind + 1, "pos += 1")
            g.emit(ind + 1, f"{target} = None")
            g.emit(ind + 1, f"{n} = 0")
        g.emit(ind, "else:")
        g.fallback(ind + 1, n, "read_compact_array_len", "pos - 1" if peeked else "pos")
        ind += 1
    else:
        g.emit(ind, f"{n}, = I32.unpack_from(buf, pos)")
        g.emit(ind, "pos += 4")
    g.emit(ind, f"if {n} < 0:")
    if a.nullable:
        g.emit(ind + 1, f"{target} = None")
        g.emit(ind + 1, f"{n} = 0")
    else:
        g.emit(ind + 1, "raise DecodeError('null in a non-nullable array')")
    g.emit(ind, "else:")
    g.emit(ind + 1, f"if {n} > len(buf) - pos:")
    g.emit(ind + 2, f"check_count(Reader(buf, pos), {n})  # raises")
    for line in start:
        g.emit(ind + 1, line)
    if a.flexible:
        ind -= 1
    if bulk:
        return
    item = g.fresh("e")
    g.emit(ind, f"for _ in range({n}):")
    _parse_value(g, element, item, ind + 1)
    g.emit(ind + 1, f"{target}.append({item})")


def _parse_struct(g: _Gen, s: CompiledStruct, target: str, ind: int) -> None:
    values: dict[str, str] = {}
    items = _items(s)
    peeked = False
    for i, (run, fmt) in enumerate(items):
        if fmt is None:
            name, c = run[0]
            v = values[name] = g.fresh("v")
            _parse_value(g, c, v, ind, peeked)
            peeked = False
            continue
        after = items[i + 1][0][0][1] if i + 1 < len(items) else _TAGS if s.flexible else None
        names = []
        for name, c in run:
            v = g.fresh("v")
            names.append(v)
            values[name] = f"UUIDS[{v}]" if _code(c) == "16s" else v
        peeked = after is not None and _peeks(after)
        if peeked:
            names.append("c")
            fmt += "B"
        codec = _fixed(fmt)
        g.emit(ind, f"{', '.join(names)}, = {g.const(codec, 'S')}.unpack_from(buf, pos)")
        g.emit(ind, f"pos += {codec.size}")
    fields = dataclasses.fields(s.cls)

    def make(ind: int) -> None:
        pairs = [f"{f.name!r}: {values.get(f.name) or _default_expr(g, f)}" for f in fields]
        g.emit(ind, f"{target} = new_({g.const(s.cls, 'C')})")
        g.emit(ind, f"setattr_({target}, '__dict__', {{{', '.join(pairs)}}})")

    if not s.flexible:
        make(ind)
        return
    g.emit(ind, "if c:" if peeked else "if buf[pos]:")  # tagged fields: the general reader
    g.emit(ind + 1, f"io = Reader(buf, {'pos - 1' if peeked else 'pos'})")
    raw = g.fresh("raw")
    g.emit(ind + 1, f"{raw} = read_tagged(io)")
    g.emit(ind + 1, "pos = io.pos")
    defaults = dict(values)
    for tag, name, c, _ in s.tagged:
        v = values[name] = g.fresh("t")
        helper = f"parse_tag_{g.code.allocateId()}"
        g.code.append(f"""
            def {helper}(io, this):
                value = {c._compileparse(g.code)}
                {g.imported("check_consumed")}(io)
                return value
        """)
        g.emit(ind + 1, f"if {tag} in {raw}:")
        g.emit(ind + 2, f"{v} = {helper}(Reader({raw}[{tag}]), None)")
        g.emit(ind + 1, "else:")
        g.emit(ind + 2, f"{v} = {_default_expr(g, next(f for f in fields if f.name == name))}")
    if s.tagged:  # the struct made in each branch: the usual one needs no tagged locals
        make(ind + 1)
        values = defaults
    if s.tagged or not peeked:
        g.emit(ind, "else:")
        if not peeked:
            g.emit(ind + 1, "pos += 1")
    make(ind + 1 if s.tagged else ind)


# --- building --------------------------------------------------------------------------------


def _build_value(g: _Gen, c: Construct, v: str, ind: int) -> None:
    if isinstance(c, CompiledStruct):
        x = g.fresh("x")
        g.emit(ind, f"{x} = {v}")
        _build_struct(g, c, x, ind)
    elif isinstance(c, KArray):
        _build_array(g, c, v, ind)
    elif isinstance(c, KNullableStruct):
        x = g.fresh("x")
        g.emit(ind, f"{x} = {v}")
        pending = list(g.pending)
        g.emit(ind, f"if {x} is None:")
        g.literal(b"\xff")
        g.flush(ind + 1)
        g.emit(ind, "else:")
        g.pending = pending
        g.literal(b"\x01")
        _build_struct(g, c.element, x, ind + 1)
        g.flush(ind + 1)
    elif isinstance(c, Leaf):
        _build_leaf(g, c, v, ind)
    else:  # pragma: no cover - every construct of a message is one of the above
        g.flush(ind)
        g.emit(ind, f"obj = {v}")
        g.emit(ind, c._compilebuild(g.code))


_TABLES = {
    "compact_string": "CS",
    "compact_nullable_string": "NCS",
    "string": "S16",
    "nullable_string": "NS16",
}


def _build_leaf(g: _Gen, leaf: Leaf, v: str, ind: int) -> None:
    name = leaf.name
    code = _code(leaf)
    if code == "16s":
        g.pack(code, [f"({v} or ZERO_UUID).int.to_bytes(16, 'big')"])
    elif code is not None:
        g.pack(code, [v])
    elif name in _TABLES:
        g.piece(f"{_TABLES[name]}[{v}]")
    elif "bytes" in name or "records" in name:  # a chunk of its own: a view is not copied
        x = g.fresh("x")
        g.emit(ind, f"{x} = {v}")
        n = f"-1 if {x} is None else len({x})" if _NULLABLE_BYTES[name] else f"len({x})"
        if name.startswith("compact"):
            g.piece(f"COUNT[{n}]")  # -1: null, the zero byte
        else:
            g.pack("i", [n])
        g.chunk(f"{x} or b''" if _NULLABLE_BYTES[name] else x)
    else:  # pragma: no cover - every leaf of a message is one of the above
        g.flush(ind)
        g.emit(ind, f"{g.imported('write_' + name)}(io, {v})")


# Whether a BYTES or RECORDS encoding may be null.
_NULLABLE_BYTES = {
    "bytes": False,
    "nullable_bytes": True,
    "compact_bytes": False,
    "compact_nullable_bytes": True,
    "records": True,
    "compact_records": True,
}


def _build_array(g: _Gen, a: KArray, v: str, ind: int) -> None:
    x = g.fresh("x")
    g.emit(ind, f"{x} = {v}")
    element = a.element
    code = _code(element)
    if code is not None and code != "16s":  # one pack of all the elements
        items = f"{g.const(_ARRAYS[code], 'A')}[len({{0}})].pack(*{{0}})"
    elif isinstance(element, Leaf) and element.name in _TABLES:  # their encodings joined
        items = f"join_(map({g.const(globals()[f'_{_TABLES[element.name]}_GET'], 'G')}, {{0}}))"
    else:
        items = ""  # a loop
    if a.nullable and items:
        n = f"-1 if {x} is None else len({x})"
        items = items.format(f"({x} or ())")
    elif a.nullable:  # null, or the count and a loop
        pending = list(g.pending)
        g.emit(ind, f"if {x} is None:")
        g.literal(b"\x00" if a.flexible else b"\xff\xff\xff\xff")
        g.flush(ind + 1)
        g.emit(ind, "else:")
        g.pending = pending
        ind += 1
        n = f"len({x})"
    else:
        n = f"len({x})"
        items = items.format(x)
    if a.flexible:
        g.piece(f"COUNT[{n}]")  # -1: null, the zero byte
    else:
        g.pack("i", [n])
    if items:
        g.piece(items)
        return
    g.flush(ind)
    e = g.fresh("e")
    g.emit(ind, f"for {e} in {x}:")
    if isinstance(element, CompiledStruct):
        _build_struct(g, element, e, ind + 1)
    else:
        _build_value(g, element, e, ind + 1)
    g.flush(ind + 1)
    if a.nullable:
        g.flush(ind)


_CS_GET = _COMPACT.__getitem__
_NCS_GET = _COMPACT_NULLABLE.__getitem__
_S16_GET = _INT16.__getitem__
_NS16_GET = _INT16_NULLABLE.__getitem__


def _differs(g: _Gen, v: str, default: Any) -> str:
    """An expression that is false only if `v != default` is false: a nested struct's
    fields compared in one dict comparison (true also when a field that is not on the wire
    differs: the tag section's own function then compares as Struct.__eq__ does)."""
    if default is None:
        return f"{v} is not None"
    if type(default) in (int, bool, str):
        return f"{v} != {default!r}"
    if isinstance(getattr(default, "__dict__", None), dict) and hasattr(default, "_wire_fields"):
        t = g.fresh("t")
        cls = g.const(type(default), "C")
        return (
            f"({t} := {v}).__class__ is not {cls} or {t}.__dict__ != {g.const(vars(default), 'D')}"
        )
    return f"{v} != {g.const(default, 'D')}"


def _build_struct(g: _Gen, s: CompiledStruct, o: str, ind: int) -> None:
    for name, c in s.fields:  # consecutive fixed-width fields join one pack (_Gen.pack)
        _build_value(g, c, f"{o}.{name}", ind)
    if not s.flexible:
        return
    if not s.tagged:
        g.literal(b"\x00")
        return
    # The tag section: one zero byte unless a tagged field differs from its default, when a
    # function of its own writes it as the interpreted construct does.
    helper = f"build_tags_{g.code.allocateId()}"
    body = ["tags = []"]
    for (tag, name, c, _), dkey in zip(s.tagged, s.default_keys, strict=True):
        build = f"build_tag_{g.code.allocateId()}"
        g.code.append(f"""
            def {build}(obj, io, this):
                return {c._compilebuild(g.code)}
        """)
        body += [
            f"if obj.{name} != _REGISTRY[{dkey}]:",
            "    chunks = []",
            f"    {build}(obj.{name}, chunks, None)",
            f"    tags.append(({tag}, chunks))",
        ]
    body += ["io = []", "write_tagged(io, tags)", "return join_(io)"]
    g.code.append("\n".join([f"def {helper}(obj):", *("    " + line for line in body)]))
    tests = [_differs(g, f"{o}.{name}", default) for _, name, _, default in s.tagged]
    g.piece(f"({helper}({o}) if {' or '.join(tests)} else b'\\x00')")


# --- the construct ---------------------------------------------------------------------------


class CompiledStruct(Construct):  # type: ignore[misc]
    """The compile path of protocol.schema's KStruct (`cls`, `fields`, `tagged`, `flexible`
    and `default_keys` are its)."""

    cls: Any
    fields: list[tuple[str, Construct]]
    tagged: list[tuple[int, str, Construct, Any]]
    flexible: bool
    default_keys: list[int]

    _parse_name = _build_name = ""

    def compile(self, filename: str | None = None) -> Any:
        """construct's compiled construct, whose functions are this struct's own: its
        `parseall`/`buildall` wrappers would add a Python call to every message.
        `decodefunc(buf, pos)` is the parser on bytes or a bytearray, without a Reader:
        (the message, where it ends), which may be past the end of `buf` (refused by the
        caller); `defersubcon` is the interpreted construct."""
        compiled = super().compile(filename)
        names = compiled.parsefunc.__globals__
        compiled.parsefunc = names[self._parse_name]
        compiled.decodefunc = names["decode" + self._parse_name[5:]]
        compiled.buildfunc = names[self._build_name]
        return compiled

    def _emitparse(self, code: Any) -> str:
        g = _Gen(code)
        n = code.allocateId()
        self._parse_name = f"parse_struct_{n}"
        _parse_struct(g, self, "msg", 1)
        g.emit(1, "return msg, pos")
        head = ["    view = memoryview(buf)"] if g.view else []
        code.append("\n".join([f"def decode_struct_{n}(buf, pos):", *head, *g.lines]))
        code.append(f"""
            def parse_struct_{n}(io, this):
                msg, pos = decode_struct_{n}(io.raw, io.pos)
                if pos > len(io.raw):
                    raise DecodeError(f"the frame ends {{pos - len(io.raw)}} bytes short")
                io.pos = pos
                return msg
        """)
        return f"parse_struct_{n}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        g = _Gen(code)
        n = code.allocateId()
        self._build_name = f"build_struct_{n}"
        _build_struct(g, self, "obj", 1)
        g.flush(1)
        body = "\n".join(g.lines)
        head = [f"    {name} = io.{method}" for name, method in _WRITERS if f"{name}(" in body]
        code.append(
            "\n".join([f"def build_struct_{n}(obj, io, this):", *head, body, "    return obj"])
        )
        return f"build_struct_{n}(obj, io, this)"


_WRITERS = (("app", "append"), ("ext", "extend"))
