"""The schema registry's HTTP endpoint (`kmock.schema.registry.port`): Confluent Schema
Registry's REST API over the pure core in `schemas/`, stored in the `_schemas` topic.

    GET    /                                        {}
    GET    /schemas/types                           ["JSON", "PROTOBUF", "AVRO"]
    GET    /schemas[?subjectPrefix=&deleted=&latestOnly=]
    GET    /schemas/ids/{id}[?subject=&format=]     {"schema", "schemaType"?, "references"?}
    GET    /schemas/ids/{id}/schema                 the schema text
    GET    /schemas/ids/{id}/subjects|versions
    GET    /subjects[?deleted=&subjectPrefix=]      POST /subjects/{s}  (lookup)
    GET    /subjects/{s}/versions                   POST /subjects/{s}/versions  (register)
    GET    /subjects/{s}/versions/{v}[/schema|/referencedby]
    DELETE /subjects/{s}[?permanent=true]           DELETE /subjects/{s}/versions/{v}[?permanent=]
    POST   /compatibility/subjects/{s}/versions[/{v}][?verbose=true]
    GET|PUT|DELETE /config[/{s}]     GET|PUT /mode[/{s}]   DELETE /mode/{s}
    GET    /contexts                                ["."]

Errors are Confluent's bodies, {"error_code": 40401, "message": "..."}, with its HTTP
statuses (schemas.errors): a body that is not JSON gets 400/400 "Unexpected character ..."
(Confluent's Jackson error), the wrong JSON shape 422, an invalid schema or an unknown type
42201; none of them changes anything.

Like broker/admin_http.py this is a small HTTP/1.1 server rather than a framework: one
request per connection (`Connection: close`), a head of at most MAX_HEAD_BYTES and a
body of at most MAX_BODY_BYTES read within REQUEST_TIMEOUT_S. Writes are serialized by one
lock: the core checks a write (in a worker thread, so schema parsing never blocks the event
loop), its records are appended to `_schemas` and applied, and the answer goes out once they
are in the log (fsynced, in kmock.durability=strict: broker.durability), as Confluent's
KafkaStore waits for its own write to come back from the log before it answers.

A PROTOBUF schema is answered as `.proto` text, or with `format=serialized` (Confluent's
query parameter) as a base64 FileDescriptorProto, however it was registered
(Registry.schema_text).
"""

from __future__ import annotations

import json
import logging
import re
import time
import urllib.parse
from collections.abc import Callable
from functools import partial
from typing import Any

import trio

from broker.log_replay import log_chunks
from protocol.errors import KafkaError
from protocol.records import build_batch, decode_records, validate_batch
from schemas import Registry, RegistryError, SchemaRecord, Write, decode_record
from schemas.registry import SchemaVersion, parse_version
from storage.layout import SCHEMAS_TOPIC

log = logging.getLogger("broker.schema_registry_http")

__all__ = ["SCHEMAS_TOPIC", "SchemaRegistry", "serve_schema_registry"]

MAX_HEAD_BYTES = 16384  # request line + headers; a larger head gets 431
MAX_BODY_BYTES = 16 * 1024 * 1024  # a larger body gets 413
REQUEST_TIMEOUT_S = 30.0  # to receive the request, and again to send the answer
SCHEMAS_READ_BYTES = 1 << 20  # the replay's reads: smaller chunks, each parsed in a thread
CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_REASONS = {
    200: "OK",
    400: "Bad Request",
    404: "Not Found",
    405: "Method Not Allowed",
    408: "Request Timeout",
    409: "Conflict",
    413: "Payload Too Large",
    422: "Unprocessable Entity",
    431: "Request Header Fields Too Large",
    500: "Internal Server Error",
}


class SchemaRegistry:
    """The registry as the broker runs it: the core, its `_schemas` log and the write lock."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        self.registry = Registry()
        self._lock = trio.Lock()

    def _partition(self) -> Any:
        topic = self.broker.topics.get(SCHEMAS_TOPIC)
        if topic is None:
            raise RegistryError.store_error(f"topic {SCHEMAS_TOPIC} does not exist")
        return topic.partitions[0]

    async def load(self) -> None:
        """Create `_schemas` if needed (compacted, one partition, as Confluent creates it)
        and replay it. Records that do not decode are logged and skipped."""
        started = time.monotonic()
        if self.broker.topics.get(SCHEMAS_TOPIC) is None:
            await self.broker.topics.create_in_thread(
                SCHEMAS_TOPIC, 1, {"cleanup.policy": "compact"}, now_wall_ms=self.broker.wall_ms()
            )
        plog = self._partition().log
        async for batches, first in log_chunks(plog, SCHEMAS_READ_BYTES):
            pending: list[SchemaRecord] = []
            for header, batch in batches:
                if header.is_control:
                    continue
                try:
                    validate_batch(batch)
                    records = decode_records(batch)
                except KafkaError as e:
                    log.warning(
                        "%s: skipped a batch at offset %d: %s", SCHEMAS_TOPIC, header.base_offset, e
                    )
                    continue
                for record in records:
                    if record.offset < first:
                        continue
                    try:
                        decoded = decode_record(record.key, record.value)
                    except (ValueError, KeyError, TypeError) as e:
                        log.warning("%s: skipped record %d: %s", SCHEMAS_TOPIC, record.offset, e)
                        continue
                    if decoded is not None:
                        pending.append(decoded)
            # Replay parses every schema: in a worker thread (nobody else touches the
            # registry before it serves).
            await trio.to_thread.run_sync(self._replay, pending)
        log.info(
            "replayed %d %s records (%d subjects) in %.0f ms",
            self.registry.replayed_records,
            SCHEMAS_TOPIC,
            len(self.registry.subjects),
            (time.monotonic() - started) * 1000,
        )

    def _replay(self, records: list[SchemaRecord]) -> None:
        for record in records:
            try:
                self.registry.replay(record)
            except (ValueError, KeyError, TypeError) as e:
                log.warning("%s: skipped a record of %s: %s", SCHEMAS_TOPIC, record.subject, e)

    async def read(self, fn: Callable[..., Any], *args: Any, **kw: Any) -> Any:
        """A read that parses schemas (lookup, compatibility): in a worker thread, under the
        lock so that no write changes the state meanwhile."""
        async with self._lock:
            return await trio.to_thread.run_sync(partial(fn, *args, **kw))

    async def write(self, fn: Callable[..., Write], *args: Any, **kw: Any) -> Any:
        """Check a write in a worker thread, append its records, apply them, answer."""
        async with self._lock:
            write = await trio.to_thread.run_sync(partial(fn, *args, **kw))
            if write.records:
                partition = self._partition()
                wall_ms = self.broker.wall_ms()
                batch = build_batch(
                    (r.key_bytes(), r.value_bytes(), (), wall_ms) for r in write.records
                )
                try:
                    partition.append(batch, wall_ms=wall_ms)
                except (KafkaError, OSError) as e:
                    raise RegistryError.store_error(str(e)) from e  # nothing was written
                # In the log now, so in the state too: a replay would apply it all the same.
                self.registry.apply(write)
                try:
                    await self.broker.durability.wait_durable(
                        partition.log, partition.log.log_end_offset
                    )
                except KafkaError as e:
                    raise RegistryError.store_error(str(e)) from e
            return write.body


async def serve_schema_registry(
    broker: Any, *, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Replay `_schemas`, then serve kmock.schema.registry.host:port until cancelled.

    Sets `broker.schema_registry_address` to the bound (host, port) and reports it through
    `task_status`.
    """
    service = SchemaRegistry(broker)
    await service.load()
    host = broker.config["kmock.schema.registry.host"]
    port = broker.config["kmock.schema.registry.port"]
    try:
        listeners = await trio.open_tcp_listeners(port, host=host or None)
    except OSError as e:
        raise OSError(
            e.errno, f"kmock.schema.registry.port {host}:{port}: {e.strerror or e}"
        ) from e
    sockname = listeners[0].socket.getsockname()
    broker.schema_registry_address = (sockname[0], sockname[1])
    log.info("schema registry on http://%s:%d", *broker.schema_registry_address)
    task_status.started(broker.schema_registry_address)
    await trio.serve_listeners(partial(_serve_one, service), listeners)


# --- HTTP ----------------------------------------------------------------------------------


class _HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


async def _serve_one(service: SchemaRegistry, stream: trio.SocketStream) -> None:
    try:
        status: int
        body: Any
        with trio.move_on_after(REQUEST_TIMEOUT_S) as receiving:
            try:
                request = await _receive_request(stream)
            except _HttpError as e:
                request = None
                status, body = e.status, {"error_code": e.status, "message": str(e)}
            else:
                if request is None:
                    return  # closed before sending anything: nothing to answer
        if receiving.cancelled_caught:
            request = None
            status, body = 408, {"error_code": 408, "message": "request timeout"}
        if request is not None:
            status, body = await _answer(service, *request)
        payload = body if isinstance(body, bytes) else json.dumps(body).encode()
        with trio.move_on_after(REQUEST_TIMEOUT_S):
            await stream.send_all(_response(status, payload))
    except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError):
        pass  # the client went away; a write it asked for is applied all the same
    except Exception:
        # As broker.server._accept: one connection never takes the broker down; a bug, so
        # say so loudly.
        log.exception("schema registry connection crashed")
    finally:
        with trio.CancelScope(shield=True):
            await stream.aclose()


async def _receive_request(stream: trio.SocketStream) -> tuple[str, str, bytes] | None:
    """(method, target, body); None when the peer closed before sending a request."""
    buf = bytearray()
    while b"\r\n\r\n" not in buf:
        if len(buf) > MAX_HEAD_BYTES:
            raise _HttpError(431, "request head too large")
        data = await stream.receive_some(65536)
        if not data:
            if not buf:
                return None
            raise _HttpError(400, "incomplete request")
        buf += data
    end = buf.find(b"\r\n\r\n")
    if end > MAX_HEAD_BYTES:
        raise _HttpError(431, "request head too large")
    lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise _HttpError(400, "bad request line")
    headers = {}
    for line in lines[1:]:
        name, sep, value = line.partition(":")
        if not sep:
            raise _HttpError(400, "bad header line")
        headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        raise _HttpError(400, "chunked request bodies are not supported; send Content-Length")
    try:
        length = int(headers.get("content-length", "0"))
    except ValueError:
        raise _HttpError(400, "bad Content-Length") from None
    if length < 0:
        raise _HttpError(400, "bad Content-Length")
    if length > MAX_BODY_BYTES:
        raise _HttpError(413, f"request body over {MAX_BODY_BYTES} bytes")
    body = bytearray(buf[end + 4 :])
    while len(body) < length:
        data = await stream.receive_some(min(65536, length - len(body)))
        if not data:
            raise _HttpError(400, "request body cut short")
        body += data
    return parts[0], parts[1], bytes(body[:length])


def _response(status: int, payload: bytes) -> bytes:
    head = (
        f"HTTP/1.1 {status} {_REASONS.get(status, 'Error')}\r\n"
        f"Content-Type: {CONTENT_TYPE}\r\n"
        f"Content-Length: {len(payload)}\r\n"
        "Connection: close\r\n\r\n"
    )
    return head.encode("ascii") + payload


async def _answer(service: SchemaRegistry, method: str, target: str, raw: bytes) -> tuple[int, Any]:
    try:
        split = urllib.parse.urlsplit(target)
    except ValueError:
        return 400, {"error_code": 400, "message": "bad request target"}
    query = dict(urllib.parse.parse_qsl(split.query))
    segments = [urllib.parse.unquote(s) for s in split.path.strip("/").split("/") if s]
    allowed: set[str] = set()
    for methods, pattern, handler in ROUTES:
        args = _match(pattern, segments)
        if args is None:
            continue
        if method not in methods:
            allowed |= set(methods)
            continue
        try:
            body = _json_body(raw) if method in ("POST", "PUT") else None
            return 200, await handler(service, *args, query=query, body=body)
        except RegistryError as e:
            return e.http_status, e.body()
        except Exception:
            # A bug in a handler answers 500 (Confluent's 50001) instead of leaving the
            # client without an answer, and is logged at ERROR so tests notice.
            log.exception("schema registry: %s %s failed", method, target)
            return 500, RegistryError.store_error("internal error").body()
    if allowed:
        return 405, {"error_code": 405, "message": "HTTP 405 Method Not Allowed"}
    return 404, {"error_code": 404, "message": "HTTP 404 Not Found"}


def _match(pattern: tuple[str, ...], segments: list[str]) -> list[str] | None:
    if len(pattern) != len(segments):
        return None
    args = []
    for p, s in zip(pattern, segments, strict=True):
        if p == "*":
            args.append(s)
        elif p != s:
            return None
    return args


def _json_body(raw: bytes) -> Any:
    if not raw.strip():
        raise RegistryError.bad_request("Request body is empty")
    try:
        return json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise RegistryError.bad_request(f"Unexpected character in the request body: {e}") from e
    except RecursionError:
        raise RegistryError.bad_request("The request body is nested too deeply") from None


def _flag(query: dict[str, str], name: str) -> bool:
    return query.get(name, "false").lower() == "true"


def _schema_id(text: str) -> int:
    if not re.fullmatch(r"-?\d{1,10}", text):
        raise RegistryError.schema_not_found(f"Schema {text} not found")
    return int(text)


# --- handlers ------------------------------------------------------------------------------


async def _root(svc: SchemaRegistry, *, query: Any, body: Any) -> Any:
    return {}


async def _contexts(svc: SchemaRegistry, *, query: Any, body: Any) -> Any:
    return ["."]


async def _types(svc: SchemaRegistry, *, query: Any, body: Any) -> Any:
    return svc.registry.schema_types()


def _body(svc: SchemaRegistry, sv: SchemaVersion, query: dict[str, str]) -> dict[str, Any]:
    out = sv.body()
    out["schema"] = svc.registry.schema_text(sv, query.get("format"))
    return out


def _by_id_body(svc: SchemaRegistry, sv: SchemaVersion, query: dict[str, str]) -> dict[str, Any]:
    out = _body(svc, sv, query)
    for k in ("subject", "version", "id"):
        out.pop(k)
    return out


async def _schemas(svc: SchemaRegistry, *, query: Any, body: Any) -> Any:
    reg = svc.registry
    deleted = _flag(query, "deleted")
    out = []
    for subject in reg.list_subjects(deleted=deleted, prefix=query.get("subjectPrefix", "")):
        versions = reg.list_versions(subject, deleted=deleted)
        if _flag(query, "latestOnly"):
            versions = versions[-1:]
        out += [
            _body(svc, reg.get_version(subject, str(v), deleted=deleted), query) for v in versions
        ]
    return out


async def _schema_by_id(svc: SchemaRegistry, sid: str, *, query: Any, body: Any) -> Any:
    return _by_id_body(svc, svc.registry.get_by_id(_schema_id(sid), query.get("subject")), query)


async def _schema_text_by_id(svc: SchemaRegistry, sid: str, *, query: Any, body: Any) -> Any:
    sv = svc.registry.get_by_id(_schema_id(sid), query.get("subject"))
    return svc.registry.schema_text(sv, query.get("format")).encode()


async def _subjects_of_id(svc: SchemaRegistry, sid: str, *, query: Any, body: Any) -> Any:
    found = svc.registry.subject_versions_of_id(_schema_id(sid), deleted=_flag(query, "deleted"))
    return sorted({v.subject for v in found})


async def _versions_of_id(svc: SchemaRegistry, sid: str, *, query: Any, body: Any) -> Any:
    found = svc.registry.subject_versions_of_id(_schema_id(sid), deleted=_flag(query, "deleted"))
    return [{"subject": v.subject, "version": v.version} for v in found]


async def _subjects(svc: SchemaRegistry, *, query: Any, body: Any) -> Any:
    return svc.registry.list_subjects(
        deleted=_flag(query, "deleted"), prefix=query.get("subjectPrefix", "")
    )


async def _lookup(svc: SchemaRegistry, subject: str, *, query: Any, body: Any) -> Any:
    sv = await svc.read(svc.registry.lookup, subject, body, deleted=_flag(query, "deleted"))
    return sv.body()


async def _delete_subject(svc: SchemaRegistry, subject: str, *, query: Any, body: Any) -> Any:
    return await svc.write(
        svc.registry.delete_subject, subject, permanent=_flag(query, "permanent")
    )


async def _versions(svc: SchemaRegistry, subject: str, *, query: Any, body: Any) -> Any:
    return svc.registry.list_versions(subject, deleted=_flag(query, "deleted"))


async def _register(svc: SchemaRegistry, subject: str, *, query: Any, body: Any) -> Any:
    return await svc.write(svc.registry.register, subject, body)


async def _version(svc: SchemaRegistry, subject: str, v: str, *, query: Any, body: Any) -> Any:
    return _body(svc, svc.registry.get_version(subject, v, deleted=_flag(query, "deleted")), query)


async def _version_schema(
    svc: SchemaRegistry, subject: str, v: str, *, query: Any, body: Any
) -> Any:
    sv = svc.registry.get_version(subject, v, deleted=_flag(query, "deleted"))
    return svc.registry.schema_text(sv, query.get("format")).encode()


async def _referenced_by(
    svc: SchemaRegistry, subject: str, v: str, *, query: Any, body: Any
) -> Any:
    return svc.registry.referenced_by(subject, v)


async def _delete_version(
    svc: SchemaRegistry, subject: str, v: str, *, query: Any, body: Any
) -> Any:
    return await svc.write(
        svc.registry.delete_version, subject, v, permanent=_flag(query, "permanent")
    )


async def _compat(svc: SchemaRegistry, subject: str, *v: str, query: Any, body: Any) -> Any:
    version = v[0] if v else None
    if version is not None and version not in ("latest", "-1"):
        parse_version(version)
    result = await svc.read(svc.registry.check_compatibility, subject, version, body)
    if not _flag(query, "verbose"):
        result.pop("messages")
    return result


async def _get_config(svc: SchemaRegistry, *s: str, query: Any, body: Any) -> Any:
    return svc.registry.get_config(
        s[0] if s else None, default_to_global=_flag(query, "defaultToGlobal")
    )


async def _put_config(svc: SchemaRegistry, *s: str, query: Any, body: Any) -> Any:
    return await svc.write(svc.registry.set_config, s[0] if s else None, body)


async def _delete_config(svc: SchemaRegistry, *s: str, query: Any, body: Any) -> Any:
    return await svc.write(svc.registry.delete_config, s[0] if s else None)


async def _get_mode(svc: SchemaRegistry, *s: str, query: Any, body: Any) -> Any:
    return svc.registry.get_mode(
        s[0] if s else None, default_to_global=_flag(query, "defaultToGlobal")
    )


async def _put_mode(svc: SchemaRegistry, *s: str, query: Any, body: Any) -> Any:
    return await svc.write(
        svc.registry.set_mode, s[0] if s else None, body, force=_flag(query, "force")
    )


async def _delete_mode(svc: SchemaRegistry, s: str, *, query: Any, body: Any) -> Any:
    return await svc.write(svc.registry.delete_mode, s)


# The one route table: (methods, path segments with * for a parameter, handler).
ROUTES: list[tuple[tuple[str, ...], tuple[str, ...], Callable[..., Any]]] = [
    (("GET",), (), _root),
    (("GET",), ("contexts",), _contexts),
    (("GET",), ("schemas", "types"), _types),
    (("GET",), ("schemas",), _schemas),
    (("GET",), ("schemas", "ids", "*"), _schema_by_id),
    (("GET",), ("schemas", "ids", "*", "schema"), _schema_text_by_id),
    (("GET",), ("schemas", "ids", "*", "subjects"), _subjects_of_id),
    (("GET",), ("schemas", "ids", "*", "versions"), _versions_of_id),
    (("GET",), ("subjects",), _subjects),
    (("POST",), ("subjects", "*"), _lookup),
    (("DELETE",), ("subjects", "*"), _delete_subject),
    (("GET",), ("subjects", "*", "versions"), _versions),
    (("POST",), ("subjects", "*", "versions"), _register),
    (("GET",), ("subjects", "*", "versions", "*"), _version),
    (("DELETE",), ("subjects", "*", "versions", "*"), _delete_version),
    (("GET",), ("subjects", "*", "versions", "*", "schema"), _version_schema),
    (("GET",), ("subjects", "*", "versions", "*", "referencedby"), _referenced_by),
    (("POST",), ("compatibility", "subjects", "*", "versions"), _compat),
    (("POST",), ("compatibility", "subjects", "*", "versions", "*"), _compat),
    (("GET",), ("config",), _get_config),
    (("PUT",), ("config",), _put_config),
    (("DELETE",), ("config",), _delete_config),
    (("GET",), ("config", "*"), _get_config),
    (("PUT",), ("config", "*"), _put_config),
    (("DELETE",), ("config", "*"), _delete_config),
    (("GET",), ("mode",), _get_mode),
    (("PUT",), ("mode",), _put_mode),
    (("GET",), ("mode", "*"), _get_mode),
    (("PUT",), ("mode", "*"), _put_mode),
    (("DELETE",), ("mode", "*"), _delete_mode),
]
