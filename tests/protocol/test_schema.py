"""What every message class gets from `Struct`: a frozen, keyword-only dataclass whose
`__init__` is made on first use."""

from __future__ import annotations

import dataclasses
import inspect
from typing import ClassVar

import pytest

from protocol.messages.heartbeat import HeartbeatRequest
from protocol.schema import Array, Int32, String, Struct, wire


class Inner(Struct):
    value: int = wire(Int32)


class Outer(Struct):
    name: str = wire(String)
    count: int = wire(Int32, default=7)
    items: list[int] = wire(Array(Int32))
    inner: Inner = wire(Inner)


def test_defaults_apply_and_each_instance_gets_its_own_list_and_struct():
    a, b = Outer(), Outer(name="b")
    assert (a.name, a.count, a.items, a.inner) == ("", 7, [], Inner(value=0))
    assert b.name == "b"
    assert a.items is not b.items
    assert a.inner is not b.inner
    given = [1]
    assert Outer(items=given).items is given


def test_fields_are_keyword_only_and_known_from_the_first_call_on():
    class Fresh(Struct):  # its __init__ is made by the first call, which fails here
        name: str = wire(String)

    with pytest.raises(TypeError):
        Fresh("x")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Fresh(nmae="x")
    assert Fresh(name="x").name == "x"


def test_instances_are_frozen():
    msg = Outer(name="x")
    with pytest.raises(dataclasses.FrozenInstanceError):
        msg.name = "y"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del msg.name  # type: ignore[misc]
    assert msg.name == "x"


def test_dataclass_tools_work():
    msg = HeartbeatRequest(group_id="g", generation_id=3, member_id="m")
    assert dataclasses.is_dataclass(msg)
    assert [f.name for f in dataclasses.fields(msg)] == [
        "group_id",
        "generation_id",
        "member_id",
        "group_instance_id",
    ]
    changed = dataclasses.replace(msg, generation_id=4)
    assert (changed.generation_id, changed.group_id, msg.generation_id) == (4, "g", 3)
    assert repr(msg) == (
        "HeartbeatRequest(group_id='g', generation_id=3, member_id='m', group_instance_id=None)"
    )
    assert msg != changed
    with pytest.raises(TypeError):
        hash(msg)


def _field_facts(cls):
    return [
        (f.name, f.type, f.default, f.default_factory, f.kw_only, f.init, dict(f.metadata))
        for f in dataclasses.fields(cls)
    ]


def _twin(cls):
    """`cls` declared again from its source annotations and defaults, made by dataclasses
    itself with the options Struct stands for."""
    namespace = {"__annotations__": inspect.get_annotations(cls)}
    for name, f in cls.__dict__["__dataclass_fields__"].items():
        if name in namespace["__annotations__"]:
            namespace[name] = dataclasses.field(
                default=f.default, default_factory=f.default_factory, metadata=f.metadata
            )
    for name in ("KIND", "VERSIONS"):  # a ClassVar with a value
        if name in cls.__dict__:
            namespace[name] = cls.__dict__[name]
    bases = tuple(_TWINS[b] for b in cls.__bases__ if b in _TWINS) or (object,)
    twin = dataclasses.dataclass(init=False, repr=False, eq=False, kw_only=True)(
        type(cls.__name__, bases, namespace)
    )
    _TWINS[cls] = twin
    return twin


_TWINS: dict[type, type] = {}


class _Base(Struct):
    KIND: ClassVar[str] = "base"
    name: str = wire(String)
    count: int = wire(Int32, default=7)


class _Derived(_Base):
    VERSIONS: ClassVar[range] = range(0, 2)
    count: int = wire(Int32, default=9)  # overridden: keeps its place, new default
    items: list[int] = wire(Array(Int32))
    inner: Inner = wire(Inner)
    plain: int = 3  # not wire(): a plain default


@pytest.mark.parametrize("cls", [Inner, Outer, _Base, _Derived], ids=lambda c: c.__name__)
def test_struct_fields_are_those_dataclass_makes(cls):
    for base in reversed(cls.__mro__[:-1]):
        if issubclass(base, Struct) and base is not Struct and base not in _TWINS:
            _twin(base)
    twin = _TWINS.get(cls) or _twin(cls)
    assert _field_facts(cls) == _field_facts(twin)
    assert repr(cls.__dataclass_params__) == repr(twin.__dataclass_params__)
    for name in ("count", "plain", "items", "KIND"):
        assert getattr(cls, name, None) == getattr(twin, name, None), name
    msg = cls()
    assert dataclasses.asdict(dataclasses.replace(msg)) == dataclasses.asdict(msg)


def test_every_message_class_has_its_wire_fields_as_dataclass_fields():
    import importlib
    import pkgutil

    import protocol.messages

    seen = 0
    for info in pkgutil.iter_modules(protocol.messages.__path__):
        module = importlib.import_module(f"protocol.messages.{info.name}")
        for value in vars(module).values():
            if isinstance(value, type) and issubclass(value, Struct) and value is not Struct:
                names = [f.name for f in dataclasses.fields(value)]
                assert names == [n for n, _ in value._wire_fields], value.__name__
                assert "API_KEY" not in names
                assert "VERSIONS" not in names
                seen += 1
    assert seen > 250


def test_a_message_kept_decoded_is_the_same_object_for_the_same_bytes():
    """MetadataRequest is KEEP_DECODED (protocol.schema._Kept): the same body gives the
    message decoded the first time; other bytes, trailing bytes and malformed bytes are
    decoded (or refused) as usual."""
    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
    from protocol.primitives import DecodeError
    from protocol.schema import KEPT_DECODED, KEPT_MAX_BYTES, decode, encode

    def request(*names: str) -> MetadataRequest:
        return MetadataRequest(topics=[MetadataRequestTopic(name=n) for n in names])

    body = encode(request("a", "b"), 8)
    first = decode(MetadataRequest, 8, body)
    assert first == request("a", "b")
    assert decode(MetadataRequest, 8, bytearray(b"xx" + body), 2) is first
    assert decode(MetadataRequest, 9, encode(request("a", "b"), 9)) is not first
    other = decode(MetadataRequest, 8, encode(request("a", "c"), 8))
    assert other == request("a", "c")
    # Trailing bytes: part of what is kept, and still refused unless allowed.
    trailing = decode(MetadataRequest, 8, body + b"\x00", allow_trailing=True)
    assert trailing == first
    with pytest.raises(DecodeError, match="1 bytes left over"):
        decode(MetadataRequest, 8, body + b"\x00")
    with pytest.raises(DecodeError):
        decode(MetadataRequest, 8, body[:-3])
    # A long body is decoded afresh each time; the kept ones are bounded.
    big = encode(request(*(f"topic-{i:04}" for i in range(KEPT_MAX_BYTES // 10))), 8)
    assert decode(MetadataRequest, 8, big) is not decode(MetadataRequest, 8, big)
    for i in range(KEPT_DECODED + 1):
        decode(MetadataRequest, 8, encode(request(f"t{i}"), 8))
    assert decode(MetadataRequest, 8, body) is not first
    assert decode(MetadataRequest, 8, body) == first
    # A message that is not KEEP_DECODED is decoded afresh.
    heartbeat = encode(HeartbeatRequest(group_id="g", generation_id=1, member_id="m"), 0)
    assert decode(HeartbeatRequest, 0, heartbeat) is not decode(HeartbeatRequest, 0, heartbeat)
