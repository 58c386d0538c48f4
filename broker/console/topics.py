"""The console's brokers, topics and message browser (/v1/brokers, /v1/topics...).

Topics are created and deleted by the CreateTopics and DeleteTopics handlers themselves
(a request built here, answered as a client's would be), so the checks, messages and error
codes are Kafka's: a refused topic is 400 with `error_code` its Kafka name, an unknown one
404.

Messages are read as a read_uncommitted consumer sees them (Kafka's default isolation):
every record up to the high watermark, records of aborted transactions included (marked
`"transactional": true`), control batches (commit/abort markers) left out. Each request
reads whole batches, at most MAX_READ_BYTES per slice and MAX_SLICES slices, and reads and
decodes them in a worker thread; `next_offset` says where the next page starts. With
`wait_ms`, a read at the log end waits (at most MAX_WAIT_MS, real time) for the next
append to the partition, as a Fetch long-poll does: the console's "follow live".
"""

from __future__ import annotations

import contextlib
import json
import uuid
from typing import Any

import trio

from broker.console.params import (
    ConsoleError,
    check_params,
    int_param,
    json_body,
    json_int,
    page,
    timestamp_ms,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.records import decode_records, iter_batches

__all__ = ["brokers", "create_topic", "delete_topic", "describe_topic", "list_topics", "messages"]

MAX_READ_BYTES = 1 << 20  # one slice of a log read for the message browser
MAX_SLICES = 8
MAX_MESSAGES = 500  # the largest `limit` of one page of messages
MAX_WAIT_MS = 60_000
MAX_SHOWN_BYTES = 16_384  # of a key, value or header value; longer ones are cut, and say so
_ZERO_UUID = uuid.UUID(int=0)


async def brokers(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    check_params(params, set())
    listeners = []
    for e in broker.listener_setup.listeners:
        advertised = broker.advertised_by_listener.get(e.listener)
        listeners.append(
            {
                "name": e.listener,
                "security_protocol": e.security_protocol,
                "bound": str(e) if e.port else f"{e}->{broker.bound_ports.get(e.listener)}",
                "advertised": None if advertised is None else f"{advertised[0]}:{advertised[1]}",
            }
        )
    return {
        "cluster_id": broker.cluster_id,
        "controller_id": broker.node_id,
        "brokers": [
            {
                "node_id": broker.node_id,
                "host": broker.advertised[0][0] if broker.advertised else None,
                "port": broker.advertised[0][1] if broker.advertised else None,
                "listeners": listeners,
                "log_dirs": [str(broker.data_dir)],
                "ready": broker.ready.is_set(),
            }
        ],
    }


def _topic(broker: Any, name: str) -> Any:
    topic = broker.topics.get(name)
    if topic is None:
        raise ConsoleError(
            404, "topic", f"topic {name!r} does not exist", "UNKNOWN_TOPIC_OR_PARTITION"
        )
    return topic


def _summary(topic: Any) -> dict[str, Any]:
    logs = [p.log for p in topic.partitions]
    return {
        "name": topic.name,
        "topic_id": str(topic.topic_id),
        "internal": topic.is_internal,
        "partitions": len(logs),
        "messages": sum(max(0, log.high_watermark - log.log_start_offset) for log in logs),
        "size_bytes": sum(log.size_bytes for log in logs),
    }


async def list_topics(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    check_params(params, {"filter", "offset", "limit", "internal"})
    needle = params.get("filter", "").lower()
    internal = params.get("internal", "true").lower()
    if internal not in ("true", "false"):
        raise ConsoleError(400, "internal", f"expected true or false, not {internal!r}")
    names = sorted(
        name
        for name, t in broker.topics.topics.items()
        if needle in name.lower() and (internal == "true" or not t.is_internal)
    )
    window = page(params)
    return {
        "total": len(names),
        "offset": window.start,
        "topics": [
            {
                **_summary(t),
                # [log start, high watermark] of each partition, in partition order
                "partition_offsets": [
                    [p.log.log_start_offset, p.log.high_watermark] for p in t.partitions
                ],
            }
            for t in (broker.topics.topics[n] for n in names[window])
        ],
    }


async def describe_topic(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    from broker.config import TOPIC_CONFIGS
    from broker.topic_configs import ConfigSource, effective_topic_source, topic_value

    check_params(params, set())
    topic = _topic(broker, args[0])
    config = broker.config
    return {
        **_summary(topic),
        "partition_list": [
            {
                "partition": p.index,
                "leader": broker.node_id,
                "leader_epoch": p.leader_epoch,
                "log_start_offset": p.log.log_start_offset,
                "high_watermark": p.log.high_watermark,
                "messages": max(0, p.log.high_watermark - p.log.log_start_offset),
                "size_bytes": p.log.size_bytes,
                "segments": len(p.log.segments),
            }
            for p in topic.partitions
        ],
        "configs": [
            {
                "name": name,
                "value": topic_value(config, topic.configs, name),
                "source": ConfigSource(effective_topic_source(config, topic.configs, name)).name,
            }
            for name in sorted(TOPIC_CONFIGS)
        ],
    }


def _context(broker: Any, api_version: int) -> Any:
    from broker import routes
    from broker.context import RequestContext

    listener = broker.listener_setup.listeners[0].listener
    return RequestContext(broker, api_version, "kmock-console", "127.0.0.1", 0, routes, listener)


async def create_topic(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    from broker.handlers import create_topics
    from protocol.messages.create_topics import (
        CreatableTopic,
        CreatableTopicConfig,
        CreateTopicsRequest,
    )

    check_params(params, set())
    spec = json_body(body, {"name", "partitions", "replication_factor", "configs"})
    name = spec.get("name")
    if not isinstance(name, str) or not name:
        raise ConsoleError(400, "name", f"expected a topic name, not {name!r}")
    partitions = json_int(spec, "partitions", -1, minimum=-1)
    replication = json_int(spec, "replication_factor", -1, minimum=-1)
    configs = spec.get("configs", {})
    if not isinstance(configs, dict) or not all(
        isinstance(v, str | int | float) and not isinstance(v, bool) for v in configs.values()
    ):
        raise ConsoleError(400, "configs", 'expected {"name": "value", ...}')
    request = CreateTopicsRequest(
        topics=[
            CreatableTopic(
                name=name,
                num_partitions=partitions,
                replication_factor=replication,
                assignments=[],
                configs=[CreatableTopicConfig(name=k, value=str(v)) for k, v in configs.items()],
            )
        ],
        timeout_ms=30_000,
        validate_only=False,
    )
    response = await create_topics.handle(_context(broker, 7), request)
    result = response.topics[0]
    if result.error_code != ErrorCode.NONE:
        code = ErrorCode(result.error_code)
        field = "configs" if code == ErrorCode.INVALID_CONFIG else "name"
        if code in (ErrorCode.INVALID_PARTITIONS, ErrorCode.INVALID_REPLICATION_FACTOR):
            field = "partitions" if code == ErrorCode.INVALID_PARTITIONS else "replication_factor"
        raise ConsoleError(400, field, result.error_message or code.name, code.name)
    return {"created": _summary(_topic(broker, name))}


async def delete_topic(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    from broker.handlers import delete_topics
    from protocol.messages.delete_topics import DeleteTopicsRequest, DeleteTopicState

    check_params(params, set())
    name = args[0]
    request = DeleteTopicsRequest(
        topics=[DeleteTopicState(name=name, topic_id=_ZERO_UUID)], timeout_ms=30_000
    )
    try:
        response = await delete_topics.handle(_context(broker, 6), request)
    except KafkaError as e:  # delete.topic.enable=false refuses the whole request
        raise ConsoleError(400, "topic", e.detail or e.code.name, e.code.name) from None
    result = response.responses[0]
    if result.error_code != ErrorCode.NONE:
        code = ErrorCode(result.error_code)
        status = 404 if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION else 400
        raise ConsoleError(status, "topic", f"{name}: {result.error_message}", code.name)
    return {"deleted": name, "topic_id": str(result.topic_id)}


# --- the message browser ------------------------------------------------------------------


async def messages(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    check_params(params, {"partition", "offset", "timestamp", "limit", "wait_ms"})
    topic = _topic(broker, args[0])
    index = int_param(params, "partition", 0)
    assert index is not None
    if index >= len(topic.partitions):
        raise ConsoleError(
            404,
            "partition",
            f"topic {topic.name!r} has no partition {index} (it has {len(topic.partitions)})",
            "UNKNOWN_TOPIC_OR_PARTITION",
        )
    if params.get("offset", "").strip() and params.get("timestamp", "").strip():
        raise ConsoleError(400, "timestamp", "give an offset or a timestamp, not both")
    offset = int_param(params, "offset", None)
    when = params.get("timestamp", "").strip()
    limit = min(int_param(params, "limit", 50, minimum=1) or 50, MAX_MESSAGES)
    wait_ms = min(int_param(params, "wait_ms", 0) or 0, MAX_WAIT_MS)
    partition = topic.partitions[index]
    plog = partition.log
    found_by_time = None
    try:
        if when:
            at = timestamp_ms(when, "timestamp")
            # ListOffsets by timestamp: the first record at or after it, else the log end.
            found = plog.offset_for_timestamp(at)
            offset = found[0] if found is not None else plog.high_watermark
            found_by_time = offset
        elif offset is None:
            offset = plog.log_start_offset
        if not plog.log_start_offset <= offset <= plog.high_watermark:
            raise ConsoleError(
                400,
                "offset",
                f"offset {offset} is outside partition {index} of {topic.name!r}: "
                f"[{plog.log_start_offset}, {plog.high_watermark}]",
                "OFFSET_OUT_OF_RANGE",
            )
        if offset == plog.high_watermark and wait_ms:
            event = trio.Event()
            partition.waiters.add(event)
            try:
                with trio.move_on_after(wait_ms / 1000):
                    await event.wait()
            finally:  # also when the client goes away (broker.admin_http)
                partition.waiters.discard(event)
            if broker.topics.get(topic.name) is not topic:
                raise ConsoleError(404, "topic", f"topic {topic.name!r} was deleted")
        records, next_offset = await _read(plog, offset, limit)
    except KafkaError as e:
        raise ConsoleError(400, "offset", e.detail or e.code.name, e.code.name) from None
    return {
        "topic": topic.name,
        "partition": index,
        "isolation_level": "read_uncommitted",
        "log_start_offset": plog.log_start_offset,
        "high_watermark": plog.high_watermark,
        "offset_for_timestamp": found_by_time,
        "next_offset": next_offset,
        "messages": records,
    }


async def _read(plog: Any, offset: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """Up to `limit` records from `offset`, and the offset after the last one read."""
    records: list[dict[str, Any]] = []
    position = offset
    for _ in range(MAX_SLICES):
        end = plog.high_watermark
        if len(records) >= limit or position >= end:
            break
        found = plog.read(position, MAX_READ_BYTES, max_offset=end)
        if found.size == 0:
            break
        more, after = await trio.to_thread.run_sync(
            _decode_slice, found, position, limit - len(records)
        )
        records += more
        if after <= position:
            break
        position = after
    return records, position


def _decode_slice(found: Any, position: int, limit: int) -> tuple[list[dict[str, Any]], int]:
    """(records at or after `position`, at most `limit`; the offset to read next), from
    one slice of whole batches. Runs in a worker thread: the slice holds its file open."""
    data = found.read_bytes()
    out: list[dict[str, Any]] = []
    for pos, header in iter_batches(data):
        if not header.is_control:
            for r in decode_records(memoryview(data)[pos : pos + header.size]):
                if r.offset < position:
                    continue
                if len(out) >= limit:
                    return out, r.offset
                out.append(
                    {
                        "offset": r.offset,
                        "timestamp": r.timestamp,
                        "timestamp_type": "LogAppendTime"
                        if header.timestamp_type
                        else "CreateTime",
                        "transactional": header.is_transactional,
                        "key": shown(r.key),
                        "value": shown(r.value),
                        "headers": [{"key": k, "value": shown(v)} for k, v in r.headers],
                    }
                )
        position = max(position, header.next_offset)
    return out, position


def shown(data: bytes | None) -> dict[str, Any] | None:
    """A key, value or header value as the console shows it: {"encoding": "json" (a JSON
    object or array, parsed), "utf-8" (text) or "hex", "data", "size"}; null stays null."""
    if data is None:
        return None
    size = len(data)
    cut = data[:MAX_SHOWN_BYTES]
    out: dict[str, Any] = {"size": size}
    if size > MAX_SHOWN_BYTES:
        out["truncated"] = True
    try:
        text = bytes(cut).decode("utf-8")
    except UnicodeDecodeError:
        if size > MAX_SHOWN_BYTES:  # maybe a character cut in two: drop up to 3 bytes
            for n in (1, 2, 3):
                try:
                    text = bytes(cut[:-n]).decode("utf-8")
                    break
                except UnicodeDecodeError:
                    continue
            else:
                return {**out, "encoding": "hex", "data": bytes(cut).hex()}
        else:
            return {**out, "encoding": "hex", "data": bytes(cut).hex()}
    if any(ord(c) < 32 and c not in "\t\n\r" for c in text):
        return {**out, "encoding": "hex", "data": bytes(cut).hex()}
    if size <= MAX_SHOWN_BYTES and text[:1] in ("{", "["):
        # Not JSON after all: shown as UTF-8 text below.
        with contextlib.suppress(ValueError):
            return {**out, "encoding": "json", "data": json.loads(text, parse_constant=_nan)}
    return {**out, "encoding": "utf-8", "data": text}


def _nan(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")
