"""The key fields of a request or response, as plain JSON-able values.

One generic walk over any message (every message declares its fields once, `_wire_fields`),
keeping only a fixed list of scalar fields by their Kafka names (group_id, member_id,
generation_id, committed_offset, base_offset, error_code, ...) and the topic/partition
structure around them. Whatever is not on that list is never copied out: record bytes,
member metadata and assignments, and every config `value` (where Kafka's sensitive configs,
passwords and JAAS settings, travel) stay behind. The journal shows these summaries and the
fault table matches its filters (topic, partition, group_id) against them.

    {"group_id": "g", "generation_id_or_member_epoch": 3, "member_id": "m-1",
     "topics": [{"topic": "orders", "partitions": [{"partition": 0, "committed_offset": 42}]}]}
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

from protocol.schema import Struct

__all__ = ["error_codes", "group_ids", "summarise", "topic_partitions"]

# Scalars worth showing, by Kafka's field names. Nothing else is copied out.
KEY_FIELDS = frozenset(
    {
        "acks",
        "allow_auto_topic_creation",
        "base_offset",
        "committed_leader_epoch",
        "committed_offset",
        "count",
        "current_leader_epoch",
        "error_code",
        "error_message",
        "fetch_offset",
        "generation_id",
        "generation_id_or_member_epoch",
        "group_id",
        "group_instance_id",
        "group_state",
        "high_watermark",
        "isolation_level",
        "key",
        "key_type",
        "last_stable_offset",
        "leader",
        "leader_epoch",
        "log_start_offset",
        "max_wait_ms",
        "member_epoch",
        "member_id",
        "min_bytes",
        "num_partitions",
        "offset",
        "producer_epoch",
        "producer_id",
        "protocol_name",
        "protocol_type",
        "reason",  # LeaveGroup v5+, JoinGroup v8+: the client's own words (KIP-800)
        "rebalance_timeout_ms",
        "replication_factor",
        "retention_time_ms",
        "session_id",
        "session_timeout_ms",
        "timeout_ms",
        "timestamp",
        "transactional_id",
    }
)
_TOPIC_LISTS = frozenset({"topic_data", "topics", "responses"})
_PARTITION_LISTS = frozenset(
    {"partition_data", "partitions", "partition_responses", "partition_indexes"}
)
_TOPIC_NAMES = ("name", "topic")
_PARTITION_INDEXES = ("index", "partition_index", "partition")

Resolve = Callable[[uuid.UUID], str | None]  # a topic id -> its name (Fetch v13+)


def summarise(
    message: Any, resolve: Resolve | None = None, version: int | None = None
) -> dict[str, Any]:
    """The key fields of `message` (see the module docstring); with `version`, only the
    fields that version carries (not the defaults of the others: OffsetFetch v8 names its
    groups in a list, and its v0-7 `group_id` is then an empty default)."""
    return _struct(message, resolve, version, top=True)


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, int | str | bool)


def _struct(
    obj: Any, resolve: Resolve | None, version: int | None, *, top: bool = False
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, field in obj._wire_fields:
        if version is not None and not field.present_in(version):
            continue
        v = getattr(obj, name)
        if isinstance(v, list):
            if name == "coordinator_keys":  # FindCoordinator v4+: the groups (or ids) looked up
                out[name] = list(v)
            if not v or not isinstance(v[0], Struct):
                continue
            if top and name in _TOPIC_LISTS and _is_topic(v[0]):
                out["topics"] = [_topic(t, resolve, version) for t in v]
            else:
                items = [s for s in (_struct(x, resolve, version) for x in v) if s]
                if items:
                    out[name] = items
        elif name in KEY_FIELDS and _scalar(v):
            out[name] = v
        elif isinstance(v, Struct):
            inner = _struct(v, resolve, version)
            if inner:
                out[name] = inner
    return out


def _is_topic(item: Any) -> bool:
    fields = {n for n, _ in item._wire_fields}
    return bool(fields & {"name", "topic", "topic_id"})


def _topic(t: Any, resolve: Resolve | None, version: int | None) -> dict[str, Any]:
    present = {n for n, f in t._wire_fields if version is None or f.present_in(version)}
    name = next((getattr(t, n) for n in _TOPIC_NAMES if n in present), None)
    topic_id = getattr(t, "topic_id", None) if "topic_id" in present else None
    if not name and topic_id is not None:
        name = (resolve(topic_id) if resolve else None) or str(topic_id)
    out: dict[str, Any] = {"topic": name}
    for field, _ in t._wire_fields:
        if field not in present:
            continue
        v = getattr(t, field)
        if field in _PARTITION_LISTS and isinstance(v, list):
            out["partitions"] = [_partition(p, resolve, version) for p in v]
        elif field in KEY_FIELDS and _scalar(v):
            out[field] = v
    return out


def _partition(p: Any, resolve: Resolve | None, version: int | None) -> dict[str, Any]:
    if isinstance(p, int):
        return {"partition": p}
    index = next((getattr(p, n) for n in _PARTITION_INDEXES if hasattr(p, n)), None)
    return {"partition": index, **_struct(p, resolve, version)}


# --- reading summaries ------------------------------------------------------------------------


def _walk(summary: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(summary, dict):
        for k, v in summary.items():
            yield k, v
            yield from _walk(v)
    elif isinstance(summary, list):
        for item in summary:
            yield from _walk(item)


def error_codes(summary: dict[str, Any]) -> list[int]:
    """Every distinct error code in a (response) summary, sorted."""
    return sorted({v for k, v in _walk(summary) if k == "error_code" and isinstance(v, int)})


def group_ids(summary: dict[str, Any]) -> set[str]:
    """The groups a request names: group_id wherever it is, and FindCoordinator's keys."""
    out = {v for k, v in _walk(summary) if k == "group_id" and isinstance(v, str)}
    if summary.get("key_type", 0) == 0:  # FindCoordinator (key_type 0: a group)
        if isinstance(summary.get("key"), str):
            out.add(summary["key"])
        out.update(summary.get("coordinator_keys") or ())
    return out


def topic_partitions(summary: dict[str, Any]) -> Iterator[tuple[str, int | None]]:
    """(topic, partition) for every partition a summary names; (topic, None) for a topic
    named without partitions."""
    for t in summary.get("topics") or ():
        parts = t.get("partitions")
        if not parts:
            yield t["topic"], None
        for p in parts or ():
            yield t["topic"], p.get("partition")
