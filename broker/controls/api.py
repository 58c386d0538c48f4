"""The test controls over HTTP/JSON: the /v1 paths of the admin endpoint.

    GET    /v1/faults                 the faults waiting to fire
    POST   /v1/faults                 add one: {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER",
                                      "count": 2}  (a JSON list adds several, all or none)
    DELETE /v1/faults                 clear them all
    GET    /v1/clock                  {"mode": "virtual", "now_ms": ..., "wall_ms": ...}
    POST   /v1/clock/advance          {"ms": 45000}: fire every timer due, then answer
    GET    /v1/journal                ?api=&group_id=&client_id=&topic=&since=&limit=&wait_ms=
    DELETE /v1/journal                empty it (sequence numbers go on)
    GET    /v1/connections            client id, address, API versions used
    POST   /v1/connections/close      {} for all, or {"connection": 3} / {"client_id": "x"}
                                      / {"address": "127.0.0.1:5555"}
    GET    /v1/cluster                brokers, which run, and every partition's leader, epoch,
                                      replicas and ISR (docs/controls.md, Several brokers)
    POST   /v1/cluster/leader         {"topic": "orders", "partition": 0, "broker": 2}
    POST   /v1/cluster/coordinator    {"group_id": "g", "broker": 3} (or "transactional_id")
    POST   /v1/brokers/{id}/stop      its listeners close, its leaderships move
    POST   /v1/brokers/{id}/start     back on the same ports; preferred leaders return

Every answer is a JSON object. Bad input (unknown field, API or error name, a negative
count, malformed JSON, advancing a wall clock) is answered 400 with {"error": message,
"field": name} and changes nothing; an unknown path 404, a method a path does not take 405.
The contract is versioned: a change that breaks a client of /v1 gets a /v2.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import parse_qs

from broker.controls.clock import ClockError
from broker.controls.faults import ControlError, api_name

__all__ = ["PATHS", "handle"]

_BROKER_PATH = re.compile(r"/v1/brokers/(-?\d+)/(stop|start)")


class _Paths(dict[str, tuple[str, ...]]):
    """path -> the methods it takes; /v1/brokers/{id}/stop and /start match any id."""

    def __contains__(self, path: object) -> bool:
        return super().__contains__(path) or (
            isinstance(path, str) and _BROKER_PATH.fullmatch(path) is not None
        )

    def __missing__(self, path: str) -> tuple[str, ...]:
        if _BROKER_PATH.fullmatch(path):
            return ("POST",)
        raise KeyError(path)

    def get(self, path: str, default: Any = None) -> Any:
        """As `[]` (dict.get does not consult __missing__)."""
        try:
            return self[path]
        except KeyError:
            return default


PATHS = _Paths(
    {
        "/v1/faults": ("GET", "POST", "DELETE"),
        "/v1/clock": ("GET",),
        "/v1/clock/advance": ("POST",),
        "/v1/journal": ("GET", "DELETE"),
        "/v1/connections": ("GET",),
        "/v1/connections/close": ("POST",),
        "/v1/cluster": ("GET",),
        "/v1/cluster/leader": ("POST",),
        "/v1/cluster/coordinator": ("POST",),
    }
)
MAX_WAIT_MS = 60_000  # longest a journal read waits for new entries


async def handle(
    broker: Any, method: str, path: str, query: str, body: bytes
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON object) for one /v1 request; the path is one of PATHS and takes
    the method (the admin endpoint checked)."""
    try:
        return 200, await _dispatch(broker, method, path, query, body)
    except ControlError as e:
        return 400, {"error": str(e), "field": e.field}
    except ClockError as e:
        return 400, {"error": str(e), "field": str(e).split(":", 1)[0]}


async def _dispatch(broker: Any, method: str, path: str, query: str, body: bytes) -> Any:
    controls = broker.controls
    if path == "/v1/faults":
        if method == "GET":
            return {"faults": [f.to_json() for f in controls.faults.all()]}
        if method == "DELETE":
            return {"cleared": controls.faults.clear()}
        spec = _json(body)
        specs = spec if isinstance(spec, list) else [spec]
        parsed = [controls.faults.parse(s, controls.routes()) for s in specs]
        return {"faults": [controls.add_fault(f).to_json() for f in parsed]}
    if path == "/v1/clock":
        return broker.clock.describe()
    if path == "/v1/clock/advance":
        spec = _json(body)
        if not isinstance(spec, dict):
            raise ControlError("body", "expected a JSON object")
        for name in spec:
            if name != "ms":
                raise ControlError(name, "unknown field (known: ms)")
        ms = spec.get("ms")
        if isinstance(ms, bool) or not isinstance(ms, int):
            raise ControlError("ms", f"expected an integer number of milliseconds, not {ms!r}")
        await broker.clock.advance(ms)
        return broker.clock.describe()
    if path == "/v1/journal":
        return await _journal(broker, method, query)
    if path == "/v1/connections":
        return {"connections": [c.describe() for c in controls.connections()]}
    if path == "/v1/connections/close":
        spec = _json(body) if body.strip() else {}
        return {"closed": controls.close_connections(spec)}
    if path.startswith(("/v1/cluster", "/v1/brokers/")):
        return await _cluster(broker, path, body)
    raise AssertionError(path)


async def _cluster(broker: Any, path: str, body: bytes) -> Any:
    from broker.controls import cluster as cluster_control

    if path == "/v1/cluster":
        return cluster_control.describe(broker)
    m = _BROKER_PATH.fullmatch(path)
    if m is not None:
        node = int(m[1])
        if m[2] == "stop":
            return await cluster_control.stop_broker(broker, node)
        return await cluster_control.start_broker(broker, node)
    spec = _json(body)
    if not isinstance(spec, dict):
        raise ControlError("body", "expected a JSON object")
    if path == "/v1/cluster/leader":
        for name in spec:
            if name not in ("topic", "partition", "broker"):
                raise ControlError(name, "unknown field (known: topic, partition, broker)")
        return cluster_control.move_leader(
            broker, spec.get("topic"), spec.get("partition"), spec.get("broker")
        )
    return cluster_control.move_coordinator(broker, spec)


async def _journal(broker: Any, method: str, query: str) -> dict[str, Any]:
    journal = broker.journal
    if journal is None:
        raise ControlError("kmock.journal.size", "the journal is off (kmock.journal.size=0)")
    if method == "DELETE":
        return {"cleared": journal.clear(), "last_seq": journal.last_seq}
    params = _query(query, {"api", "group_id", "client_id", "topic", "since", "limit", "wait_ms"})
    api = params.get("api")
    if api is not None:
        api = api_name(api, broker.controls.routes())[0]
    since = _query_int(params, "since", 0)
    limit = _query_int(params, "limit", None)
    if limit == 0:
        raise ControlError("limit", "must be 1 or more")
    wait_ms = min(_query_int(params, "wait_ms", 0) or 0, MAX_WAIT_MS)

    def read() -> list[dict[str, Any]]:
        entries: list[dict[str, Any]] = journal.entries(
            since=since,
            api=api,
            group_id=params.get("group_id"),
            client_id=params.get("client_id"),
            topic=params.get("topic"),
            limit=limit,
        )
        return entries

    entries = read()
    # --follow: wait for an entry that passes the filters, up to wait_ms.
    while not entries and wait_ms:
        seen = journal.last_seq
        before = _now()
        await journal.wait(max(since, seen), wait_ms / 1000)
        wait_ms = max(0, wait_ms - int((_now() - before) * 1000))
        entries = read()
        if journal.last_seq == seen:
            break
    return {"entries": entries, "last_seq": journal.last_seq, "size": journal.size}


def _now() -> float:
    import trio

    return trio.current_time()


def _json(body: bytes) -> Any:
    try:
        return json.loads(body or b"null", parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as e:
        raise ControlError("body", f"malformed JSON: {e}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _query(query: str, known: set[str]) -> dict[str, str]:
    try:
        parsed = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ControlError("query", f"malformed query string {query!r}") from None
    out = {}
    for name, values in parsed.items():
        if name not in known:
            raise ControlError(name, f"unknown parameter (known: {', '.join(sorted(known))})")
        out[name] = values[-1]
    return out


def _query_int(params: dict[str, str], name: str, default: int | None) -> int | None:
    if name not in params:
        return default
    try:
        value = int(params[name])
    except ValueError:
        raise ControlError(name, f"expected an integer, not {params[name]!r}") from None
    if value < 0 or math.isinf(value):
        raise ControlError(name, f"must be 0 or more, not {value}")
    return value
