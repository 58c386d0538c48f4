"""What the request path keeps rather than makes again: the one way such a cache is bounded.

A kept value is found with `cache.get(key)` at the call site (the path of nearly every
request, without a call) and stored with `keep` when it was missing. A cache full at its
limit is emptied, not trimmed: what is in use is made again at its next use, which costs
one miss per key, and no order is tracked on the hits. Used for the keys and batch
templates of commits (coordinator.records, broker.coordinator_batch), the answers of
one-partition commits (coordinator.offsets) and their encodings (broker.handlers.
offset_commit), Metadata's answers (broker.handlers.metadata), repeated request bodies
(protocol.schema) and the coordinator's request contexts (broker.runtime). The encoders'
tables (protocol.codegen's `_Memo`) are bounded the same way, their seed put back.
"""

from __future__ import annotations

from typing import TypeVar

__all__ = ["keep"]

K = TypeVar("K")
V = TypeVar("V")


def keep(cache: dict[K, V], key: K, value: V, limit: int) -> V:
    """Store `value` under `key` in `cache`, first emptied if it holds `limit` entries;
    returns `value`."""
    if len(cache) >= limit:
        cache.clear()
    cache[key] = value
    return value
