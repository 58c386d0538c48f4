"""Hypothesis strategies derived from the message declarations (protocol.schema).

`messages(cls, version)` draws a value of any declared message or struct at `version`:
fields outside the version hold their defaults (as decode produces them), nullable fields
are sometimes None, arrays are short. `mutations(data)` turns valid bytes into the near-
misses a decoder must survive: flipped bits, cut or extended buffers, and overwritten
length fields.

Numbers that make the broker do work in proportion to their value (partition counts of
CreateTopics/CreatePartitions) are kept small, so that a fuzz run exercises the request
paths instead of creating millions of files: see `BOUNDED_INTS`.
"""

from __future__ import annotations

import os
import uuid
from functools import cache
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from protocol.records import build_batch
from protocol.schema import Array, Struct, WireField, _Fixed, _StructType, _Variable

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
# Values each field of that width likes to hold: ids, offsets, -1 sentinels, limits.
_INTERESTING = [-2, -1, 0, 1, 2, 3, 5, 100]

# Examples per property: a short run with the suite; KMOCK_FUZZ_EXAMPLES=5000 for a long one.
# No deadline: the first decode of a (message, version) compiles its codec, and a loaded
# machine must not turn that into a flaky failure. (A per-test `settings` object rather than
# a hypothesis profile, which would change every other test in the session.)
EXAMPLES = int(os.environ.get("KMOCK_FUZZ_EXAMPLES", "25"))
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# Fields whose value is a count of things the broker creates (partitions on disk).
BOUNDED_INTS = {"num_partitions": (-2, 4), "count": (-2, 4)}
MAX_ARRAY = 3


def _int(kind: str, name: str) -> st.SearchStrategy[int]:
    lo, hi = BOUNDED_INTS.get(name, _INT_RANGES[kind])
    return st.one_of(
        st.sampled_from([v for v in _INTERESTING if lo <= v <= hi]), st.integers(lo, hi)
    )


_NAMES = st.one_of(
    st.sampled_from(["", "fuzz", "fuzz-topic", "__consumer_offsets", "g", "a" * 300]),
    st.text(st.characters(codec="utf-8"), max_size=12),
)


def _records() -> st.SearchStrategy[bytes | None]:
    batch = st.builds(
        lambda values, ts: build_batch([(None, v, (), ts + i) for i, v in enumerate(values)]),
        st.lists(st.binary(max_size=16), min_size=1, max_size=3),
        st.integers(0, 2**41),
    )
    return st.one_of(st.none(), batch, batch.map(lambda b: b + b), st.binary(max_size=80))


def _value(w: Any, name: str, version: int, nullable: bool) -> st.SearchStrategy[Any]:
    if isinstance(w, _Fixed):
        if w.name == "bool":
            s: st.SearchStrategy[Any] = st.booleans()
        elif w.name == "float64":
            s = st.floats(allow_nan=False)
        elif w.name == "uuid":
            s = st.one_of(st.just(uuid.UUID(int=0)), st.uuids())
        else:
            s = _int(w.name, name)
    elif isinstance(w, _Variable):
        if w.name == "records":
            return _records()
        s = _NAMES if w.name == "string" else st.binary(max_size=24)
        nullable = nullable or w.always_nullable
    elif isinstance(w, Array):
        element = w.element
        inner = (
            _value(element, name, version, False)
            if not isinstance(element, type)
            else messages(element, version)
        )
        s = st.lists(inner, max_size=MAX_ARRAY)
    elif isinstance(w, _StructType):
        s = messages(w.cls, version)
    else:  # pragma: no cover - every wire type is listed above
        raise TypeError(w)
    return st.one_of(st.none(), s) if nullable else s


@cache
def messages(
    cls: type[Struct], version: int, flexible: bool | None = None
) -> st.SearchStrategy[Any]:
    """Any value of `cls` as it can travel at `version`."""
    if flexible is None:
        is_flexible = getattr(cls, "is_flexible", None)
        flexible = bool(is_flexible and is_flexible(version))
    fields: dict[str, st.SearchStrategy[Any]] = {}
    for name, w in cls._wire_fields:
        field: WireField = w
        if not field.present_in(version) or (field.tag is not None and not flexible):
            continue
        nullable = field.nullable is not None and version >= field.nullable
        fields[name] = _value(field.type, name, version, nullable)
    return st.fixed_dictionaries(fields).map(lambda kw: cls(**kw))


@st.composite
def mutations(draw: Any, data: bytes) -> bytes:
    """Valid bytes with a few of the changes that break decoders."""
    buf = bytearray(data)
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "cut", "extend", "length", "insert", "delete"]))
        if op == "flip" and buf:
            i = draw(st.integers(0, len(buf) - 1))
            buf[i] ^= 1 << draw(st.integers(0, 7))
        elif op == "cut" and buf:
            del buf[draw(st.integers(0, len(buf) - 1)) :]
        elif op == "extend":
            buf += draw(st.binary(min_size=1, max_size=16))
        elif op == "length" and len(buf) >= 4:
            # Overwrite what may be a length or count with an extreme one.
            i = draw(st.integers(0, len(buf) - 4))
            width = draw(st.sampled_from([1, 2, 4]))
            value = draw(
                st.sampled_from(
                    [0x00, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0x80000000, 0xFFFFFFFF]
                )
            )
            buf[i : i + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")
        elif op == "insert":
            i = draw(st.integers(0, len(buf)))
            buf[i:i] = draw(st.binary(min_size=1, max_size=8))
        elif op == "delete" and buf:
            i = draw(st.integers(0, len(buf) - 1))
            del buf[i : i + draw(st.integers(1, 8))]
    return bytes(buf)
