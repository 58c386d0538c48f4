"""Records written as text: what `kmock produce` reads (stdin or `--file`) and what the pytest
fixture's seed helpers take.

Three formats, one record per line (a line ends at "\\n" or "\\r\\n"):

  lines   the line is the value (kafka-console-producer without parse.key).
  keyed   KEY<sep>VALUE, split at the first separator (kafka-console-producer's
          parse.key=true and key.separator, whose default is a tab). A line without the
          separator is an error, as in Kafka's LineMessageReader.
  jsonl   one JSON object per line; blank lines are skipped. Fields, all optional:

    topic       the record's topic (else the one the command or helper names)
    partition   int >= 0 (else Kafka's default partitioner: by key, or sticky)
    timestamp   CreateTime in ms since the epoch, or an ISO 8601 date and time (UTC unless
                it carries an offset, as kafka-consumer-groups reads --to-datetime);
                else the time it is produced
    key         text (UTF-8) or null
    key_b64     the key's bytes in base64 (instead of `key`)
    value       text (UTF-8), or null (a tombstone); any other JSON value (an object, an
                array, a number, true/false) is stored as its compact JSON text
    value_b64   the value's bytes in base64 (instead of `value`)
    headers     {"name": "text", ...} or [["name", "text"], ...] (a list keeps order and
                repeated names); a header value may be null
    headers_b64 the same shapes, with each value's bytes in base64 (instead of `headers`)
    offset      ignored, so that `kmock consume --output json` output can be produced again

  Any other field is an error (a typo must not turn into a record without its value).

Every problem is a `RecordFileError` naming where it is ("records.jsonl line 3: ...").
Pure and synchronous: no I/O beyond the iterables it is given.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "DEFAULT_KEY_SEPARATOR",
    "FORMATS",
    "FileRecord",
    "RecordFileError",
    "parse_datetime_ms",
    "read_records",
    "record_from_mapping",
]

FORMATS = ("jsonl", "lines", "keyed")
DEFAULT_KEY_SEPARATOR = "\t"  # kafka-console-producer's key.separator

_FIELDS = (
    "topic",
    "partition",
    "timestamp",
    "key",
    "key_b64",
    "value",
    "value_b64",
    "headers",
    "headers_b64",
    "offset",
)


class RecordFileError(ValueError):
    """A record that cannot be read; the message names its source and line."""


@dataclass(frozen=True, slots=True)
class FileRecord:
    """One record to produce; None where the record leaves it to the producer."""

    topic: str | None
    partition: int | None
    timestamp_ms: int | None
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    line: int = 0  # where it was read (1-based), or its index in a list of records


def parse_datetime_ms(text: str) -> int:
    """ISO 8601 date and time -> ms since the epoch; UTC when it carries no offset.

    Kafka's Utils.getDateTime (kafka-consumer-groups --to-datetime) appends "Z" to a time
    without a zone, so a naive time is UTC there and here.

    Raises:
      ValueError: not an ISO 8601 date and time.
    """
    try:
        when = dt.datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO 8601 date and time (e.g. 2025-01-31T12:00:00, "
            f"2025-01-31T12:00:00.000+01:00)"
        ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=dt.UTC)
    return int(when.timestamp() * 1000)


def _bytes_field(obj: Mapping[str, Any], name: str, *, allow_bytes: bool) -> bytes | None:
    b64 = f"{name}_b64"
    if name in obj and b64 in obj:
        raise ValueError(f"both {name!r} and {b64!r}")
    if b64 in obj:
        return _b64(obj[b64], b64)
    value = obj.get(name)
    if value is None:
        return None
    if isinstance(value, str):
        return value.encode("utf-8")
    if allow_bytes and isinstance(value, bytes | bytearray):
        return bytes(value)
    if name == "key":
        raise ValueError(f"'key' must be text or null (or use 'key_b64'), not {_kind(value)}")
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def _b64(value: Any, what: str) -> bytes | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{what!r} must be a base64 string, not {_kind(value)}")
    try:
        return base64.b64decode(value, validate=True)
    except binascii.Error:
        raise ValueError(f"{what!r} is not valid base64") from None


def _headers(obj: Mapping[str, Any], *, allow_bytes: bool) -> tuple[tuple[str, bytes | None], ...]:
    if "headers" in obj and "headers_b64" in obj:
        raise ValueError("both 'headers' and 'headers_b64'")
    what = "headers_b64" if "headers_b64" in obj else "headers"
    raw = obj.get(what)
    if raw is None:
        return ()
    if isinstance(raw, Mapping):
        pairs = list(raw.items())
    elif isinstance(raw, list):
        pairs = []
        for item in raw:
            if not (isinstance(item, list | tuple) and len(item) == 2):
                raise ValueError(f"{what!r}: each header is a [name, value] pair, not {item!r}")
            pairs.append((item[0], item[1]))
    else:
        raise ValueError(f"{what!r} must be an object or a list of [name, value] pairs")
    out = []
    for name, value in pairs:
        if not isinstance(name, str):
            raise ValueError(f"{what!r}: header name {name!r} is not text")
        if what == "headers_b64":
            out.append((name, _b64(value, f"{what}.{name}")))
        elif value is None or isinstance(value, str):
            out.append((name, None if value is None else value.encode("utf-8")))
        elif allow_bytes and isinstance(value, bytes | bytearray):
            out.append((name, bytes(value)))
        else:
            raise ValueError(
                f"{what!r}: the value of header {name!r} must be text or null "
                f"(or use 'headers_b64'), not {_kind(value)}"
            )
    return tuple(out)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "a list", bool: "true/false"}.get(
        type(value), type(value).__name__
    )


def record_from_mapping(obj: Any, *, line: int = 0, allow_bytes: bool = False) -> FileRecord:
    """A record from a JSON object (a jsonl line) or, with `allow_bytes`, a Python mapping
    whose key, value and header values may also be bytes.

    Raises:
      ValueError: the object does not describe a record; the message names the field.
    """
    if not isinstance(obj, Mapping):
        raise ValueError(f"expected a JSON object, got {_kind(obj)}")
    unknown = [k for k in obj if k not in _FIELDS]
    if unknown:
        raise ValueError(f"unknown field {unknown[0]!r} (fields: {', '.join(_FIELDS)})")
    topic = obj.get("topic")
    if topic is not None and (not isinstance(topic, str) or not topic):
        raise ValueError(f"'topic' must be a topic name, not {topic!r}")
    partition = obj.get("partition")
    if partition is not None and (
        isinstance(partition, bool) or not isinstance(partition, int) or partition < 0
    ):
        raise ValueError(f"'partition' must be an integer >= 0, not {partition!r}")
    timestamp = obj.get("timestamp")
    if isinstance(timestamp, str):
        try:
            timestamp = parse_datetime_ms(timestamp)
        except ValueError as e:
            raise ValueError(f"'timestamp': {e}") from None
    elif timestamp is not None and (
        isinstance(timestamp, bool) or not isinstance(timestamp, int) or timestamp < 0
    ):
        raise ValueError(
            f"'timestamp' must be ms since the epoch (>= 0) or an ISO 8601 time, not {timestamp!r}"
        )
    return FileRecord(
        topic=topic,
        partition=partition,
        timestamp_ms=timestamp,
        key=_bytes_field(obj, "key", allow_bytes=allow_bytes),
        value=_bytes_field(obj, "value", allow_bytes=allow_bytes),
        headers=_headers(obj, allow_bytes=allow_bytes),
        line=line,
    )


def read_records(
    lines: Iterable[bytes | str],
    fmt: str,
    source: str,
    *,
    key_separator: str = DEFAULT_KEY_SEPARATOR,
) -> Iterator[FileRecord]:
    """The records of `lines` (as read from a binary or a text file) in format `fmt`.

    `lines` and `keyed` keep a line's bytes as they are; `jsonl` lines must be UTF-8.

    Raises:
      RecordFileError: at the first line that is not a record, naming `source` and the line.
    """
    if fmt not in FORMATS:
        raise ValueError(f"unknown format {fmt!r} (one of {', '.join(FORMATS)})")
    if fmt == "keyed" and not key_separator:
        raise ValueError("the key separator is empty")
    sep = key_separator.encode("utf-8")
    for lineno, raw in enumerate(lines, 1):
        data = raw.encode("utf-8") if isinstance(raw, str) else raw
        if data.endswith(b"\n"):
            data = data[:-1]
        if data.endswith(b"\r"):
            data = data[:-1]
        if fmt == "lines":
            yield FileRecord(None, None, None, None, data, (), lineno)
        elif fmt == "keyed":
            key, found, value = data.partition(sep)
            if not found:
                raise RecordFileError(f"{source} line {lineno}: no key separator {key_separator!r}")
            yield FileRecord(None, None, None, key, value, (), lineno)
        elif data.strip():
            try:
                obj = json.loads(data.decode("utf-8"))
            except UnicodeDecodeError:
                raise RecordFileError(f"{source} line {lineno}: not UTF-8") from None
            except json.JSONDecodeError as e:
                raise RecordFileError(f"{source} line {lineno}: not JSON ({e.msg})") from None
            try:
                record = record_from_mapping(obj, line=lineno)
            except ValueError as e:
                raise RecordFileError(f"{source} line {lineno}: {e}") from None
            yield record
