"""The fault table: which requests to answer with an error, late, or not at all.

A fault names an API (by name or key) and what to do with its next `count` requests:

  error       answer with that error code, placed where Kafka places it for that API:
              the API's own `error_response` (per partition for Produce, per group for
              OffsetFetch v8+, top level for JoinGroup, ...), as Kafka's
              AbstractRequest.getErrorResponse does for an exception. The handler is not
              run: nothing is appended, committed or joined.
  delay_ms    answer that much later (real time, whatever the clock), with the error if
              one is given, else with the handler's own answer. The connection waits, as
              it would behind a slow request.
  action      "disconnect": close the connection instead of answering; "drop": never
              answer, and answer nothing more on that connection until the client closes
              it (a broker that hangs).

Optional filters narrow which requests match: `topic` (and `partition`), `group_id`,
`client_id`. A request matches when any partition or group it names matches; the error
then goes on every partition of the request (error_response), not only the matching one.

Storage faults (`{"storage": "fsync"}` or `"append"`) make the disk fail instead: see
broker.controls.disk.

The dispatch site (broker.dispatch) consults the table only for an API key in `armed`
(the request faults by key, kept with `rules`), so a request no fault names costs one
lookup in a dict, whether the table is empty or holds faults for other APIs.

`parse` validates a fault as it comes from JSON and raises `ControlError` naming the bad
field; nothing is added then.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any

from broker.controls.summary import group_ids, summarise, topic_partitions
from protocol.errors import ErrorCode

__all__ = ["ControlError", "Fault", "FaultTable", "api_name", "error_code"]

ACTIONS = ("error", "disconnect", "drop")
STORAGE = ("fsync", "append")
_FIELDS = frozenset(
    {
        "api",
        "error",
        "count",
        "topic",
        "partition",
        "group_id",
        "client_id",
        "delay_ms",
        "action",
        "storage",
    }
)


class ControlError(ValueError):
    """Bad control input: HTTP 400, naming the field."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field


@dataclass
class Fault:
    id: int
    count: int
    api: str | None = None  # a route name; None for a storage fault
    api_key: int | None = None
    error: ErrorCode | None = None
    action: str = "error"  # error | disconnect | drop (delay alone: "error" with no error)
    delay_ms: int = 0
    topic: str | None = None
    partition: int | None = None
    group_id: str | None = None
    client_id: str | None = None
    storage: str | None = None
    fired: int = 0
    filtered: bool = field(default=False, repr=False)  # has a topic/partition/group filter

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "count": self.count, "fired": self.fired}
        if self.storage is not None:
            out["storage"] = self.storage
        else:
            out.update(api=self.api, api_key=self.api_key, action=self.action)
        if self.error is not None:
            out["error"] = self.error.name
            out["error_code"] = int(self.error)
        for name in ("delay_ms", "topic", "partition", "group_id", "client_id"):
            v = getattr(self, name)
            if v or (name == "partition" and v is not None):
                out[name] = v
        return out


def api_name(value: Any, routes: list[Any], field: str = "api") -> tuple[str, int]:
    """A route's (name, key) from a name ("Produce", any case) or a key (0 or "0")."""
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        raise ControlError(field, f"expected an API name or key, not {value!r}")
    text = str(value).strip()
    for r in routes:
        if text.lower() == r.name.lower() or (
            text.lstrip("-").isdigit() and int(text) == r.api_key
        ):
            return r.name, r.api_key
    raise ControlError(field, f"unknown API {value!r} (kmock serves: {_names(routes)})")


def _names(routes: list[Any]) -> str:
    return ", ".join(r.name for r in routes)


def error_code(value: Any, field: str = "error") -> ErrorCode:
    """An ErrorCode from its name ("NOT_LEADER_OR_FOLLOWER", any case) or number (6)."""
    if isinstance(value, bool) or not isinstance(value, int | str) or value == "":
        raise ControlError(field, f"expected a Kafka error name or code, not {value!r}")
    text = str(value).strip()
    try:
        if text.lstrip("-").isdigit():
            return ErrorCode(int(text))
        return ErrorCode[text.upper()]
    except (KeyError, ValueError):
        raise ControlError(field, f"unknown Kafka error {value!r}") from None


def _int(spec: dict[str, Any], name: str, default: int | None, least: int) -> int | None:
    v = spec.get(name, default)
    if v is None:
        return None
    if isinstance(v, bool) or not isinstance(v, int):
        raise ControlError(name, f"expected an integer, not {v!r}")
    if v < least:
        raise ControlError(name, f"must be {least} or more, not {v}")
    return v


def _str(spec: dict[str, Any], name: str) -> str | None:
    v = spec.get(name)
    if v is not None and (not isinstance(v, str) or not v):
        raise ControlError(name, f"expected a non-empty string, not {v!r}")
    return v


class FaultTable:
    """The faults waiting to fire. `rules` holds the request faults, in the order added;
    `armed` the same faults by API key (what the dispatch site looks up)."""

    def __init__(self) -> None:
        self.rules: list[Fault] = []
        self.armed: dict[int, list[Fault]] = {}
        self.storage: list[Fault] = []  # fired by broker.controls.disk
        self._ids = itertools.count(1)

    def parse(self, spec: Any, routes: list[Any]) -> Fault:
        """A Fault from its JSON object (not added yet).

        Raises:
          ControlError: an unknown field, API or error name, a negative count or delay, a
            fault that does nothing.
        """
        if not isinstance(spec, dict):
            raise ControlError("body", "expected a JSON object")
        for name in spec:
            if name not in _FIELDS:
                raise ControlError(name, f"unknown field (known: {', '.join(sorted(_FIELDS))})")
        count = _int(spec, "count", 1, 1)
        assert count is not None
        fault = Fault(
            id=0,
            count=count,
            topic=_str(spec, "topic"),
            partition=_int(spec, "partition", None, 0),
            group_id=_str(spec, "group_id"),
            client_id=_str(spec, "client_id"),
            delay_ms=_int(spec, "delay_ms", 0, 0) or 0,
        )
        if fault.partition is not None and fault.topic is None:
            raise ControlError("partition", "needs a topic")
        if spec.get("storage") is not None:
            if spec["storage"] not in STORAGE:
                raise ControlError("storage", f"expected one of {', '.join(STORAGE)}")
            for name in ("api", "action", "delay_ms", "group_id", "client_id"):
                if name in spec:
                    raise ControlError(name, "not allowed with storage")
            if spec.get("error") not in (None, "KAFKA_STORAGE_ERROR", 56):
                raise ControlError("error", "a storage fault is always KAFKA_STORAGE_ERROR")
            fault.storage = spec["storage"]
            fault.error = ErrorCode.KAFKA_STORAGE_ERROR
            return fault
        if "api" not in spec:
            raise ControlError("api", "required (or storage)")
        fault.api, fault.api_key = api_name(spec["api"], routes)
        if spec.get("error") is not None:
            fault.error = error_code(spec["error"])
        action = spec.get("action", "error")
        if action not in ACTIONS:
            raise ControlError("action", f"expected one of {', '.join(ACTIONS)}, not {action!r}")
        if action != "error" and fault.error is not None:
            raise ControlError("error", f"not allowed with action {action!r}")
        if action == "error" and fault.error is None and not fault.delay_ms:
            raise ControlError("error", "required (or action, or delay_ms)")
        fault.action = action
        fault.filtered = any(v is not None for v in (fault.topic, fault.group_id))
        return fault

    def add(self, fault: Fault) -> Fault:
        fault.id = next(self._ids)
        if fault.storage:
            self.storage.append(fault)
        else:
            assert fault.api_key is not None
            self.rules.append(fault)
            self.armed.setdefault(fault.api_key, []).append(fault)
        return fault

    def clear(self) -> int:
        n = len(self.rules) + len(self.storage)
        self.rules.clear()
        self.armed.clear()
        self.storage.clear()
        return n

    def all(self) -> list[Fault]:
        return sorted(self.rules + self.storage, key=lambda f: f.id)

    def take(
        self, api_key: int, version: int, request: Any, client_id: str | None, resolve: Any
    ) -> Fault | None:
        """The first fault matching this request, its count taken (removed at zero)."""
        faults = self.armed.get(api_key)
        if faults is None:
            return None
        summary = None
        for fault in faults:
            if fault.client_id is not None and fault.client_id != client_id:
                continue
            if fault.filtered:
                if summary is None:
                    summary = summarise(request, resolve, version)
                if not _matches(fault, summary):
                    continue
            fault.count -= 1
            fault.fired += 1
            if fault.count <= 0:
                self.rules.remove(fault)
                faults.remove(fault)
                if not faults:
                    del self.armed[api_key]
            return fault
        return None


def _matches(fault: Fault, summary: dict[str, Any]) -> bool:
    if fault.group_id is not None and fault.group_id not in group_ids(summary):
        return False
    if fault.topic is not None:
        return any(
            t == fault.topic and (fault.partition is None or p in (None, fault.partition))
            for t, p in topic_partitions(summary)
        )
    return True
