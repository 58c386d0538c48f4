"""Structured logging for `kmock serve`: stdlib `logging`, one line per event.

Text (the default), for people:

    2025-01-31T12:00:00.123Z INFO broker.connection connection 3 opened from 127.0.0.1
    2025-01-31T12:00:01.456Z INFO cli.serve stopping signal=SIGTERM

JSON (`--log-format json`), one object per line, for log shippers:

    {"ts": "2025-01-31T12:00:01.456Z", "level": "INFO", "logger": "cli.serve",
     "message": "stopping", "signal": "SIGTERM"}

Structured fields are whatever a call passes in `extra=` (`log.info("...", extra={"group_id":
g})`): they follow the message as `key=value` in text, and become keys in JSON. Levels: INFO
has one line per connection opened or closed and per rebalance; DEBUG adds one per request.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any, TextIO

__all__ = ["FORMATS", "LEVELS", "JsonFormatter", "TextFormatter", "setup_logging"]

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMATS = ("text", "json")

# Attributes every LogRecord has; anything else on a record came from `extra=`.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


def _timestamp(record: logging.LogRecord) -> str:
    t = time.gmtime(record.created)
    return time.strftime("%Y-%m-%dT%H:%M:%S", t) + f".{int(record.msecs):03d}Z"


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    return {k: v for k, v in vars(record).items() if k not in _STANDARD and not k.startswith("_")}


def _text_value(value: Any) -> str:
    s = str(value)
    if not s or any(c.isspace() or c in '"=' for c in s):
        import json  # here: a start logs no value that needs quoting

        return json.dumps(s)
    return s


class TextFormatter(logging.Formatter):
    """`ts level logger message key=value ...`, then the traceback, if any."""

    def format(self, record: logging.LogRecord) -> str:
        line = f"{_timestamp(record)} {record.levelname} {record.name} {record.getMessage()}"
        fields = " ".join(f"{k}={_text_value(v)}" for k, v in _extras(record).items())
        if fields:
            line += " " + fields
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        if record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


class JsonFormatter(logging.Formatter):
    """One JSON object per record; the traceback goes in `exc_info` as text."""

    def format(self, record: logging.LogRecord) -> str:
        out: dict[str, Any] = {
            "ts": _timestamp(record),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for k, v in _extras(record).items():
            out.setdefault(k, v)
        if record.exc_info:
            out["exc_info"] = self.formatException(record.exc_info)
        import json  # here, as in _text_value: only --log-format json needs it

        return json.dumps(out, default=str)


class _KmockHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """The handler `setup_logging` installs, so calling it again replaces it."""


def setup_logging(level: str = "INFO", fmt: str = "text", stream: TextIO | None = None) -> None:
    """Send every logger's records at `level` and above to `stream` (stderr) in `fmt`.

    Raises:
      ValueError: an unknown level or format.
    """
    level = level.upper()
    if level not in LEVELS:
        raise ValueError(f"unknown log level {level!r} (one of {', '.join(LEVELS)})")
    if fmt not in FORMATS:
        raise ValueError(f"unknown log format {fmt!r} (one of {', '.join(FORMATS)})")
    root = logging.getLogger()
    for h in [h for h in root.handlers if isinstance(h, _KmockHandler)]:
        root.removeHandler(h)
    handler = _KmockHandler(stream if stream is not None else sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    root.addHandler(handler)
    root.setLevel(level)
