"""Random requests for the live-server fuzz, driven by a seeded `random.Random`.

The same idea as tests/fuzz/strategies.py (values drawn from the message declarations),
without hypothesis: the live fuzz needs a hundred thousand frames from one seed, quickly.

Three kinds of frame:
  * valid: any routed request at any of its versions, with random field values;
  * mutated: a valid frame with bits flipped, cut, extended or a length overwritten;
  * garbage: random bytes behind a size prefix (sometimes a lying one).

Names come from small pools, so that requests meet each other on the same topics and
groups. What the fuzz must not do is exhaust the machine by asking politely, so a few
values are kept in range: partition counts (each partition is files and a descriptor),
wait times (a parked request holds its connection), and config changes of the broker
itself (they would change what the well-behaved client sees).
"""

from __future__ import annotations

import random
import struct
import uuid
from typing import Any

from broker.routes import Route, all_routes
from protocol.frames import frame_request
from protocol.records import build_batch
from protocol.releases import accepts
from protocol.schema import Array, Message, Struct, _Fixed, _StructType, _Variable, encode_chunks

TOPICS = ["fuzz-a", "fuzz-b", "fuzz-c"]
BAD_NAMES = ["", ".", "..", "bad name", "bad/name", "a" * 300, "__consumer_offsets", "ünï"]
GROUPS = ["fuzz-g1", "fuzz-g2", ""]

_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_INTERESTING = [-2, -1, 0, 1, 2, 3, 100, 2**31 - 1, -(2**31)]
BOUNDED = {
    "num_partitions": (-2, 4),
    "count": (-2, 4),
    "max_wait_ms": (-5, 500),
    "timeout_ms": (-5, 1000),
    "session_timeout_ms": (-5, 10_000),
    "rebalance_timeout_ms": (-5, 2_000),
}
# Config changes of these resource types would change the broker for everyone.
_BROKER_RESOURCES = (4, 8)


class RandomRequests:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.routes: list[Route] = all_routes()

    # --- values ------------------------------------------------------------------------

    def _int(self, kind: str, name: str) -> int:
        lo, hi = BOUNDED.get(name, _RANGES[kind])
        if self.rng.random() < 0.6:
            picks = [v for v in _INTERESTING if lo <= v <= hi]
            if picks:
                return self.rng.choice(picks)
        return self.rng.randint(lo, hi)

    def _string(self, name: str) -> str:
        r = self.rng.random()
        if "group" in name and r < 0.8:
            return self.rng.choice(GROUPS)
        if r < 0.7:
            return self.rng.choice(TOPICS)
        if r < 0.9:
            return self.rng.choice(BAD_NAMES)
        return "".join(chr(self.rng.randint(32, 0x2FF)) for _ in range(self.rng.randint(0, 10)))

    def _records(self) -> bytes | None:
        r = self.rng.random()
        if r < 0.1:
            return None
        if r < 0.2:
            return self.rng.randbytes(self.rng.randint(0, 80))
        items = [
            (
                None if self.rng.random() < 0.3 else self.rng.randbytes(4),
                self.rng.randbytes(self.rng.randint(0, 32)),
                (),
                1_700_000_000_000 + i,
            )
            for i in range(self.rng.randint(1, 4))
        ]
        kw: dict[str, Any] = {"compression": self.rng.choice([0, 0, 0, 1, 2, 3, 4])}
        if self.rng.random() < 0.3:  # an idempotent producer's batch
            kw.update(
                producer_id=self.rng.randint(0, 5),
                producer_epoch=self.rng.randint(0, 2),
                base_sequence=self.rng.randint(0, 20),
            )
        batch = build_batch(items, **kw)
        return batch if self.rng.random() < 0.9 else batch + batch

    def _value(
        self, w: Any, name: str, version: int, flexible: bool, nullable: bool, owner: type[Struct]
    ) -> Any:
        if nullable and self.rng.random() < 0.1:
            return None
        if isinstance(w, _Fixed):
            if w.name == "bool":
                return self.rng.random() < 0.5
            if w.name == "float64":
                return self.rng.random()
            if w.name == "uuid":
                return uuid.UUID(int=0) if self.rng.random() < 0.5 else uuid.uuid4()
            if name == "resource_type" and owner.__name__ == "AlterConfigsResource":
                return self.rng.choice([2, 2, 2, 0, 1, 3, -1, 99])
            return self._int(w.name, name)
        if isinstance(w, _Variable):
            if w.name == "records":
                return self._records()
            if w.name == "string":
                return self._string(name)
            return self.rng.randbytes(self.rng.randint(0, 24))
        if isinstance(w, Array):
            n = self.rng.choice([0, 1, 1, 2, 3])
            element = w.element
            if isinstance(element, type):
                return [self.message(element, version, flexible) for _ in range(n)]
            return [self._value(element, name, version, flexible, False, owner) for _ in range(n)]
        if isinstance(w, _StructType):
            return self.message(w.cls, version, flexible)
        raise TypeError(w)  # pragma: no cover - every wire type is listed above

    def message(self, cls: type[Struct], version: int, flexible: bool | None = None) -> Any:
        if flexible is None:
            flexible = issubclass(cls, Message) and cls.is_flexible(version)
        values = {}
        for name, w in cls._wire_fields:
            if not w.present_in(version) or (w.tag is not None and not flexible):
                continue
            nullable = w.nullable is not None and version >= w.nullable
            values[name] = self._value(w.type, name, version, flexible, nullable, cls)
        return cls(**values)

    # --- frames ------------------------------------------------------------------------

    def valid(self, correlation_id: int, client_id: str) -> tuple[Route, int, Any, bytes]:
        """(route, version, request, frame with its size prefix)."""
        route = self.rng.choice(self.routes)
        # The versions the broker serves with kafka.version unset (not Produce v0-2 nor
        # Fetch v0-3: message formats v0/v1 are served under older releases only).
        version = self.rng.choice(
            [v for v in route.request.VERSIONS if accepts(None, route.api_key, v)]
        )
        request = self.message(route.request, version)
        chunks = frame_request(
            route.api_key,
            version,
            correlation_id,
            client_id,
            encode_chunks(request, version),
            route.request.is_flexible(version),
        )
        return route, version, request, b"".join(bytes(c) for c in chunks)

    def mutate(self, frame: bytes) -> bytes:
        """A valid frame with a few changes; the size prefix is kept right most of the time,
        so the damage reaches the decoders rather than the framing."""
        body = bytearray(frame[4:])
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.choice(["flip", "flip", "cut", "extend", "length", "insert", "delete"])
            if op == "flip" and body:
                body[self.rng.randrange(len(body))] ^= 1 << self.rng.randrange(8)
            elif op == "cut" and body:
                del body[self.rng.randrange(len(body)) :]
            elif op == "extend":
                body += self.rng.randbytes(self.rng.randint(1, 16))
            elif op == "length" and len(body) >= 4:
                i = self.rng.randrange(len(body) - 3)
                width = self.rng.choice([1, 2, 4])
                value = self.rng.choice(
                    [0, 0x7F, 0x80, 0xFF, 0x7FFF, 0xFFFF, 0x7FFFFFFF, 0xFFFFFFFF]
                )
                body[i : i + width] = (value & ((1 << (8 * width)) - 1)).to_bytes(width, "big")
            elif op == "insert":
                i = self.rng.randint(0, len(body))
                body[i:i] = self.rng.randbytes(self.rng.randint(1, 8))
            elif op == "delete" and body:
                i = self.rng.randrange(len(body))
                del body[i : i + self.rng.randint(1, 8)]
        size = len(body) if self.rng.random() < 0.95 else self.rng.randint(-10, len(body) + 10)
        return struct.pack(">i", size) + bytes(body)

    def garbage(self) -> bytes:
        body = self.rng.randbytes(self.rng.randint(0, 64))
        size = (
            len(body)
            if self.rng.random() < 0.8
            else self.rng.choice([-1, 0, 2**31 - 1, len(body) + 1, self.rng.randint(0, 1 << 20)])
        )
        return struct.pack(">i", size) + body
