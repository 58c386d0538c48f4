"""The admin HTTP endpoint (`admin.port`): health, readiness and Prometheus metrics.

    GET /healthz   200 once the endpoint listens (the process is up)
    GET /readyz    200 once __consumer_offsets has been replayed (`broker.ready`), else 503
    GET /metrics   Prometheus text format 0.0.4, gauges refreshed first: groups by state
                   and type (classic, consumer),
                   and consumer lag (log end offset - committed offset, per group/partition)

A deliberately tiny HTTP/1.1 server rather than a dependency: it reads one request head
(at most MAX_REQUEST_BYTES, within REQUEST_TIMEOUT_S), answers GET or HEAD, and closes the
connection after every response (`Connection: close`), so there is no keep-alive, no
pipelining and no request body to handle. Anything else gets 400, 404, 405 or 431.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import trio

log = logging.getLogger("broker.admin_http")

__all__ = ["refresh_gauges", "serve_admin"]

MAX_REQUEST_BYTES = 8192  # request line + headers; a larger head gets 431
REQUEST_TIMEOUT_S = 10.0  # to receive the head, and again to send the answer
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


async def serve_admin(broker: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Serve the admin endpoint on admin.host:admin.port until cancelled.

    Sets `broker.admin_address` to the bound (host, port) (port 0 picks one) and reports it
    through `task_status`.
    """
    host = broker.config["admin.host"]
    listeners = await trio.open_tcp_listeners(broker.config["admin.port"], host=host or None)
    sockname = listeners[0].socket.getsockname()
    broker.admin_address = (sockname[0], sockname[1])
    log.info("admin endpoint on http://%s:%d (/healthz /readyz /metrics)", *broker.admin_address)
    task_status.started(broker.admin_address)
    await trio.serve_listeners(partial(_serve_one, broker), listeners)


async def _serve_one(broker: Any, stream: trio.SocketStream) -> None:
    try:
        with trio.move_on_after(REQUEST_TIMEOUT_S) as receiving:
            head = await _receive_head(stream)
        if receiving.cancelled_caught:
            status, headers, body = _plain(408, "request timeout\n")
            method = "GET"
        elif head is None:
            status, headers, body = _plain(431, "request head too large\n")
            method = "GET"
        else:
            method, status, headers, body = _answer(broker, head)
        with trio.move_on_after(REQUEST_TIMEOUT_S):
            await stream.send_all(
                _response(status, headers, b"" if method == "HEAD" else body, len(body))
            )
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass  # the client went away; nothing to answer
    finally:
        with trio.CancelScope(shield=True):
            await stream.aclose()


async def _receive_head(stream: trio.SocketStream) -> bytes | None:
    """The request head up to the blank line; b"" if the peer closed; None if too large."""
    buf = bytearray()
    while b"\r\n\r\n" not in buf and b"\n\n" not in buf:
        if len(buf) > MAX_REQUEST_BYTES:
            return None
        data = await stream.receive_some(MAX_REQUEST_BYTES + 1)
        if not data:
            return bytes(buf)
        buf += data
    end = buf.find(b"\r\n\r\n") if b"\r\n\r\n" in buf else buf.find(b"\n\n")
    return bytes(buf[:end]) if end <= MAX_REQUEST_BYTES else None


def _answer(broker: Any, head: bytes) -> tuple[str, int, list[tuple[str, str]], bytes]:
    request_line = head.split(b"\n", 1)[0].rstrip(b"\r")
    parts = request_line.split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return ("GET", *_plain(400, "bad request\n"))
    try:
        method = parts[0].decode("ascii")
        target = parts[1].decode("ascii")
    except UnicodeDecodeError:
        return ("GET", *_plain(400, "bad request\n"))
    path = target.split("?", 1)[0]
    if path not in ("/healthz", "/readyz", "/metrics"):
        return (method, *_plain(404, "not found\n"))
    if method not in ("GET", "HEAD"):
        status, headers, body = _plain(405, "method not allowed\n")
        return (method, status, [*headers, ("Allow", "GET, HEAD")], body)
    if path == "/healthz":
        return (method, *_plain(200, "ok\n"))
    if path == "/readyz":
        if broker.ready.is_set():
            return (method, *_plain(200, "ready\n"))
        return (method, *_plain(503, "replaying __consumer_offsets\n"))
    try:
        refresh_gauges(broker)
        body = broker.metrics.render()
    except Exception:
        # A bug in a gauge must not take the broker down with it; logged at ERROR so that
        # the test suite notices.
        log.exception("rendering /metrics failed")
        return (method, *_plain(500, "internal error\n"))
    return (method, 200, [("Content-Type", PROMETHEUS_CONTENT_TYPE)], body)


def _plain(status: int, text: str) -> tuple[int, list[tuple[str, str]], bytes]:
    return status, [("Content-Type", "text/plain; charset=utf-8")], text.encode()


def _response(status: int, headers: list[tuple[str, str]], body: bytes, length: int) -> bytes:
    lines = [
        f"HTTP/1.1 {status} {_REASONS[status]}",
        *(f"{k}: {v}" for k, v in headers),
        f"Content-Length: {length}",
        "Connection: close",
        "",
        "",
    ]
    return "\r\n".join(lines).encode("ascii") + body


# --- gauges --------------------------------------------------------------------------------


def refresh_gauges(broker: Any) -> None:
    """Set the kmock_groups and kmock_consumer_lag gauges from the coordinator's state.

    Both are left alone until __consumer_offsets has been replayed.
    """
    runtime = broker.coordinator
    if runtime is None or not runtime.loaded:
        return
    metrics = broker.metrics
    by_state = runtime.coordinator.groups_by_state()  # every state, zeros included
    for (group_type, state), count in by_state.items():
        metrics.groups.labels(state, group_type).set(count)
    metrics.consumer_lag.clear()
    for c in runtime.coordinator.committed_offsets():
        t = broker.topics.get(c.topic)
        if t is None or not 0 <= c.partition < len(t.partitions):
            continue  # offsets of a deleted topic: no log end to compare with
        end = t.partitions[c.partition].log.log_end_offset
        metrics.consumer_lag.labels(c.group_id, c.topic, str(c.partition)).set(
            max(0, end - c.offset)
        )
