"""The admin HTTP endpoint (`admin.port`): health, readiness and Prometheus metrics.

    GET /healthz   200 once the endpoint listens (the process is up)
    GET /readyz    200 once __consumer_offsets and __transaction_state have been replayed
                   (`broker.ready`), else 503
    GET /metrics   Prometheus text format 0.0.4, gauges refreshed first: groups by state
                   and type (classic, consumer),
                   and consumer lag (log end offset - committed offset, per group/partition)
    /v1/...        the test controls, JSON: faults, clock, journal, connections
                   (broker.controls.api, docs/controls.md), and the web console's API:
                   brokers, topics, messages, groups (broker.console.api)
    GET /, /console/*   the web console's pages (broker.console)

A deliberately tiny HTTP/1.1 server rather than a dependency: it reads one request head
(at most MAX_REQUEST_BYTES, within REQUEST_TIMEOUT_S), answers GET or HEAD, and closes the
connection after every response (`Connection: close`), so there is no keep-alive and no
pipelining. Only the /v1 control paths take a body (Content-Length, at most MAX_BODY_BYTES;
no chunked encoding). Anything else gets 400, 404, 405, 411, 413 or 431.

A request for the console or /v1 whose Host header names another host than admin.host,
127.0.0.1, localhost, [::1] or one of admin.allowed.hosts gets 421: a web page cannot reach
them through a name of its own that it rebinds to 127.0.0.1 (DNS rebinding), since the
browser sends that name. /healthz, /readyz and /metrics answer whatever the Host, so that
probes and scrapers that name the container or pod need no setting. While a /v1 GET is
answered (a long-poll with `wait_ms`), the connection is watched: when the client closes it,
the answer is abandoned at once.
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import trio

log = logging.getLogger("broker.admin_http")

__all__ = ["refresh_gauges", "serve_admin"]

MAX_REQUEST_BYTES = 8192  # request line + headers; a larger head gets 431
MAX_BODY_BYTES = 65536  # a /v1 control's JSON body; a larger one gets 413
REQUEST_TIMEOUT_S = 10.0  # to receive the head, and again to send the answer
PROMETHEUS_CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
_REASONS = {
    200: "OK",
    400: "Bad Request",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    411: "Length Required",
    413: "Content Too Large",
    421: "Misdirected Request",
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
    log.info(
        "admin endpoint on http://%s:%d (/healthz /readyz /metrics /v1)", *broker.admin_address
    )
    task_status.started(broker.admin_address)
    await trio.serve_listeners(partial(_serve_one, broker), listeners)


async def _serve_one(broker: Any, stream: trio.SocketStream) -> None:
    control: bytes | int = b""
    try:
        with trio.move_on_after(REQUEST_TIMEOUT_S) as receiving:
            head, rest = await _receive_head(stream)
            if head is not None and head.startswith(b"/v1/", _target_at(head)):
                control = await _receive_body(stream, head, rest)
        if receiving.cancelled_caught:
            status, headers, body = _plain(408, "request timeout\n")
            method = "GET"
        elif head is None:
            status, headers, body = _plain(431, "request head too large\n")
            method = "GET"
        elif (refused := _host_refused(broker, head)) is not None:
            status, headers, body = _plain(421, refused)
            method = "GET"
        elif head.startswith(b"/v1/", _target_at(head)):
            if not head.startswith(b"GET "):
                method, status, headers, body = await _control(broker, head, control)
            else:
                with trio.CancelScope() as answering:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(_cancel_when_gone, stream, answering)
                        method, status, headers, body = await _control(broker, head, control)
                        nursery.cancel_scope.cancel()
                if answering.cancelled_caught:
                    return  # the client went away: nobody to answer
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


_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_PROBES = (b"/healthz", b"/readyz", b"/metrics")  # answered whatever the Host


def _host_refused(broker: Any, head: bytes) -> str | None:
    """Why a request's Host header is refused (the text of the 421), or None. A request
    without one (not a browser's) is answered."""
    host = None
    for line in head.split(b"\n")[1:]:
        field, _, value = line.partition(b":")
        if field.strip().lower() == b"host":
            host = value.strip().decode("latin-1")
            break
    if host is None:
        return None
    target = head[_target_at(head) :].split(b" ", 1)[0].split(b"?", 1)[0]
    if target in _PROBES:
        return None
    name = host.lower()
    if name.startswith("["):  # [v6]:port
        name = name[: name.find("]") + 1]
    else:
        name = name.rpartition(":")[0] if ":" in name else name
    name = name.rstrip(".")
    configured = (broker.config["admin.allowed.hosts"] or "").lower()
    allowed = {n.strip().rstrip(".") for n in configured.split(",") if n.strip()}
    if "*" in allowed:
        return None
    own = (broker.config["admin.host"] or "").lower()
    allowed.update(_LOOPBACK_NAMES)
    allowed.add(f"[{own}]" if ":" in own else own)
    if name in allowed:
        return None
    return (
        f"Host {host!r} is not a name of this admin endpoint ({', '.join(sorted(allowed))}); "
        "admin.allowed.hosts adds others\n"
    )


async def _cancel_when_gone(stream: trio.SocketStream, scope: trio.CancelScope) -> None:
    """Cancel `scope` when the client closes the connection (it sends nothing more after
    its request: a close, or a reset, is the only thing there is to receive)."""
    try:
        data = await stream.receive_some(1)
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        data = b""
    if not data:
        scope.cancel()


async def _receive_head(stream: trio.SocketStream) -> tuple[bytes | None, bytes]:
    """The request head up to the blank line (b"" if the peer closed; None if too large),
    and what came after it (the start of a body)."""
    buf = bytearray()
    while b"\r\n\r\n" not in buf and b"\n\n" not in buf:
        if len(buf) > MAX_REQUEST_BYTES:
            return None, b""
        data = await stream.receive_some(MAX_REQUEST_BYTES + 1)
        if not data:
            return bytes(buf), b""
        buf += data
    crlf = b"\r\n\r\n" in buf
    end = buf.find(b"\r\n\r\n") if crlf else buf.find(b"\n\n")
    if end > MAX_REQUEST_BYTES:
        return None, b""
    return bytes(buf[:end]), bytes(buf[end + (4 if crlf else 2) :])


def _target_at(head: bytes) -> int:
    """Where the request target starts in the head (after the method and a space)."""
    return head.find(b" ") + 1


async def _receive_body(stream: trio.SocketStream, head: bytes, rest: bytes) -> bytes | int:
    """A control request's body (by Content-Length), or the status refusing it."""
    length = 0
    for line in head.split(b"\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                return 400
        elif name.strip().lower() == b"transfer-encoding":
            return 411  # chunked bodies are not taken
    if length < 0:
        return 400
    if length > MAX_BODY_BYTES:
        return 413
    body = bytearray(rest[:length])
    while len(body) < length:
        data = await stream.receive_some(length - len(body))
        if not data:
            return 400
        body += data
    return bytes(body)


async def _control(
    broker: Any, head: bytes, body: bytes | int
) -> tuple[str, int, list[tuple[str, str]], bytes]:
    """A /v1 control request (broker.controls.api): JSON in, JSON out."""
    import json

    from broker.console import api as console
    from broker.controls.api import PATHS, handle

    parts = head.split(b"\n", 1)[0].rstrip(b"\r").split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return ("GET", *_plain(400, "bad request\n"))
    try:
        method, target = parts[0].decode("ascii"), parts[1].decode("ascii")
    except UnicodeDecodeError:
        return ("GET", *_plain(400, "bad request\n"))
    path, _, query = target.partition("?")
    allowed = PATHS.get(path) or console.methods(path)
    if allowed is None:
        status, obj = 404, {"error": f"no such control: {path}"}
    elif method not in allowed:
        status, obj = 405, {"error": f"{path} takes {', '.join(allowed)}"}
    elif isinstance(body, int):
        status, obj = body, {"error": _REASONS[body].lower()}
    elif path in PATHS:
        status, obj = await handle(broker, method, path, query, body)
    elif console.origin_refused(head, method):
        status, obj = 403, {"error": "a request from another origin may not change anything"}
    else:
        status, obj = await console.handle(broker, method, path, query, body)
    headers = [("Content-Type", "application/json")]
    if status == 405:
        headers.append(("Allow", ", ".join(allowed or ())))
    return method, status, headers, (json.dumps(obj) + "\n").encode()


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
        return _console_page(method, path)
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


def _console_page(method: str, path: str) -> tuple[str, int, list[tuple[str, str]], bytes]:
    from broker.console import static_file

    found = static_file(path)
    if found is None:
        return (method, *_plain(404, "not found\n"))
    if method not in ("GET", "HEAD"):
        status, headers, body = _plain(405, "method not allowed\n")
        return (method, status, [*headers, ("Allow", "GET, HEAD")], body)
    content_type, body = found
    headers = [
        ("Content-Type", content_type),
        ("Cache-Control", "no-cache"),
        ("X-Content-Type-Options", "nosniff"),
        ("Content-Security-Policy", "default-src 'self'; img-src 'self' data:"),
    ]
    return (method, 200, headers, body)


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
