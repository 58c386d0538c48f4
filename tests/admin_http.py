"""One request to a running broker's admin endpoint (`admin.port`), for the tests of the
controls, the cluster routes and the console's API."""

from __future__ import annotations

import json
from typing import Any

import trio


async def http(
    broker: Any,
    method: str,
    path: str,
    body: Any = None,
    *,
    raw: bytes | None = None,
    headers: str = "",
    host: str | None = None,
) -> tuple[int, Any]:
    """(status, JSON answer, or the body as text when not JSON) of one admin request: `body`
    sent as JSON, or `raw` as it is; `host` as its Host header (the address it is sent to by
    default); `headers` added as they are (CRLF-terminated lines)."""
    address, port = broker.admin_address
    data = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
    stream = await trio.open_tcp_stream(address, port)
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: {host or f'{address}:{port}'}\r\n{headers}"
        f"Content-Length: {len(data)}\r\n\r\n"
    )
    await stream.send_all(head.encode() + data)
    answer = bytearray()
    while chunk := await stream.receive_some():
        answer += chunk
    await stream.aclose()
    head_bytes, _, payload = bytes(answer).partition(b"\r\n\r\n")
    status = int(head_bytes.split()[1])
    try:
        return status, json.loads(payload)
    except ValueError:
        return status, payload.decode()
