"""The request journal: the last `kmock.journal.size` requests and their answers.

Recorded at the dispatch site (broker.connection), where metrics count a request: one tuple
appended to a bounded deque, holding the decoded request and response objects as they
are. Summarising them (broker.controls.summary: the key fields by Kafka's names, the error
codes) happens only when somebody reads the journal, so a broker whose journal nobody reads
pays for one append per request (bench/run.py, §8). Three kinds of message are not kept
as they are, because of what they hold:

  * Produce requests: their record batches are views of the request frame; keeping 10,000
    of them could keep gigabytes alive. The response names every partition, its error code
    and base offset, which is what the journal shows.
  * Fetch responses: they carry the records read; they are summarised at once.
  * requests and responses that carry config values (CreateTopics, AlterConfigs, ...):
    summarised at once, so a secret never stays in memory as part of the journal.

Sequence numbers start at 1 and only grow (a DELETE empties the ring, not the count), so
`since=<seq>` reads what came after a given entry, and `kmock journal --follow` waits for
more with `wait_ms`.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterator
from typing import Any

import trio

from broker.controls.summary import error_codes, group_ids, summarise, topic_partitions
from protocol.errors import ErrorCode

__all__ = ["Journal"]

# API name -> which of (request, response) to summarise at once rather than keep.
_EAGER: dict[str, tuple[bool, bool]] = {
    "Fetch": (False, True),
    "CreateTopics": (True, True),
    "AlterConfigs": (True, True),
    "IncrementalAlterConfigs": (True, True),
    "DescribeConfigs": (True, True),
}
_DROP_REQUEST = frozenset({"Produce"})
_SPECIAL = _DROP_REQUEST | _EAGER.keys()


class _Summary(dict):  # type: ignore[type-arg]
    """A summary made at record time (told apart from a message to summarise later)."""


class Journal:
    def __init__(self, size: int, resolve: Any = None) -> None:
        self.size = size
        self._ring: collections.deque[tuple[Any, ...]] = collections.deque(maxlen=size)
        self._seq = 0
        self._resolve = resolve  # topic id -> name, for Fetch v13+
        self._changed: trio.Event | None = None  # set on the next record, for `wait`

    @property
    def last_seq(self) -> int:
        return self._seq

    def record(self, call: Any, code: int, response: Any, outcome: str, ended: float) -> None:
        """Keep one request (called by the dispatch site; see the module docstring).

        `call` is the dispatch site's record of the request (broker.connection._Call: its
        route, version, correlation id, client id, connection, start time, decoded request
        and the fault that answered it), kept as it is, but for the kinds of message above.
        """
        self._seq += 1
        name = call.route.name
        if name in _SPECIAL:
            call, response = self._lighten(name, call, response)
        self._ring.append((self._seq, call, response, code, outcome, ended))
        if self._changed is not None:
            self._changed.set()
            self._changed = None

    def _lighten(self, name: str, call: Any, response: Any) -> tuple[Any, Any]:
        if name in _DROP_REQUEST:
            return call._replace(request=None), response
        eager_request, eager_response = _EAGER[name]
        if eager_request and call.request is not None:
            call = call._replace(request=_Summary(summarise(call.request, self._resolve)))
        if eager_response and response is not None:
            response = _Summary(summarise(response, self._resolve))
        return call, response

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
        for entry in self._after(since):
            if api is not None and entry[1].route.name != api:
                continue
            if client_id is not None and entry[1].client_id != client_id:
                continue
            summary = self._summary(entry)
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

    def _after(self, since: int) -> Iterator[tuple[Any, ...]]:
        ring = self._ring
        if not ring or ring[-1][0] <= since:
            return iter(())
        # Sequence numbers are consecutive in the ring: index straight to the first one.
        first = max(0, since - ring[0][0] + 1)
        return (ring[i] for i in range(first, len(ring)))

    def _summary(self, entry: tuple[Any, ...]) -> dict[str, Any]:
        seq, call, response, code, outcome, ended = entry
        route, conn = call.route, call.conn
        req = _as_summary(call.request, self._resolve)
        resp = _as_summary(response, self._resolve)
        codes = error_codes(resp)
        if code and code not in codes:
            codes = sorted({*codes, code})
        now_mono, now_wall = trio.current_time(), time.time()
        return {
            "seq": seq,
            "api": route.name,
            "api_key": route.api_key,
            "version": call.version,
            "correlation_id": call.correlation_id,
            "client_id": call.client_id,
            "connection": conn.connection_id,
            "client_host": conn.client_host.lstrip("/"),
            "time_ms": int((now_wall - (now_mono - ended)) * 1000),
            "latency_ms": round((ended - call.started) * 1000, 3),
            "outcome": outcome,
            "error_code": code,
            "error": _name(code),
            "error_codes": codes,
            "errors": [_name(c) for c in codes],
            "fault": call.fault,
            "request": req,
            "response": resp,
        }


def _as_summary(message: Any, resolve: Any) -> dict[str, Any]:
    if message is None:
        return {}
    if isinstance(message, _Summary):
        return dict(message)
    return summarise(message, resolve)


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return str(code)
