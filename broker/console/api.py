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

import re
from collections.abc import Awaitable, Callable
from typing import Any
from urllib.parse import unquote

from broker.console import groups, timeline, topics
from broker.console.params import ConsoleError, parse_query

__all__ = ["handle", "methods", "origin_refused"]

Handler = Callable[[Any, str, list[str], dict[str, str], bytes], Awaitable[dict[str, Any]]]


def _routes() -> list[tuple[re.Pattern[str], dict[str, Handler]]]:
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
