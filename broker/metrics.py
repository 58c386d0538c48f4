"""Broker metrics in Prometheus form, one registry per broker (tests run several at once).

Served by the admin endpoint (`admin.port`) at /metrics.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

__all__ = ["Metrics"]

# Latency buckets in seconds: long polls and joins park for seconds, most requests take us.
_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)


class Metrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.requests = Counter(
            "kmock_requests",
            "Requests handled, by API and error code.",
            ["api", "error"],
            registry=r,
        )
        self.latency = Histogram(
            "kmock_request_latency_seconds",
            "Time from decoded request to response, by API.",
            ["api"],
            buckets=_BUCKETS,
            registry=r,
        )
        self.bytes_received = Counter("kmock_bytes_in", "Bytes received from clients.", registry=r)
        self.bytes_sent = Counter("kmock_bytes_out", "Bytes sent to clients.", registry=r)
        self.connections = Gauge("kmock_connections", "Open client connections.", registry=r)
        self.connections_total = Counter(
            "kmock_connections_opened", "Connections accepted.", registry=r
        )
        self.rebalances = Counter(
            "kmock_group_rebalances",
            "Rebalances completed (a new generation started).",
            ["group"],
            registry=r,
        )
        self.groups = Gauge("kmock_groups", "Consumer groups by state.", ["state"], registry=r)
        self.consumer_lag = Gauge(
            "kmock_consumer_lag",
            "Log end offset minus committed offset.",
            ["group", "topic", "partition"],
            registry=r,
        )
        self.messages_in = Counter(
            "kmock_records_in", "Records appended, by topic.", ["topic"], registry=r
        )

    def connection_opened(self) -> None:
        self.connections.inc()
        self.connections_total.inc()

    def connection_closed(self) -> None:
        self.connections.dec()

    def bytes_in(self, n: int) -> None:
        self.bytes_received.inc(n)

    def bytes_out(self, n: int) -> None:
        self.bytes_sent.inc(n)

    def request_done(self, api: str, error: object, seconds: float) -> None:
        name = getattr(error, "name", str(error))
        self.requests.labels(api, name).inc()
        self.latency.labels(api).observe(seconds)

    def render(self) -> bytes:
        return generate_latest(self.registry)
