"""Input of the console's JSON API: the one error it answers with, query parameters, JSON
bodies, timestamps; and who the console is when it calls the coordinator runtime.

A leaf module: the route table (broker.console.api) and the handlers (topics, groups,
timeline) import it, never the other way round.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any
from urllib.parse import parse_qs

__all__ = [
    "Caller",
    "ConsoleError",
    "check_params",
    "int_param",
    "json_body",
    "json_int",
    "page",
    "parse_query",
    "ready_coordinator",
    "timestamp_ms",
]


class ConsoleError(Exception):
    """Input the console API refuses: answered `status` with the message, nothing changed."""

    def __init__(
        self, status: int, field: str, message: str, error_code: str | None = None
    ) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.status = status
        self.field = field
        self.error_code = error_code


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
