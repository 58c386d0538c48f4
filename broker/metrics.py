"""Broker metrics in Prometheus form, one `Metrics` per broker (tests run several at once).

Served by the admin endpoint (`admin.port`) at /metrics.

The request path only adds to plain ints, floats and dicts: prometheus_client's metrics take
a lock and look up their labels on every update, a few per cent of the CPU of a busy broker.
The numbers become Prometheus metrics when /metrics is rendered, with the names, types,
labels, help texts and buckets those metrics had, so the text is the same. prometheus_client
is imported there too, and not at start-up.

Metrics with labels keep prometheus_client's call shape: `metrics.rebalances.labels(group)
.inc()`, `metrics.groups.labels(state, type).set(n)`, `metrics.consumer_lag.clear()`.
"""

from __future__ import annotations

import os
import time
from bisect import bisect_left
from typing import TYPE_CHECKING, Generic, TypeVar

from protocol.errors import ErrorCode

if TYPE_CHECKING:
    from prometheus_client import Metric

__all__ = ["REQUEST_CLOCK", "Metrics"]

# What requests are timed by (broker.dispatch.request_clock, with the admin endpoint on):
# the real time, which a client waits for its answer, under a virtual trio clock (a test's
# autojump_clock) too. time.perf_counter is what trio's own SystemClock reads, without the
# Python call around it (61 against 41 ns here, twice per request). The histograms and the
# request journal (broker.controls.journal) only ever subtract two of these times.
REQUEST_CLOCK = time.perf_counter

# Latency buckets in seconds: long polls and joins park for seconds, most requests take us.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
# The upper bounds of the buckets, +Inf last: bisect_left finds an observation's bucket.
_BOUNDS = (*(float(b) for b in _BUCKETS), float("inf"))
_FIRST_BOUND = _BOUNDS[0]
_NONE = ErrorCode.NONE


class _Child:
    """The value of one label set; `created` is what the `_created` series reports."""

    __slots__ = ("created", "value")

    def __init__(self) -> None:
        self.value = 0.0
        self.created = time.time()


class _CounterChild(_Child):
    __slots__ = ()

    def inc(self, amount: float = 1) -> None:
        if amount < 0:
            raise ValueError("counters can only be incremented by non-negative amounts")
        self.value += amount


class _GaugeChild(_Child):
    __slots__ = ()

    def set(self, value: float) -> None:
        self.value = float(value)


_C = TypeVar("_C", bound=_Child)


class _Labelled(Generic[_C]):
    """A metric with labels: one child per label set, made by its first `labels(...)`."""

    def __init__(self, child: type[_C], name: str, documentation: str, *labelnames: str) -> None:
        self.name = name
        self.documentation = documentation
        self.labelnames = labelnames
        self.children: dict[tuple[str, ...], _C] = {}
        self._child = child

    def labels(self, *values: object) -> _C:
        # One label given as a string (a topic, a group: the per-append call): the key as it is.
        key: tuple[str, ...] = (
            values  # type: ignore[assignment]  # checked: one str
            if len(values) == 1 and type(values[0]) is str
            else tuple(map(str, values))
        )
        child = self.children.get(key)
        if child is None:
            if len(key) != len(self.labelnames):
                raise ValueError(f"{self.name}: expected labels {self.labelnames}, got {key}")
            child = self.children[key] = self._child()
        return child

    def clear(self) -> None:
        self.children.clear()


class _Requests:
    """The requests of one API answered with one error (by its name, the label): their
    latencies per bucket (not cumulative; the last is +Inf) and their sum. Their
    count is the sum of the buckets: the requests counter and the API's latency histogram
    are both made from these when rendered, so a request updates two numbers, not four."""

    __slots__ = ("counts", "created", "error", "label", "sum")

    def __init__(self, label: str) -> None:
        self.counts = [0] * len(_BOUNDS)
        self.sum = 0.0
        self.created = time.time()
        self.error: object = None  # as request_done was last given it (its `_done` key)
        self.label = label


class Metrics:
    def __init__(self) -> None:
        now = time.time()
        # By (api, error name), in the order first seen; and the same by (api, error as
        # given), which request_done looks up.
        self._requests: dict[tuple[str, str], _Requests] = {}
        self._done: dict[tuple[str, object], _Requests] = {}
        self._answered: dict[str, _Requests] = {}  # the same, answered NONE, by API alone
        self.bytes_received = 0
        self.bytes_sent = 0
        self.connections = 0
        self.connections_total = 0
        self.created = now  # of the counters without labels
        self.rebalances = _Labelled(
            _CounterChild,
            "kmock_group_rebalances",
            "Rebalances completed (a new generation started).",
            "group",
        )
        self.groups = _Labelled(
            _GaugeChild, "kmock_groups", "Consumer groups by state and type.", "state", "type"
        )
        self.consumer_lag = _Labelled(
            _GaugeChild,
            "kmock_consumer_lag",
            "Log end offset minus committed offset.",
            "group",
            "topic",
            "partition",
        )
        self.messages_in = _Labelled(
            _CounterChild, "kmock_records_in", "Records appended, by topic.", "topic"
        )

    def connection_opened(self) -> None:
        self.connections += 1
        self.connections_total += 1

    def connection_closed(self) -> None:
        self.connections -= 1

    def bytes_in(self, n: int) -> None:
        self.bytes_received += n

    def bytes_out(self, n: int) -> None:
        self.bytes_sent += n

    def request_done(self, api: str, error: object, seconds: float) -> None:
        # Once per request (with the admin endpoint on: broker.dispatch.request_clock). A
        # request answered NONE, nearly all of them, is found by its API alone and, taking
        # less than the first bucket's bound as most do, counted without a search. An int
        # equal to an ErrorCode finds the ErrorCode's entry in `_done`: `error is` tells
        # them apart, and the other one takes the long way (its label is not the same).
        if error is _NONE:
            done = self._answered.get(api)
        else:
            done = self._done.get((api, error))
            if done is not None and done.error is not error:
                done = None
        if done is None:
            done = self._request_entry(api, error)
        done.counts[0 if seconds <= _FIRST_BOUND else bisect_left(_BOUNDS, seconds)] += 1
        done.sum += seconds

    def _request_entry(self, api: str, error: object) -> _Requests:
        # An ErrorCode's name is its member's `_name_` (enum's `name` is a property).
        name = getattr(error, "_name_", None)
        label = name if name is not None else getattr(error, "name", None) or str(error)
        done = self._requests.get((api, label))
        if done is None:
            done = self._requests[(api, label)] = _Requests(label)
        done.error = error
        self._done[(api, error)] = done
        if error is _NONE:
            self._answered[api] = done
        return done

    def render(self) -> bytes:
        """Every metric in the Prometheus text format 0.0.4 (what /metrics serves)."""
        # Imported here, not at start-up: prometheus_client takes ~15 ms to import.
        from prometheus_client import generate_latest

        return generate_latest(self)  # a Collector: all it needs is collect()

    def collect(self) -> list[Metric]:
        """The metric families, in the order (and with the samples) that prometheus_client's
        Counter, Gauge and Histogram give."""
        from prometheus_client import Metric
        from prometheus_client.utils import floatToGoString

        # prometheus_client's switch for the `_created` series of counters and histograms.
        created = os.environ.get("PROMETHEUS_DISABLE_CREATED_SERIES", "False").lower() not in (
            "true",
            "1",
            "t",
        )

        def family(name: str, documentation: str, typ: str) -> Metric:
            out = Metric(name, documentation, typ)
            families.append(out)
            return out

        def counter(out: Metric, labels: dict[str, str], value: float, since: float) -> None:
            out.add_sample(out.name + "_total", labels, float(value))
            if created:
                out.add_sample(out.name + "_created", labels, since)

        # The latency histogram of each api, from its entries (made with the first).
        latency: dict[str, tuple[list[int], list[float]]] = {}  # (counts, [sum, created])
        for (api, _), done in self._requests.items():
            counts, totals = latency.setdefault(api, ([0] * len(_BOUNDS), [0.0, done.created]))
            for i, count in enumerate(done.counts):
                counts[i] += count
            totals[0] += done.sum
        families: list[Metric] = []
        m = family("kmock_requests", "Requests handled, by API and error code.", "counter")
        for (api, error), done in self._requests.items():
            counter(m, {"api": api, "error": error}, sum(done.counts), done.created)
        m = family(
            "kmock_request_latency_seconds",
            "Time from decoded request to response, by API.",
            "histogram",
        )
        les = [floatToGoString(bound) for bound in _BOUNDS]
        for api, (counts, (total_seconds, since)) in latency.items():
            total = 0
            for le, count in zip(les, counts, strict=True):
                total += count
                m.add_sample(m.name + "_bucket", {"api": api, "le": le}, float(total))
            m.add_sample(m.name + "_count", {"api": api}, float(total))
            m.add_sample(m.name + "_sum", {"api": api}, total_seconds)
            if created:
                m.add_sample(m.name + "_created", {"api": api}, since)
        m = family("kmock_bytes_in", "Bytes received from clients.", "counter")
        counter(m, {}, self.bytes_received, self.created)
        m = family("kmock_bytes_out", "Bytes sent to clients.", "counter")
        counter(m, {}, self.bytes_sent, self.created)
        m = family("kmock_connections", "Open client connections.", "gauge")
        m.add_sample(m.name, {}, float(self.connections))
        m = family("kmock_connections_opened", "Connections accepted.", "counter")
        counter(m, {}, self.connections_total, self.created)
        for labelled, typ in (
            (self.rebalances, "counter"),
            (self.groups, "gauge"),
            (self.consumer_lag, "gauge"),
            (self.messages_in, "counter"),
        ):
            m = family(labelled.name, labelled.documentation, typ)
            for key, child in labelled.children.items():
                labels = dict(zip(labelled.labelnames, key, strict=True))
                if typ == "counter":
                    counter(m, labels, child.value, child.created)
                else:
                    m.add_sample(m.name, labels, child.value)
        return families
