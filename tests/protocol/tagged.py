"""Unknown tagged fields in a flexible message: Kafka skips them, and so must we."""

from __future__ import annotations

from typing import Any

from protocol.schema import Message, decode, encode

# Tag 7 is unknown to every message here; its two bytes are skipped.
_UNKNOWN_TAG = bytes([1, 7, 2]) + b"zz"


def assert_unknown_top_level_tag_is_skipped(msg: Message, version: int) -> None:
    """`msg` encoded at flexible `version`, with its empty top-level tag section (the last
    byte) replaced by one holding an unknown tag, decodes to `msg` again."""
    data = encode(msg, version)
    assert data[-1] == 0, "a message without tagged fields ends with an empty tag section"
    tagged = data[:-1] + _UNKNOWN_TAG
    decoded: Any = decode(type(msg), version, tagged)
    assert decoded == decode(type(msg), version, data)
