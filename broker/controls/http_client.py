"""A client of the /v1 controls (broker.controls.api), for the pytest fixture and the CLI.

Blocking, on urllib: the fixture's methods are called from a test's own thread, and the
`kmock faults|clock|journal|connections` commands from a shell.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlencode

__all__ = ["ControlRefused", "call"]


class ControlRefused(ValueError):
    """The broker refused a control (HTTP 4xx): `status`, and `field` when it named one."""

    def __init__(self, status: int, message: str, field: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.field = field


def call(
    address: str,
    method: str,
    path: str,
    body: Any = None,
    *,
    query: dict[str, Any] | None = None,
    timeout_s: float = 60.0,
) -> Any:
    """`method path` on the admin endpoint at `address` ("host:port"); the JSON answer.

    Raises:
      ControlRefused: the broker answered 4xx (bad input; nothing changed).
      OSError: the broker could not be reached (urllib.error.URLError is one).
    """
    params = {k: v for k, v in (query or {}).items() if v is not None}
    url = f"http://{address}{path}" + (f"?{urlencode(params)}" if params else "")
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    if data is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as e:
        text = e.read().decode("utf-8", "replace")
        try:
            answer = json.loads(text)
        except ValueError:
            answer = {"error": text.strip() or e.reason}
        raise ControlRefused(
            e.code, answer.get("error", str(e.reason)), answer.get("field")
        ) from None
