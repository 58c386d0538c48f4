"""The web console's JSON API: the /v1 paths beside the test controls (broker.controls.api).

    GET    /v1/brokers                        node id, listeners, cluster id
    GET    /v1/topics                         ?filter=&offset=&limit=&internal=
    POST   /v1/topics                         {"name", "partitions", "configs": {...}}
    GET    /v1/topics/{name}                  partitions, offsets, sizes, configs
    DELETE /v1/topics/{name}
    GET    /v1/topics/{name}/messages         ?partition=&offset=|timestamp=&limit=&wait_ms=
    GET    /v1/groups                         ?filter=&type=&offset=&limit=
    GET    /v1/groups/{id}                    state, members, assignments, offsets, lag
    POST   /v1/groups/{id}/offsets/reset      {"to": "earliest", "topics": [...], "dry_run": true}
    GET    /v1/groups/{id}/timeline           generations, members in and out, commits

Same contract as the controls: every answer is a JSON object; bad input is 400 with
{"error": message, "field": name}, an unknown topic or group 404, and nothing changes. A
refusal Kafka gives as an error code carries its name too ({"error_code":
"TOPIC_ALREADY_EXISTS"}). Creating and deleting topics and committing offsets go through
the same code as the CreateTopics, DeleteTopics and OffsetCommit requests; nothing here
writes a log itself. Log files are read a bounded slice at a time, in a worker thread
(broker.console.topics, broker.console.timeline), so the event loop goes on serving.

Path segments are percent-decoded after splitting, so a group id may hold any character
(`/v1/groups/a%2Fb`). The admin endpoint does no Kafka authorization (ACLs): it binds to
127.0.0.1 unless admin.host says otherwise. Requests that change something and carry an
Origin header from another host than the one they were sent to are refused (403), so that
a web page elsewhere cannot drive a local broker through the browser.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import parse_qs, unquote

__all__ = ["ConsoleError", "handle", "methods"]

Handler = Callable[[Any, str, list[str], dict[str, str], bytes], Awaitable[dict[str, Any]]]


class ConsoleError(Exception):
    """Input the console API refuses: answered `status` with the message, nothing changed."""

    def __init__(
        self, status: int, field: str, message: str, error_code: str | None = None
    ) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.status = status
        self.field = field
        self.error_code = error_code


def _routes() -> list[tuple[re.Pattern[str], dict[str, Handler]]]:
    from broker.console import groups, timeline, topics

    segment = r"([^/]+)"
    table: list[tuple[str, dict[str, Handler]]] = [
        ("/v1/brokers", {"GET": topics.brokers}),
        ("/v1/topics", {"GET": topics.list_topics, "POST": topics.create_topic}),
        (f"/v1/topics/{segment}", {"GET": topics.describe_topic, "DELETE": topics.delete_topic}),
        (f"/v1/topics/{segment}/messages", {"GET": topics.messages}),
        ("/v1/groups", {"GET": groups.list_groups}),
        (f"/v1/groups/{segment}", {"GET": groups.describe_group}),
        (f"/v1/groups/{segment}/offsets/reset", {"POST": groups.reset_offsets}),
        (f"/v1/groups/{segment}/timeline", {"GET": timeline.group_timeline}),
    ]
    return [(re.compile(pattern), handlers) for pattern, handlers in table]


_ROUTES: list[tuple[re.Pattern[str], dict[str, Handler]]] = []


def _match(path: str) -> tuple[dict[str, Handler], list[str]] | None:
    if not _ROUTES:
        _ROUTES.extend(_routes())
    for pattern, handlers in _ROUTES:
        m = pattern.fullmatch(path)
        if m is not None:
            return handlers, [unquote(g) for g in m.groups()]
    return None


def methods(path: str) -> tuple[str, ...] | None:
    """The methods a console path takes, or None when it is not one."""
    found = _match(path)
    return None if found is None else tuple(found[0])


async def handle(
    broker: Any, method: str, path: str, query: str, body: bytes
) -> tuple[int, dict[str, Any]]:
    """(HTTP status, JSON object) of one console request; `methods(path)` takes `method`."""
    found = _match(path)
    assert found is not None, path
    assert method in found[0], (method, path)
    handlers, args = found
    try:
        return 200, await handlers[method](broker, method, args, parse_query(query), body)
    except ConsoleError as e:
        answer: dict[str, Any] = {"error": str(e), "field": e.field}
        if e.error_code is not None:
            answer["error_code"] = e.error_code
        return e.status, answer


def origin_refused(head: bytes, method: str) -> bool:
    """True for a request that would change something, sent by a page of another origin:
    its Origin header names another host:port than its Host header."""
    if method in ("GET", "HEAD"):
        return False
    headers = {}
    for line in head.split(b"\n")[1:]:
        name, _, value = line.partition(b":")
        headers[name.strip().lower()] = value.strip().decode("latin-1")
    origin = headers.get(b"origin")
    if origin is None:
        return False
    return origin.split("://", 1)[-1].rstrip("/") != headers.get(b"host", "")


# --- input --------------------------------------------------------------------------------


def parse_query(query: str) -> dict[str, str]:
    try:
        parsed = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise ConsoleError(400, "query", f"malformed query string {query!r}") from None
    return {name: values[-1] for name, values in parsed.items()}


def check_params(params: dict[str, str], known: set[str]) -> None:
    for name in params:
        if name not in known:
            raise ConsoleError(400, name, f"unknown parameter (known: {', '.join(sorted(known))})")


def int_param(
    params: dict[str, str], name: str, default: int | None, *, minimum: int = 0
) -> int | None:
    """An integer query parameter, `default` when absent or empty."""
    text = params.get(name, "").strip()
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ConsoleError(400, name, f"expected an integer, not {text!r}") from None
    if value < minimum:
        raise ConsoleError(400, name, f"must be {minimum} or more, not {value}")
    return value


def page(params: dict[str, str], default_limit: int = 100, max_limit: int = 1000) -> slice:
    """The `offset` and `limit` of a list, as a slice."""
    start = int_param(params, "offset", 0)
    limit = int_param(params, "limit", default_limit, minimum=1)
    assert start is not None
    assert limit is not None
    return slice(start, start + min(limit, max_limit))


def json_body(body: bytes, known: set[str]) -> dict[str, Any]:
    try:
        spec = json.loads(body or b"null", parse_constant=_no_constant)
    except (ValueError, UnicodeDecodeError) as e:
        raise ConsoleError(400, "body", f"malformed JSON: {e}") from None
    if not isinstance(spec, dict):
        raise ConsoleError(400, "body", "expected a JSON object")
    for name in spec:
        if name not in known:
            raise ConsoleError(400, name, f"unknown field (known: {', '.join(sorted(known))})")
    return spec


def json_int(spec: dict[str, Any], name: str, default: int | None, *, minimum: int = 0) -> Any:
    value = spec.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or math.isinf(value):
        raise ConsoleError(400, name, f"expected an integer, not {value!r}")
    if value < minimum:
        raise ConsoleError(400, name, f"must be {minimum} or more, not {value}")
    return value


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def timestamp_ms(text: str, field: str) -> int:
    """Milliseconds since the epoch, or an ISO 8601 date and time (UTC unless it says)."""
    from protocol.record_file import parse_datetime_ms

    text = text.strip()
    if re.fullmatch(r"-?\d+", text):
        value = int(text)
        if value < 0:
            raise ConsoleError(400, field, f"must be 0 or more, not {value}")
        return value
    try:
        return parse_datetime_ms(text)
    except ValueError as e:
        raise ConsoleError(400, field, f"expected ms since the epoch or {e}") from None


def ready_coordinator(broker: Any) -> Any:
    """The group coordinator, once __consumer_offsets has been replayed (else 503)."""
    runtime = broker.coordinator
    if runtime is None or not runtime.loaded:
        raise ConsoleError(503, "", "the broker is still replaying __consumer_offsets")
    return runtime.coordinator


class Caller:
    """Who the console is when it goes through the coordinator runtime (runtime.Caller)."""

    def __init__(self, api_version: int) -> None:
        self.api_version = api_version
        self.client_id = "kmock-console"
        self.client_host = "127.0.0.1"
