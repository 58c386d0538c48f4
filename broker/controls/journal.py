"""The request journal: the last `kmock.journal.size` requests and their answers.

Recorded at the dispatch site (broker.dispatch), where metrics count a request: one
tuple of plain values appended to a bounded deque, holding the request frame as it came
and the response's body as it went out, as bytes. Decoding them again and summarising them
(broker.controls.summary: the key fields by Kafka's names, the error codes) happens only
when somebody reads the journal. Bytes, not the decoded objects: 10,000 decoded requests
and responses kept alive are a few hundred thousand objects for Python's cyclic garbage
collector to walk again and again (a third more CPU per request, measured), while a tuple
of ints, strings and bytes is not tracked by it at all. So a broker whose journal nobody
reads pays for one tuple per request (bench/run.py, §10). Most requests, a small frame
answered NONE with a body of one `bytes`, are kept as references alone (`record`: the
frame and the body themselves, not copies; the header's facts are read from the frame when
the journal is read); the others as every fact in a tuple of its own (`record_as`). Four
kinds of message are not kept as they came:

  * Produce requests: their record batches could keep gigabytes alive. The response names
    every partition, its error code and base offset, which is what the journal shows.
  * Fetch responses: they carry the records read; they are summarised at once (as JSON).
  * requests and responses that carry config values (CreateTopics, AlterConfigs, ...):
    summarised at once, so a secret never stays in memory as part of the journal;
  * a request or response of more than MAX_KEPT_BYTES (a Metadata of every topic of a big
    cluster): kept as its size and error codes, so that the ring stays small whatever the
    clients ask.

Sequence numbers start at 1 and only grow (a DELETE empties the ring, not the count), so
`since=<seq>` reads what came after a given entry, and `kmock journal --follow` waits for
more with `wait_ms`.
"""

from __future__ import annotations

import collections
import json
import time
from collections.abc import Iterator
from typing import Any

import trio

from broker.controls.summary import error_codes, group_ids, summarise, topic_partitions
from broker.metrics import REQUEST_CLOCK
from protocol.errors import ErrorCode
from protocol.frames import parse_request_header, request_header
from protocol.messages.alter_configs import AlterConfigsRequest
from protocol.messages.create_topics import CreateTopicsRequest
from protocol.messages.describe_configs import DescribeConfigsRequest
from protocol.messages.fetch import FetchRequest
from protocol.messages.incremental_alter_configs import IncrementalAlterConfigsRequest
from protocol.messages.produce import ProduceRequest
from protocol.schema import DecodeError, decode

__all__ = ["Journal"]

# The APIs not kept as they came (see the module docstring), by request class: which of
# (request, response) to summarise at once rather than keep; Produce's request is dropped.
_EAGER_REQUESTS: dict[type, tuple[bool, bool]] = {
    FetchRequest: (False, True),
    CreateTopicsRequest: (True, True),
    AlterConfigsRequest: (True, True),
    IncrementalAlterConfigsRequest: (True, True),
    DescribeConfigsRequest: (True, True),
}
_DROPPED_REQUESTS = frozenset({ProduceRequest})
# What `record` tells them by (it is given the request, not the route); `record_as` by
# their API names (a deferred answer has no request left), which are the classes' without
# "Request", as broker.routes names them (tests/broker/test_journal.py checks).
_SPECIAL_REQUESTS = _DROPPED_REQUESTS | _EAGER_REQUESTS.keys()
_EAGER = {cls.__name__.removesuffix("Request"): eager for cls, eager in _EAGER_REQUESTS.items()}
_DROP_REQUEST = frozenset(cls.__name__.removesuffix("Request") for cls in _DROPPED_REQUESTS)
_SPECIAL = _DROP_REQUEST | _EAGER.keys()
MAX_KEPT_BYTES = 65536
# A response body longer than this may be part of a response longer than MAX_KEPT_BYTES:
# its header (size, correlation id, tagged fields) is 8 or 9 bytes.
_BODY_MAX_KEPT_BYTES = MAX_KEPT_BYTES - 9
# The length of an entry `record` keeps as references (`_expand` reads it); the others,
# `record_as`'s, are longer.
_REFERENCES = 7


class Journal:
    __slots__ = ("_changed", "_resolve", "_ring", "_seq", "routes", "size")

    def __init__(self, size: int, resolve: Any = None) -> None:
        self.size = size
        self._ring: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=size)
        self._seq = 0
        self._resolve = resolve  # topic id -> name, for Fetch v13+
        self._changed: trio.Event | None = None  # set on the next record, for `wait`
        self.routes: dict[int, Any] = {}  # api key -> route, set by broker.server.serve

    @property
    def last_seq(self) -> int:
        return self._seq

    def record(
        self,
        call: Any,
        code: int,
        response: Any,
        out: list[Any] | None,
        ended: float,
        started: float,
        conn: Any,
        request: Any,
        fault: int | None,
        frame: Any,
    ) -> None:
        """Keep one answered request (called by the dispatch site; see the module docstring).

        `call` is the dispatch site's record of the request (broker.dispatch.Call), and
        `started`, `conn`, `request`, `fault` and `frame` are its fields (the dispatch site
        has unpacked them already: a named tuple is unpacked through its iterator, and its
        fields read by name are generic lookups); `response` is the decoded response and
        `out` its encoded chunks (None: acks=0, no answer), `ended` when it was answered.

        This runs for every request the broker answers. What most requests are, a small
        frame answered NONE with a body of one `bytes`, is kept as references alone, in a
        7-tuple: the frame (its header holds the API, version, correlation id and client id,
        read again when the journal is read), the body, the connection's id and host, the
        times and the fault. Everything else goes to `record_as`. Nothing is read from the
        route (the special APIs are told by their request's class). No entry holds an object
        the garbage collector tracks (an error-code enum, a list, the connection): 10,000
        tracked entries would be walked again and again. The two bounds keep what a kept
        reference holds within MAX_KEPT_BYTES: a frame larger than that is a buffer of its
        own (broker.connection), never kept.
        """
        if (
            code
            or out is None
            or frame is None  # a deferred answer's (broker.dispatch.Pending)
            or type(request) in _SPECIAL_REQUESTS
            or len(frame) > MAX_KEPT_BYTES
            or len(out) != 2
            or type(body := out[1]) is not bytes
            or len(body) > _BODY_MAX_KEPT_BYTES
        ):
            self.record_as(call, code, response, out, "answered" if out else "no response", ended)
            return
        self._ring.append(
            (frame, body, conn.connection_id, conn.client_host, started, ended, fault)
        )
        self._seq += 1
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def record_as(
        self,
        call: Any,
        code: int,
        response: Any,
        out: list[Any] | None,
        outcome: str,
        ended: float,
    ) -> None:
        """Keep one request with its outcome, whatever it is (see `record`): lightened as
        the module docstring says, every fact in a 13-tuple of its own."""
        (_, route, version, correlation_id, client_id, started, conn, request, fault, frame, _) = (
            call
        )
        name = route.name
        if name in _SPECIAL:
            request_data, response_data = self._lighten(name, request, frame, response, out)
        else:
            request_data = frame
            response_data = None if out is None else _body(out)
        if request_data is not None and len(request_data) > MAX_KEPT_BYTES:
            request_data = _json({"omitted_bytes": len(request_data)})
        if response_data is not None and len(response_data) > _BODY_MAX_KEPT_BYTES:
            # The size shown is the response's as it went out, header included (a summary
            # kept as JSON: the summary's).
            size = len(response_data)
            if type(response_data) is bytes and out is not None:
                size += len(out[0])
            if size > MAX_KEPT_BYTES:
                response_data = self._too_large(response, size)
        self._ring.append(
            (
                route.api_key,
                version,
                correlation_id,
                client_id,
                conn.connection_id,
                conn.client_host,
                started,
                ended,
                int(code) if code else 0,
                outcome,
                fault,
                request_data,
                response_data,
            )
        )
        self._seq += 1
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def _too_large(self, response: Any, size: int) -> str:
        codes = [] if response is None else error_codes(summarise(response))
        return _json({"omitted_bytes": size, "error_codes": codes})

    def _lighten(
        self, name: str, request: Any, frame: Any, response: Any, out: Any
    ) -> tuple[Any, Any]:
        """(request, response) as kept for the kinds of message the module docstring lists:
        a frame, a response body, a summary as JSON text, or None."""
        if name in _DROP_REQUEST:
            return None, None if out is None else _body(out)
        eager_request, eager_response = _EAGER[name]
        kept: Any = frame
        if eager_request:
            kept = None if request is None else _json(summarise(request, self._resolve))
        data: Any = None if out is None else _body(out)
        if eager_response and response is not None:
            data = _json(summarise(response, self._resolve))
        return kept, data

    def clear(self) -> int:
        n = len(self._ring)
        self._ring.clear()
        return n

    async def wait(self, since: int, timeout_s: float) -> None:
        """Return once an entry after `since` exists, or after `timeout_s` (real time)."""
        with trio.move_on_after(timeout_s):
            while self._seq <= since:
                if self._changed is None:
                    self._changed = trio.Event()
                await self._changed.wait()

    def entries(
        self,
        *,
        since: int = 0,
        api: str | None = None,
        group_id: str | None = None,
        client_id: str | None = None,
        topic: str | None = None,
        limit: int | None = None,
    ) -> list[dict[str, Any]]:
        """The summaries of the kept entries after `since` that match every filter given."""
        out = []
        for seq, kept in self._after(since):
            entry = self._expand(kept) if len(kept) == _REFERENCES else kept
            if api is not None and self._name(entry[0]) != api:
                continue
            if client_id is not None and entry[3] != client_id:
                continue
            summary = self._summary(seq, entry)
            if group_id is not None and group_id not in group_ids(summary["request"]):
                continue
            if topic is not None and not any(
                t == topic
                for part in ("request", "response")
                for t, _ in topic_partitions(summary[part])
            ):
                continue
            out.append(summary)
            if limit is not None and len(out) >= limit:
                break
        return out

    def _after(self, since: int) -> Iterator[tuple[int, tuple[Any, ...]]]:
        """(sequence number, entry) of the kept entries after `since`."""
        ring = self._ring
        # Sequence numbers are consecutive in the ring, the last one's is `_seq`: index
        # straight to the first one after `since`.
        oldest = self._seq - len(ring) + 1
        first = max(0, since - oldest + 1)
        return ((oldest + i, ring[i]) for i in range(first, len(ring)))

    def _expand(self, kept: tuple[Any, ...]) -> tuple[Any, ...]:
        """A request `record` kept as references, as `record_as` keeps the others: its
        header read again from its frame."""
        frame, body, conn_id, client_host, started, ended, fault = kept
        # The frame was decoded when it came: its header is whole.
        api_key, version, correlation_id, client_id, _ = request_header(frame)
        return (
            api_key,
            version,
            correlation_id,
            client_id,
            conn_id,
            client_host,
            started,
            ended,
            0,
            "answered",
            fault,
            frame,
            body,
        )

    def _name(self, api_key: int) -> str:
        route = self.routes.get(api_key)
        return route.name if route is not None else str(api_key)

    def _summary(self, seq: int, entry: tuple[Any, ...]) -> dict[str, Any]:
        (api_key, version, corr, client_id, conn_id, client_host, started, ended) = entry[:8]
        code, outcome, fault, request_data, response_data = entry[8:]
        route = self.routes.get(api_key)
        req = self._decoded(route, version, request_data, request=True)
        resp = self._decoded(route, version, response_data, request=False)
        codes = sorted({*error_codes(resp), *resp.get("error_codes", ())})
        if code and code not in codes:
            codes = sorted({*codes, code})
        now_mono, now_wall = REQUEST_CLOCK(), time.time()
        return {
            "seq": seq,
            "api": self._name(api_key),
            "api_key": api_key,
            "version": version,
            "correlation_id": corr,
            "client_id": client_id,
            "connection": conn_id,
            "client_host": client_host.lstrip("/"),
            "time_ms": int((now_wall - (now_mono - ended)) * 1000),
            "latency_ms": round((ended - started) * 1000, 3),
            "outcome": outcome,
            "error_code": code,
            "error": _name(code),
            "error_codes": codes,
            "errors": [_name(c) for c in codes],
            "fault": fault,
            "request": req,
            "response": resp,
        }

    def _decoded(self, route: Any, version: int, data: Any, *, request: bool) -> dict[str, Any]:
        """The summary of a kept frame (request) or response body, or of a kept summary."""
        if data is None or route is None:
            return {}
        if isinstance(data, str):
            return dict(json.loads(data))
        try:
            if request:
                _, pos = parse_request_header(data, route.request.is_flexible(version))
                message = decode(route.request, version, data, pos, allow_trailing=True)
            else:
                message = decode(route.response, version, data, 0)
        except DecodeError as e:  # cannot happen to what the broker itself read and wrote
            return {"undecodable": str(e)}
        return summarise(message, self._resolve, version)


def _body(out: list[Any]) -> Any:
    """A response's body from its chunks (broker.dispatch.respond: the header, then the
    body's chunks): the one chunk itself when it is `bytes` (not a view of a buffer that
    may change), else one copy of them all."""
    if len(out) == 2 and type(out[1]) is bytes:
        return out[1]
    return b"".join(out[1:])


def _json(summary: dict[str, Any]) -> str:
    return json.dumps(summary, default=str)


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
