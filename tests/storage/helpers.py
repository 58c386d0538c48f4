"""Helpers for storage tests: batches built with protocol.records, records read back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from protocol.records import build_batch, decode_records
from storage import Log

T0 = 1_700_000_000_000  # a wall-clock time in ms, for record timestamps and wall_ms
SEGMENT_0 = "00000000000000000000"  # the first segment's file name, without its suffix


def make_batch(
    count: int = 1,
    *,
    keys: Sequence[bytes | None] | None = None,
    values: Sequence[bytes | None] | None = None,
    timestamp: int = T0,
    **kwargs: Any,
) -> bytes:
    """A v2 batch of `count` records with timestamps `timestamp`, `timestamp` + 1, ..."""
    if keys is None:
        keys = [b"key-%d" % i for i in range(count)]
    if values is None:
        values = [b"value-%d" % i for i in range(count)]
    items = [(k, v, (), timestamp + i) for i, (k, v) in enumerate(zip(keys, values, strict=True))]
    return build_batch(items, **kwargs)


def log_records(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    """(offset, key, value) of every record in the log, read segment by segment."""
    out = []
    for segment in log.segments:
        for position, header in segment.iter_batches():
            for r in decode_records(segment.read(position, header.size)):
                out.append((r.offset, r.key, r.value))
    return out
