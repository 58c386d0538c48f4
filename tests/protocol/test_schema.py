"""What every message class gets from `Struct`: a frozen, keyword-only dataclass whose
`__init__` is made on first use."""

from __future__ import annotations

import dataclasses

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
