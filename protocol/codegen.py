"""The code construct's compile path generates for a message: one function per struct.

`KStruct` (protocol.schema) compiles to one `parse_struct_N(io, this)` and one
`build_struct_N(obj, io, this)` whose bodies hold the whole struct, its arrays and its
nested structs inline: nested elements are loops in the same function, not calls, and the
common encodings are written out in place of a call to their `read_*`/`write_*`:

    COMPACT_STRING / COMPACT_NULLABLE_STRING   a one-byte length (< 0x80) read in place
    STRING / NULLABLE_STRING                   a non-negative int16 length read in place
    COMPACT_RECORDS                            a two-byte length (a batch of 127 B to 16 KiB)
    COMPACT_ARRAY / ARRAY                      a one-byte count / an int32 count in place
    TAG_BUFFER                                 the empty section (one zero byte) in place
    fixed-width fields                         a run of them is one struct unpack/pack

Each fast path falls back to the general reader in protocol.primitives, from the field's
first byte, for every other case (a longer varint, a null, a length past the end of the
frame): that reader decides, so the values and errors are those of the general path
(tests/protocol/test_codegen.py compares the two on the edge cases). The parser keeps the
position in a local (`pos`) and stores it back into the `Reader` around each general call.
A decoded struct is made as its class's generated `__init__` would make it (every field of
the dataclass in its `__dict__`, absent ones at their defaults), in two C calls.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

from construct import Construct

from protocol.primitives import KArray, KNullableStruct, Leaf

# Classes, codecs and defaults the generated code refers to, by a small integer id.
_REGISTRY: dict[int, Any] = {}


def _register(obj: Any) -> int:
    key = len(_REGISTRY)
    _REGISTRY[key] = obj
    return key


_HEADER = """
from protocol.codegen import _REGISTRY
from protocol.primitives import DecodeError, Reader, check_count, read_tagged, write_tagged
from protocol.primitives import _SMALL_UVARINTS as SMALL, uvarint_bytes, _I16, _I32
new_ = object.__new__
setattr_ = object.__setattr__
"""

# How the generated parser reads a fixed-width field alone (runs use their own struct).
_FIXED: dict[str, struct.Struct] = {}


class _Gen:
    """The lines of one generated function, with fresh local names."""

    def __init__(self, code: Any) -> None:
        self.code = code
        self.lines: list[str] = []
        self.count = 0
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

    def fallback(self, ind: int, target: str, reader: str) -> None:
        """The general reader, from the field's first byte."""
        self.emit(ind, "io.pos = pos")
        self.emit(ind, f"{target} = {self.imported(reader)}(io)")
        self.emit(ind, "pos = io.pos")


def _default_expr(g: _Gen, f: dataclasses.Field[Any]) -> str:
    """The default of a dataclass field, as the generated __init__ gives it."""
    if f.default_factory is not dataclasses.MISSING:
        if f.default_factory is list:
            return "[]"
        return f"{g.const(f.default_factory, 'F')}()"
    if f.default is None or type(f.default) in (int, bool):
        return repr(f.default)
    return g.const(f.default, "D")


def _fixed(code: str) -> struct.Struct:
    s = _FIXED.get(code)
    if s is None:
        s = _FIXED[code] = struct.Struct(">" + code)
    return s


# --- parsing ---------------------------------------------------------------------------------


def _parse_value(g: _Gen, c: Construct, target: str, ind: int) -> None:
    if isinstance(c, CompiledStruct):
        _parse_struct(g, c, target, ind)
    elif isinstance(c, KArray):
        _parse_array(g, c, target, ind)
    elif isinstance(c, KNullableStruct):
        g.emit(ind, "if buf[pos] >= 0x80:")  # INT8 < 0: null
        g.emit(ind + 1, f"{target} = None")
        g.emit(ind + 1, "pos += 1")
        g.emit(ind, "else:")
        g.emit(ind + 1, "pos += 1")
        _parse_value(g, c.element, target, ind + 1)
    elif isinstance(c, Leaf):
        _parse_leaf(g, c, target, ind)
    else:  # pragma: no cover - every construct of a message is one of the above
        g.emit(ind, "io.pos = pos")
        g.emit(ind, f"{target} = {c._compileparse(g.code)}")
        g.emit(ind, "pos = io.pos")


def _parse_leaf(g: _Gen, leaf: Leaf, target: str, ind: int) -> None:
    name = leaf.name
    if leaf.fixed_format is not None:
        s = _fixed(leaf.fixed_format)
        g.emit(ind, f"{target}, = {g.const(s, 'S')}.unpack_from(buf, pos)")
        g.emit(ind, f"pos += {s.size}")
    elif name == "compact_string":  # length + 1 in one byte, 1..127
        g.emit(ind, "c = buf[pos]")
        g.emit(ind, "if 0 < c < 0x80 and pos + c <= blen:")
        g.emit(ind + 1, f"{target} = buf[pos + 1 : pos + c].decode()")
        g.emit(ind + 1, "pos += c")
        g.emit(ind, "else:")
        g.fallback(ind + 1, target, "read_compact_string")
    elif name == "compact_nullable_string":
        g.emit(ind, "c = buf[pos]")
        g.emit(ind, "if not c:")
        g.emit(ind + 1, f"{target} = None")
        g.emit(ind + 1, "pos += 1")
        g.emit(ind, "elif c < 0x80 and pos + c <= blen:")
        g.emit(ind + 1, f"{target} = buf[pos + 1 : pos + c].decode()")
        g.emit(ind + 1, "pos += c")
        g.emit(ind, "else:")
        g.fallback(ind + 1, target, "read_compact_nullable_string")
    elif name in ("string", "nullable_string"):  # a non-negative int16 length
        g.emit(ind, "c = pos + 2 + (buf[pos] << 8 | buf[pos + 1])")
        g.emit(ind, "if buf[pos] < 0x80 and c <= blen:")
        g.emit(ind + 1, f"{target} = buf[pos + 2 : c].decode()")
        g.emit(ind + 1, "pos = c")
        g.emit(ind, "else:")
        g.fallback(ind + 1, target, "read_" + name)
    elif name == "compact_records":  # a batch of 127 B to 16 KiB: a two-byte length
        g.emit(ind, "c = buf[pos]")
        g.emit(ind, "if c >= 0x80 and buf[pos + 1] < 0x80 and (")
        g.emit(ind + 1, "c := pos + 1 + (c & 0x7F | buf[pos + 1] << 7)")  # the end
        g.emit(ind, ") <= blen:")
        g.emit(ind + 1, f"{target} = io.buf[pos + 2 : c]")  # a view of the frame
        g.emit(ind + 1, "pos = c")
        g.emit(ind, "else:")
        g.fallback(ind + 1, target, "read_compact_records")
    else:
        g.fallback(ind, target, "read_" + name)


def _parse_array(g: _Gen, a: KArray, target: str, ind: int) -> None:
    n = g.fresh("n")
    if a.flexible:
        g.emit(ind, f"{n} = buf[pos] - 1")
        g.emit(ind, f"if {n} < 0x7F:")
        g.emit(ind + 1, "pos += 1")
        g.emit(ind, "else:")
        g.fallback(ind + 1, n, "read_compact_array_len")
    else:
        g.emit(ind, f"{n}, = _I32.unpack_from(buf, pos)")
        g.emit(ind, "pos += 4")
    g.emit(ind, f"if {n} < 0:")
    if a.nullable:
        g.emit(ind + 1, f"{target} = None")
        g.emit(ind, "else:")
        ind += 1
    else:
        g.emit(ind + 1, "raise DecodeError('null in a non-nullable array')")
    g.emit(ind, f"if {n} > blen - pos:")
    g.emit(ind + 1, "io.pos = pos")
    g.emit(ind + 1, f"check_count(io, {n})  # raises")
    g.emit(ind, f"{target} = []")
    item = g.fresh("e")
    g.emit(ind, f"for _ in range({n}):")
    _parse_value(g, a.element, item, ind + 1)
    g.emit(ind + 1, f"{target}.append({item})")


def _parse_struct(g: _Gen, s: CompiledStruct, target: str, ind: int) -> None:
    values: dict[str, str] = {}
    for first, count, codec in s._runs():
        if codec is None:
            name, c = s.fields[first]
            v = values[name] = g.fresh("v")
            _parse_value(g, c, v, ind)
            continue
        names = [g.fresh("v") for _ in range(count)]
        for (name, _), v in zip(s.fields[first : first + count], names, strict=True):
            values[name] = v
        g.emit(ind, f"{', '.join(names)}, = {g.const(codec, 'S')}.unpack_from(buf, pos)")
        g.emit(ind, f"pos += {codec.size}")
    fields = dataclasses.fields(s.cls)
    by_name = {f.name: f for f in fields}
    if s.flexible:
        for _, name, _, _ in s.tagged:
            v = values[name] = g.fresh("t")
            g.emit(ind, f"{v} = {_default_expr(g, by_name[name])}")
        g.emit(ind, "if buf[pos]:")
        g.emit(ind + 1, "io.pos = pos")
        raw = g.fresh("raw")
        g.emit(ind + 1, f"{raw} = read_tagged(io)")
        g.emit(ind + 1, "pos = io.pos")
        for tag, name, c, _ in s.tagged:
            helper = f"parse_tag_{g.code.allocateId()}"
            g.code.append(f"""
                def {helper}(io, this):
                    value = {c._compileparse(g.code)}
                    {g.imported("check_consumed")}(io)
                    return value
            """)
            g.emit(ind + 1, f"if {tag} in {raw}:")
            g.emit(ind + 2, f"{values[name]} = {helper}(Reader({raw}[{tag}]), this)")
        g.emit(ind, "else:")
        g.emit(ind + 1, "pos += 1")
    items = [f"{f.name!r}: {values.get(f.name) or _default_expr(g, f)}" for f in fields]
    g.emit(ind, f"{target} = new_({g.const(s.cls, 'C')})")
    g.emit(ind, f"setattr_({target}, '__dict__', {{{', '.join(items)}}})")


# --- building --------------------------------------------------------------------------------


def _build_value(g: _Gen, c: Construct, v: str, ind: int) -> None:
    if isinstance(c, CompiledStruct):
        _build_struct(g, c, v, ind)
    elif isinstance(c, KArray):
        g.emit(ind, f"if {v} is None:")
        if c.nullable:
            g.emit(ind + 1, "app(b'\\x00')" if c.flexible else "app(b'\\xff\\xff\\xff\\xff')")
            g.emit(ind, "else:")
            ind += 1
        else:
            g.emit(ind + 1, "raise ValueError('None in a non-nullable array')")
        if c.flexible:
            g.emit(ind, f"c = len({v}) + 1")
            g.emit(ind, "app(SMALL[c] if c < 128 else uvarint_bytes(c))")
        else:
            g.emit(ind, f"app(_I32.pack(len({v})))")
        item = g.fresh("e")
        g.emit(ind, f"for {item} in {v}:")
        _build_value(g, c.element, item, ind + 1)
    elif isinstance(c, KNullableStruct):
        g.emit(ind, f"if {v} is None:")
        g.emit(ind + 1, "app(b'\\xff')")
        g.emit(ind, "else:")
        g.emit(ind + 1, "app(b'\\x01')")
        _build_value(g, c.element, v, ind + 1)
    elif isinstance(c, Leaf):
        _build_leaf(g, c, v, ind)
    else:  # pragma: no cover - every construct of a message is one of the above
        g.emit(ind, f"obj = {v}")
        g.emit(ind, c._compilebuild(g.code))


def _build_leaf(g: _Gen, leaf: Leaf, v: str, ind: int) -> None:
    name = leaf.name
    if leaf.fixed_format is not None:
        g.emit(ind, f"app({g.const(_fixed(leaf.fixed_format), 'S')}.pack({v}))")
        return
    if name in ("compact_string", "string"):
        g.emit(ind, f"if {v} is None:")
        g.emit(ind + 1, f"raise ValueError('None in a non-nullable {name.replace('_', ' ')}')")
    elif name in ("compact_nullable_string", "nullable_string"):
        g.emit(ind, f"if {v} is None:")
        g.emit(ind + 1, "app(b'\\x00')" if name.startswith("compact") else "app(b'\\xff\\xff')")
    else:
        g.emit(ind, f"{g.imported('write_' + name)}(io, {v})")
        return
    g.emit(ind, "else:")
    g.emit(ind + 1, f"c = {v}.encode()")
    if name.startswith("compact"):
        g.emit(ind + 1, "k = len(c) + 1")
        g.emit(ind + 1, "app(SMALL[k] + c if k < 128 else uvarint_bytes(k) + c)")
    else:
        g.emit(ind + 1, "app(_I16.pack(len(c)) + c)")


def _build_struct(g: _Gen, s: CompiledStruct, o: str, ind: int) -> None:
    runs = s._runs()
    # An empty tag section after a last run of fixed-width fields: the run's pad byte.
    tag_byte = s.flexible and not s.tagged
    if tag_byte and runs:
        first, count, last = runs[-1]
        if last is not None:
            runs[-1] = (first, count, struct.Struct(last.format + "x"))
            tag_byte = False
    for first, count, codec in runs:
        if codec is None:
            name, c = s.fields[first]
            v = g.fresh("x")
            g.emit(ind, f"{v} = {o}.{name}")
            _build_value(g, c, v, ind)
            continue
        values = ", ".join(f"{o}.{name}" for name, _ in s.fields[first : first + count])
        g.emit(ind, f"app({g.const(codec, 'S')}.pack({values}))")
    if tag_byte:
        g.emit(ind, "app(b'\\x00')")
    if not s.flexible or not s.tagged:
        return
    tags = g.fresh("tags")
    g.emit(ind, f"{tags} = []")
    for (tag, name, c, _), dkey in zip(s.tagged, s.default_keys, strict=True):
        helper = f"build_tag_{g.code.allocateId()}"
        g.code.append(f"""
            def {helper}(obj, io, this):
                return {c._compilebuild(g.code)}
        """)
        g.code.append(f"D_{dkey} = _REGISTRY[{dkey}]")
        g.emit(ind, f"if {o}.{name} != D_{dkey}:")
        g.emit(ind + 1, "chunks = []")
        g.emit(ind + 1, f"{helper}({o}.{name}, chunks, this)")
        g.emit(ind + 1, f"{tags}.append(({tag}, chunks))")
    g.emit(ind, f"write_tagged(io, {tags})")


# --- the construct ---------------------------------------------------------------------------


class CompiledStruct(Construct):  # type: ignore[misc]
    """The compile path of protocol.schema's KStruct (`cls`, `fields`, `tagged`, `flexible`,
    `default_keys` and `_runs()` are its)."""

    cls: Any
    fields: list[tuple[str, Construct]]
    tagged: list[tuple[int, str, Construct, Any]]
    flexible: bool
    default_keys: list[int]
    _runs: Callable[[], list[tuple[int, int, struct.Struct | None]]]

    _parse_name = _build_name = ""

    def compile(self, filename: str | None = None) -> Any:
        """construct's compiled construct, whose functions are this struct's own: its
        `parseall`/`buildall` wrappers would add a Python call to every message."""
        compiled = super().compile(filename)
        names = compiled.parsefunc.__globals__
        compiled.parsefunc = names[self._parse_name]
        compiled.buildfunc = names[self._build_name]
        return compiled

    def _emitparse(self, code: Any) -> str:
        g = _Gen(code)
        n = code.allocateId()
        self._parse_name = f"parse_struct_{n}"
        g.emit(1, "buf = io.raw")
        g.emit(1, "pos = io.pos")
        g.emit(1, "blen = len(buf)")
        _parse_struct(g, self, "msg", 1)
        g.emit(1, "io.pos = pos")
        g.emit(1, "return msg")
        code.append("\n".join([f"def parse_struct_{n}(io, this):", *g.lines]))
        return f"parse_struct_{n}(io, this)"

    def _emitbuild(self, code: Any) -> str:
        g = _Gen(code)
        n = code.allocateId()
        self._build_name = f"build_struct_{n}"
        g.emit(1, "app = io.append")
        _build_struct(g, self, "obj", 1)
        g.emit(1, "return obj")
        code.append("\n".join([f"def build_struct_{n}(obj, io, this):", *g.lines]))
        return f"build_struct_{n}(obj, io, this)"
