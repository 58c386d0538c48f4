"""The declarative message layer: one dataclass per message covers every version.

A message is declared once, with its fields in wire order and each field's wire type and
version range given by `wire()`:

    class HeartbeatRequest(Message):
        API_KEY = 12
        VERSIONS = range(0, 5)          # what we decode and what ApiVersions advertises
        FLEXIBLE_FROM = 4
        group_id: str = wire(String)
        generation_id: int = wire(Int32)
        member_id: str = wire(String)
        group_instance_id: str | None = wire(String, since=3, nullable=3, default=None)

`build_struct(cls, version)` turns the declaration into a construct for one version: fields
outside their version range are left out (the dataclass default applies), STRING becomes
COMPACT_STRING and ARRAY becomes COMPACT_ARRAY from `FLEXIBLE_FROM` on, and flexible versions
get the tagged-field section. Wire types never say "compact" and never say "nullable":
both are decided per version here, as in Kafka's JSON (`flexibleVersions`,
`nullableVersions`). Unknown tagged fields are skipped, as Kafka does.

`decode`/`encode` use the compiled construct for (class, version), built lazily on first
use (about 2 ms each; most pairs are never used; protocol.codegen writes its code). Decoding
checks that the whole buffer was consumed, and every failure of malformed input surfaces
as `DecodeError`: bytes the generated parser refuses are read again by the interpreted
construct, whose error is the one raised (as is its error for a value the generated
builder cannot write).
"""

from __future__ import annotations

import dataclasses
import inspect
import struct
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, NamedTuple

from construct import Construct, ConstructError

from protocol import primitives as p
from protocol.codegen import CompiledStruct, _register
from protocol.kept import keep
from protocol.primitives import DecodeError, KArray, KNullableStruct, Leaf, Reader

__all__ = [
    "Array",
    "Bool",
    "Bytes",
    "DecodeError",
    "Float64",
    "Int8",
    "Int16",
    "Int32",
    "Int64",
    "Message",
    "Records",
    "String",
    "Struct",
    "UInt16",
    "UInt32",
    "Uuid",
    "build_struct",
    "decode",
    "decode_versioned",
    "encode",
    "encode_chunks",
    "encode_versioned",
    "wire",
]


# --- wire types ---------------------------------------------------------------------------


class WireType:
    """A Kafka field type, independent of version; makes the construct for one version."""

    def construct(self, version: int, flexible: bool, nullable: bool) -> Construct:
        raise NotImplementedError  # pragma: no cover - every subclass overrides

    def default(self, nullable: bool) -> Any:
        """Kafka's zero value; a class (`list`, a `Struct`) stands for a new one per instance."""
        raise NotImplementedError  # pragma: no cover


class _Fixed(WireType):
    def __init__(self, name: str, zero: Any) -> None:
        self.name = name
        self.zero = zero
        self._leaf = Leaf(name)

    def construct(self, version: int, flexible: bool, nullable: bool) -> Construct:
        return self._leaf

    def default(self, nullable: bool) -> Any:
        return self.zero

    def __repr__(self) -> str:
        return self.name


class _Variable(WireType):
    """STRING, BYTES, RECORDS: the length prefix depends on flexibility and nullability."""

    def __init__(self, name: str, zero: Any, *, always_nullable: bool = False) -> None:
        self.name = name
        self.zero = zero
        self.always_nullable = always_nullable
        self._leaves: dict[tuple[bool, bool], Leaf] = {}

    def construct(self, version: int, flexible: bool, nullable: bool) -> Construct:
        nullable = nullable or self.always_nullable
        key = (flexible, nullable)
        leaf = self._leaves.get(key)
        if leaf is None:
            if self.name == "records":
                name = "compact_records" if flexible else "records"
            else:
                name = ("compact_" if flexible else "") + ("nullable_" if nullable else "")
                name += self.name
            leaf = self._leaves[key] = Leaf(name)
        return leaf

    def default(self, nullable: bool) -> Any:
        return None if self.always_nullable else self.zero

    def __repr__(self) -> str:
        return self.name


Int8 = _Fixed("int8", 0)
Int16 = _Fixed("int16", 0)
UInt16 = _Fixed("uint16", 0)
Int32 = _Fixed("int32", 0)
UInt32 = _Fixed("uint32", 0)
Int64 = _Fixed("int64", 0)
Float64 = _Fixed("float64", 0.0)
Bool = _Fixed("bool", False)
Uuid = _Fixed("uuid", uuid.UUID(int=0))
String = _Variable("string", "")
Bytes = _Variable("bytes", b"")
# RECORDS: always nullable, decoded as a zero-copy memoryview of the frame.
Records = _Variable("records", None, always_nullable=True)


class Array(WireType):
    """ARRAY of a wire type or of a nested `Struct` subclass."""

    def __init__(self, element: WireType | type[Struct]) -> None:
        self.element = element

    def construct(self, version: int, flexible: bool, nullable: bool) -> Construct:
        if isinstance(self.element, WireType):
            element = self.element.construct(version, flexible, False)
        else:
            element = build_struct(self.element, version, flexible)
        return KArray(element, flexible=flexible, nullable=nullable)

    def default(self, nullable: bool) -> Any:
        return list

    def __repr__(self) -> str:
        name = getattr(self.element, "__name__", repr(self.element))
        return f"Array({name})"


class _StructType(WireType):
    """A field holding one nested struct (Kafka's `"type": "X"` with fields, not `[]X`).

    Its default is the struct with its own defaults, which is also what Kafka compares a
    tagged struct with before writing it; a nullable one defaults to None and is written
    behind a marker byte (`KNullableStruct`).
    """

    def __init__(self, cls: type[Struct]) -> None:
        self.cls = cls

    def construct(self, version: int, flexible: bool, nullable: bool) -> Construct:
        inner = build_struct(self.cls, version, flexible)
        return KNullableStruct(inner) if nullable else inner

    def default(self, nullable: bool) -> Any:
        if nullable:
            return None
        return self.cls  # a factory, as Array's `list`: a new struct per instance

    def __repr__(self) -> str:
        return self.cls.__name__


# --- fields -------------------------------------------------------------------------------


class WireField(NamedTuple):  # not a dataclass: one is ~1 ms of start-up
    type: WireType
    since: int
    until: int | None
    nullable: int | None
    tag: int | None

    def present_in(self, version: int) -> bool:
        return version >= self.since and (self.until is None or version <= self.until)


_MISSING: Any = dataclasses.MISSING


def wire(
    type: WireType | type[Struct],
    *,
    since: int = 0,
    until: int | None = None,
    nullable: int | bool | None = None,
    tag: int | None = None,
    default: Any = _MISSING,
) -> Any:
    """Declare a field: its wire type, the versions that carry it, and its default.

    Args:
      type: a wire type (Int32, String, Array(X), ...) or a `Struct` subclass for a field
        holding one nested struct.
      since/until: the first and last version with this field (Kafka's "versions": "3-7").
      nullable: the first version in which the field may be null (True: all versions).
      tag: the tag of a tagged field (Kafka's "taggedVersions"); only in flexible versions.
      default: the value for versions without the field; Kafka's zero value if omitted.
    """
    if not isinstance(type, WireType):
        type = _StructType(type)
    if nullable is True:
        nullable = 0
    elif nullable is False:
        nullable = None
    meta = {"wire": WireField(type, since, until, nullable, tag)}
    if default is _MISSING:
        default = type.default(nullable is not None)
    if default is list or (isinstance(type, _StructType) and default is type.cls):
        # Lists and nested structs are built per instance.
        return dataclasses.field(default_factory=default, metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


class Struct:
    """A frozen, keyword-only dataclass whose fields are declared with `wire()`.

    Class creation is the broker's start-up time: ~270 message classes are made before
    `kmock serve` binds. `dataclasses.dataclass` would cost a quarter of their import (it
    checks each string annotation against ClassVar and InitVar with regexes, orders init
    fields, updates abstract methods), so the fields are collected here (`_collect_fields`),
    into the same `__dataclass_fields__` it makes: `dataclasses.fields`, `replace`, `asdict`
    and `is_dataclass` work as usual. No method is generated per class: eq, repr and
    immutability come from this base class, and `__init__` is generated on a class's first
    instantiation (`_first_init`), so classes that are never built never pay for one.
    """

    _wire_fields: ClassVar[tuple[tuple[str, WireField], ...]] = ()

    if TYPE_CHECKING:  # the __init__ is made at first use, out of mypy's sight

        def __init__(self, **fields: Any) -> None: ...

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__doc__ is None:
            cls.__doc__ = cls.__name__
        cls.__init__ = _first_init  # type: ignore[method-assign]
        fields = _collect_fields(cls)
        cls._wire_fields = tuple(
            (name, f.metadata["wire"]) for name, f in fields.items() if "wire" in f.metadata
        )
        if cls.__doc__ == cls.__name__:
            cls.__doc__ = f"{cls.__name__}({', '.join(n for n, _ in cls._wire_fields)})"

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n, _ in self._wire_fields)

    __hash__ = None  # type: ignore[assignment]  # holds lists: unhashable, like Kafka's data

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n)!r}" for n, _ in self._wire_fields)
        return f"{self.__class__.__qualname__}({fields})"

    def __setattr__(self, name: str, value: Any) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise dataclasses.FrozenInstanceError(f"cannot delete field {name!r}")


# The default of a field with a default factory, in a generated __init__ (dataclasses' own
# sentinel is private).
_FACTORY: Any = object()


# What dataclasses marks a Struct class with: the parameters of
# `dataclass(init=False, repr=False, eq=False, kw_only=True)` (taken from a class it made, not
# built by hand), and its marker of an ordinary field (neither ClassVar nor InitVar).
_PARAMS: Any = dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=True)(
    type("_Probe", (), {"__annotations__": {"x": "int"}})
)
_FIELD_TYPE = dataclasses.fields(_PARAMS)[0]._field_type  # type: ignore[attr-defined]


def _collect_fields(cls: type[Struct]) -> dict[str, dataclasses.Field[Any]]:
    """What `dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=True)` does to
    `cls`, for classes whose fields all come from `wire()` (or plain defaults): the fields of
    its dataclass bases, then its own annotated ones in order (a ClassVar is not a field),
    each default left as the class attribute, `__dataclass_fields__` and
    `__dataclass_params__` set (tests/protocol/test_schema.py compares the two)."""
    fields: dict[str, dataclasses.Field[Any]] = {}
    for base in cls.__mro__[-1:0:-1]:
        fields.update(base.__dict__.get("__dataclass_fields__", {}))
    for name, annotation in inspect.get_annotations(cls).items():
        if isinstance(annotation, str):
            if annotation.startswith(("ClassVar", "typing.ClassVar")):
                continue
        elif annotation is ClassVar or getattr(annotation, "__origin__", None) is ClassVar:
            continue
        default = cls.__dict__.get(name, _MISSING)
        if isinstance(default, dataclasses.Field):
            f = default
        else:
            f = dataclasses.field(default=default)
        f.name = name
        f.type = annotation
        f.kw_only = True
        f._field_type = _FIELD_TYPE  # type: ignore[attr-defined]
        if f.default is _MISSING:
            if isinstance(default, dataclasses.Field):
                delattr(cls, name)
        else:
            setattr(cls, name, f.default)
        fields[name] = f
    cls.__dataclass_fields__ = fields  # type: ignore[attr-defined]
    cls.__dataclass_params__ = _PARAMS.__dataclass_params__  # type: ignore[attr-defined]
    return fields


def _first_init(self: Struct, *args: Any, **kwargs: Any) -> None:
    """Every Struct class's __init__ until its first call, which puts the real one in place."""
    cls = type(self)
    init = cls.__init__ = _make_init(cls)  # type: ignore[method-assign]
    init(self, *args, **kwargs)


def _make_init(cls: type[Struct]) -> Any:
    """The keyword-only `__init__` dataclasses would make for a frozen `cls`, except that it
    fills the instance's __dict__ directly (the attributes are plain; __setattr__ refuses)."""
    env: dict[str, Any] = {"_FACTORY": _FACTORY}
    params, body = [], []
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = f.name
        value = name
        if f.default is not dataclasses.MISSING:
            env[f"_dflt_{name}"] = f.default
            params.append(f"{name}=_dflt_{name}")
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{name}"] = f.default_factory
            params.append(f"{name}=_FACTORY")
            value = f"_factory_{name}() if {name} is _FACTORY else {name}"
        else:
            params.append(name)
        body.append(f"    _dict[{name!r}] = {value}")
    signature = ", ".join(["_self", "*", *params] if params else ["_self"])
    exec("\n".join([f"def __init__({signature}):", "    _dict = _self.__dict__", *body]), env)
    init = env["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


class Message(Struct):
    """A top-level request or response. The version travels in the header, not in here."""

    API_KEY: ClassVar[int] = -1
    VERSIONS: ClassVar[range] = range(0)
    FLEXIBLE_FROM: ClassVar[int | None] = None
    # A request clients send again and again byte for byte (Metadata, ApiVersions): `decode`
    # keeps the message it decoded and hands the same one out for the same bytes (_Kept).
    KEEP_DECODED: ClassVar[bool] = False

    @classmethod
    def is_flexible(cls, version: int) -> bool:
        return cls.FLEXIBLE_FROM is not None and version >= cls.FLEXIBLE_FROM


# --- the struct construct -------------------------------------------------------------------


class KStruct(CompiledStruct):
    """The fields of one `Struct` subclass at one version, parsed straight into the dataclass.

    This is the interpreted construct (`_parse`/`_build`); its compiled code is generated by
    protocol.codegen.CompiledStruct, which the tests hold to the same bytes and values."""

    def __init__(
        self,
        cls: type[Struct],
        fields: list[tuple[str, Construct]],
        tagged: list[tuple[int, str, Construct, Any]],
        flexible: bool,
    ) -> None:
        super().__init__()
        self.cls = cls
        self.fields = fields
        self.tagged = tagged
        self.flexible = flexible
        self.cls_key = _register(cls)
        self.default_keys = [_register(default) for _, _, _, default in tagged]

    def __repr__(self) -> str:
        return f"KStruct({self.cls.__name__})"

    def _parse(self, stream: Reader, context: Any, path: str) -> Any:
        values = {name: c._parse(stream, context, path) for name, c in self.fields}
        if self.flexible:
            raw = p.read_tagged(stream)
            for tag, name, c, _ in self.tagged:
                if tag in raw:
                    sub = Reader(raw[tag])
                    values[name] = c._parse(sub, context, path)
                    p.check_consumed(sub)
        return self.cls(**values)

    def _build(self, obj: Any, stream: list[Any], context: Any, path: str) -> Any:
        for name, c in self.fields:
            c._build(getattr(obj, name), stream, context, path)
        if self.flexible:
            tags = []
            for tag, name, c, default in self.tagged:
                value = getattr(obj, name)
                if value != default:
                    chunks: list[Any] = []
                    c._build(value, chunks, context, path)
                    tags.append((tag, chunks))
            p.write_tagged(stream, tags)
        return obj


def build_struct(cls: type[Struct], version: int, flexible: bool | None = None) -> KStruct:
    """The (interpreted) construct for `cls` at `version`; nested structs inherit `flexible`."""
    if flexible is None:
        flexible = issubclass(cls, Message) and cls.is_flexible(version)
    fields: list[tuple[str, Construct]] = []
    tagged: list[tuple[int, str, Construct, Any]] = []
    defaults = {f.name: f for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
    for name, w in cls._wire_fields:
        if not w.present_in(version):
            continue
        nullable = w.nullable is not None and version >= w.nullable
        c = w.type.construct(version, flexible, nullable)
        if w.tag is None:
            fields.append((name, c))
        elif flexible:
            f = defaults[name]
            if f.default_factory is not dataclasses.MISSING:
                default = f.default_factory()
            else:
                default = f.default
            tagged.append((w.tag, name, c, default))
    tagged.sort(key=lambda t: t[0])
    return KStruct(cls, fields, tagged, flexible)


# --- encode / decode ----------------------------------------------------------------------

_COMPILED: dict[tuple[type[Message], int], Any] = {}
# The compiled functions of _COMPILED's codecs, looked up by `decode` and `encode_chunks`.
_DECODERS: dict[tuple[type[Message], int], Callable[[Any, int], tuple[Any, int]]] = {}
_BUILDERS: dict[tuple[type[Message], int], Callable[[Any, list[Any], Any], Any]] = {}

# What a malformed buffer can raise from inside the generated code: our own DecodeError,
# struct.error from unpack_from past the end, UnicodeDecodeError (a ValueError) from a bad
# string, IndexError from a byte read past the end, and construct's own errors. Nothing
# else is caught: anything else is a bug.
_MALFORMED = (DecodeError, struct.error, ValueError, IndexError, ConstructError)
# What `decode` hands to `_refused`: those, and a string sliced from a memoryview (which
# has no decode()): the generated parser reads bytes and bytearrays.
_REFUSED = (*_MALFORMED, AttributeError)
# What the generated builder raises for a value it cannot write (None where the field is
# not nullable: `len(None)`, `None.encode()`; a number out of range: struct.error).
_UNWRITABLE = (AttributeError, TypeError, ValueError, OverflowError, struct.error)


def _compiled(cls: type[Message], version: int) -> Any:
    c = _COMPILED.get((cls, version))
    if c is None:
        if version not in cls.VERSIONS:
            raise ValueError(f"{cls.__name__} has no version {version}")
        c = build_struct(cls, version).compile()
        if cls.KEEP_DECODED:
            c = _Kept(c)
        _COMPILED[(cls, version)] = c
        _DECODERS[(cls, version)] = c.decode if cls.KEEP_DECODED else c.decodefunc
        _BUILDERS[(cls, version)] = c.buildfunc
    return c


def _refused(cls: type[Message], version: int, buf: Any, pos: int) -> tuple[Any, int]:
    """`decode`'s answer to bytes the generated parser refused (it raised, or ended past
    the end of the frame): a view is read again as bytes; otherwise the interpreted
    construct's error, as a DecodeError (or, should it read them after all, its message
    and the count of bytes left over)."""
    codec = _compiled(cls, version)
    if buf.__class__ is not bytes and buf.__class__ is not bytearray:
        buf = bytes(buf)
        try:
            msg, end = codec.decodefunc(buf, pos)
        except _MALFORMED:
            end = len(buf) + 1  # refused: the interpreted construct's error, below
        if end <= len(buf):
            return msg, len(buf) - end
    return _general_decode(codec, f"{cls.__name__} v{version}", buf, pos)


def _general_decode(codec: Any, name: str, buf: Any, pos: int) -> tuple[Any, int]:
    """What the interpreted construct makes of `buf[pos:]`: its error, as a DecodeError,
    or its message and the count of bytes left over."""
    r = Reader(buf, pos)
    try:
        msg = codec.defersubcon._parse(r, None, "(decode)")
    except _MALFORMED as e:
        if isinstance(e, DecodeError):
            raise
        raise DecodeError(f"{name}: {e}") from e
    return msg, len(r.buf) - r.pos


def _general_encode(codec: Any, obj: Any, error: Exception) -> None:
    """Raises the interpreted construct's error for a value the generated builder could not
    write (`error`, raised again should the interpreted construct write it)."""
    codec.defersubcon._build(obj, [], None, "(encode)")
    raise error


KEPT_DECODED = 64  # messages kept per (class, version) by _Kept (all dropped when full)
KEPT_MAX_BYTES = 1024  # the longest body kept: a Metadata naming a few dozen topics


class _Kept:
    """The codec of a Message that is `KEEP_DECODED`: decoding the same bytes again gives
    the message decoded the first time, for the price of copying the bytes and a dict
    lookup instead of a parse. A client's Metadata or ApiVersions request is the same bytes
    each time it is sent (the correlation id is in the header, not in the body), and the
    handler may then recognise the message itself (broker.handlers.metadata keeps its
    answer to it). The message is shared, so nobody may change it: a Struct is frozen, and
    its lists are left as they are (what the broker needs changed it copies, as
    dataclasses.replace does). A body longer than KEPT_MAX_BYTES is decoded, not kept."""

    __slots__ = ("buildfunc", "codec", "decodefunc", "defersubcon", "kept", "parsefunc", "source")

    def __init__(self, codec: Any) -> None:
        self.codec = codec
        self.parsefunc = codec.parsefunc
        self.decodefunc = codec.decodefunc
        self.buildfunc = codec.buildfunc
        self.defersubcon = codec.defersubcon
        self.source = codec.source  # the generated code, as tests read it
        self.kept: dict[bytes, tuple[Any, int]] = {}  # body -> (message, its end in body)

    def decode(self, buf: Any, pos: int) -> tuple[Any, int]:
        """The compiled parser's (message, end), kept for the same bytes."""
        body = bytes(buf[pos:])
        kept = self.kept.get(body)
        if kept is None:
            kept = self.decodefunc(body, 0)  # (message, end in body)
            if len(body) <= KEPT_MAX_BYTES and kept[1] <= len(body):  # not refused
                keep(self.kept, body, kept, KEPT_DECODED)
        return kept[0], pos + kept[1]


def decode(
    cls: type[Message],
    version: int,
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    allow_trailing: bool = False,
) -> Any:
    """Decode `buf[pos:]` as `cls` at `version`; every byte must be used unless
    `allow_trailing` (the broker reads requests as Kafka does, see broker.connection).

    Raises:
      DecodeError: the bytes are short, have bytes left over, or hold an invalid value.
    """
    decoder = _DECODERS.get((cls, version))
    if decoder is None:
        _compiled(cls, version)
        decoder = _DECODERS[(cls, version)]
    try:
        msg, end = decoder(buf, pos)
        left = len(buf) - end
    except _REFUSED:
        left = -1
    if left:
        if left < 0:  # refused, or read past the end
            msg, left = _refused(cls, version, buf, pos)
        if left and not allow_trailing:
            raise DecodeError(f"{cls.__name__} v{version}: {left} bytes left over")
    return msg


def encode_chunks(msg: Message, version: int) -> list[Any]:
    """Encode `msg` at `version` as a list of byte chunks (memoryviews are not copied)."""
    chunks: list[Any] = []
    builder = _BUILDERS.get((msg.__class__, version))
    if builder is None:
        _compiled(type(msg), version)
        builder = _BUILDERS[(msg.__class__, version)]
    try:
        builder(msg, chunks, None)
    except _UNWRITABLE as e:
        _general_encode(_compiled(type(msg), version), msg, e)
    return chunks


def encode(msg: Message, version: int) -> bytes:
    return b"".join(encode_chunks(msg, version))


# --- versioned data: int16 version + struct -----------------------------------------------
#
# Kafka's MessageUtil.serializeVersionedData: the format of __consumer_offsets keys and
# values and of the consumer protocol's subscription and assignment bytes. The struct class
# carries VERSIONS (and FLEXIBLE_FROM when it has flexible versions).

_VERSION = struct.Struct(">h")
_VERSIONED: dict[tuple[type[Struct], int], Any] = {}


def _versioned_codec(cls: type[Struct], version: int) -> Any:
    c = _VERSIONED.get((cls, version))
    if c is None:
        flexible_from = getattr(cls, "FLEXIBLE_FROM", None)
        flexible = flexible_from is not None and version >= flexible_from
        c = _VERSIONED[(cls, version)] = build_struct(cls, version, flexible).compile()
    return c


def encode_versioned(obj: Struct, version: int) -> bytes:
    """`obj` at `version`, prefixed by the version as int16."""
    cls = type(obj)
    codec = _VERSIONED.get((cls, version))  # made only for a version the class has
    if codec is None:
        if version not in cls.VERSIONS:  # type: ignore[attr-defined]
            raise ValueError(f"{cls.__name__} has no version {version}")
        codec = _versioned_codec(cls, version)
    chunks: list[Any] = [_VERSION.pack(version)]
    try:
        codec.buildfunc(obj, chunks, None)
    except _UNWRITABLE as e:
        _general_encode(codec, obj, e)
    return b"".join(chunks)


def decode_versioned(cls: type[Struct], data: bytes | memoryview) -> Any:
    """Decode int16 version + struct. A version newer than we know is read with our newest
    layout and its extra trailing bytes ignored (newer versions only append fields, which is
    how Kafka reads them too); a known version must use every byte.

    Raises:
      DecodeError: short, invalid, an unknown old version, or bytes left over.
    """
    versions: range = cls.VERSIONS  # type: ignore[attr-defined]
    if data.__class__ is not bytes:
        data = bytes(data)
    try:
        (version,) = _VERSION.unpack_from(data, 0)
    except struct.error as e:
        raise DecodeError(f"{cls.__name__}: {e}") from e
    if version < versions.start:
        raise DecodeError(f"{cls.__name__}: unknown version {version}")
    newer = version >= versions.stop
    codec = _versioned_codec(cls, versions.stop - 1 if newer else version)
    try:
        obj, end = codec.decodefunc(data, 2)
        left = len(data) - end
    except _MALFORMED:
        left = -1
    if left < 0:
        obj, left = _general_decode(codec, cls.__name__, data, 2)
    if left and not newer:
        raise DecodeError(f"{cls.__name__} v{version}: {left} bytes left over")
    return obj
