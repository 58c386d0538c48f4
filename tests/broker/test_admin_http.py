"""The admin endpoint: HTTP edge cases over memory streams, then /readyz and /metrics of a
live broker after real kafka-python traffic."""

from __future__ import annotations

import re
import time
import urllib.error
import urllib.request

import pytest
import trio
import trio.testing
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from broker.admin_http import MAX_REQUEST_BYTES, PROMETHEUS_CONTENT_TYPE, _serve_one, serve_admin
from broker.config import load_config
from broker.metrics import Metrics
from broker.server import serve
from protocol.errors import ErrorCode
from tests.integration.harness import KAFKA_PYTHON_POLL_MS

SCENARIO_S = 30


class FakeBroker:
    """What the endpoint reads from a broker, before any coordinator exists."""

    def __init__(self) -> None:
        self.config = {"admin.host": "127.0.0.1", "admin.port": 0, "admin.allowed.hosts": ""}
        self.ready = trio.Event()
        self.metrics = Metrics()
        self.coordinator = None


async def exchange(broker, request: bytes) -> bytes:
    """Send `request` on a memory stream to one `_serve_one`; everything it answered."""
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_one, broker, server)
        if request:
            await client.send_all(request)
        response = bytearray()
        while data := await client.receive_some():
            response += data
    return bytes(response)


def parse(response: bytes) -> tuple[int, dict[str, str], bytes]:
    head, _, body = response.partition(b"\r\n\r\n")
    status_line, *lines = head.decode().split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines)
    return int(status_line.split()[1]), headers, body


async def get(broker, path: str, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    return parse(
        await exchange(broker, f"{method} {path} HTTP/1.1\r\nHost: localhost\r\n\r\n".encode())
    )


async def test_readyz_is_503_until_the_broker_is_ready_and_healthz_always_200():
    broker = FakeBroker()
    status, headers, body = await get(broker, "/readyz")
    assert (status, body) == (503, b"replaying __consumer_offsets\n")
    assert headers["Connection"] == "close"
    assert (await get(broker, "/healthz"))[0] == 200
    broker.ready.set()
    assert (await get(broker, "/readyz?verbose=1"))[:3:2] == (200, b"ready\n")


async def test_metrics_content_type_and_head():
    broker = FakeBroker()
    status, headers, body = await get(broker, "/metrics")
    assert status == 200
    assert headers["Content-Type"] == PROMETHEUS_CONTENT_TYPE
    assert b"# TYPE kmock_connections gauge" in body
    assert int(headers["Content-Length"]) == len(body)
    status, headers, body = await get(broker, "/metrics", "HEAD")
    assert (status, body) == (200, b"")
    assert int(headers["Content-Length"]) > 0


@pytest.mark.parametrize(
    ("request_bytes", "status"),
    [
        (b"GET /nope HTTP/1.1\r\n\r\n", 404),
        (b"POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", 405),
        (b"GET /metrics\r\n\r\n", 400),  # HTTP/0.9 style: no version
        (b"\xff\xfe /x HTTP/1.1\r\n\r\n", 400),
        (b"GET /" + b"a" * MAX_REQUEST_BYTES + b" HTTP/1.1\r\n\r\n", 431),
    ],
)
async def test_bad_requests_get_an_answer_and_a_close(request_bytes, status):
    got, headers, _ = parse(await exchange(FakeBroker(), request_bytes))
    assert got == status
    if status == 405:
        assert headers["Allow"] == "GET, HEAD"


@pytest.mark.parametrize(
    ("host", "allowed", "status"),
    [
        ("127.0.0.1:9644", "", 200),
        ("localhost", "", 200),
        ("LOCALHOST.:80", "", 200),
        ("[::1]:9644", "", 200),
        ("rebound.example:9644", "", 421),
        ("127.0.0.1.rebound.example", "", 421),
        ("kmock:8080", "", 421),
        ("kmock:8080", "prometheus-target, kmock", 200),
        ("anything.example", "*", 200),
    ],
)
async def test_a_host_header_that_does_not_name_the_endpoint_gets_421(host, allowed, status):
    broker = FakeBroker()
    broker.config["admin.allowed.hosts"] = allowed
    for path in ("/", "/v1/nope"):
        request = f"GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()
        got, _, body = parse(await exchange(broker, request))
        if status == 421:
            assert got == 421
            assert f"Host {host!r} is not a name of this admin endpoint" in body.decode()
            assert "admin.allowed.hosts" in body.decode()
        else:
            assert got != 421


@pytest.mark.parametrize("path", ["/healthz", "/readyz", "/metrics", "/metrics?x=1"])
async def test_probes_and_metrics_answer_whatever_the_host(path):
    # A scraper or probe names the container or pod (kmock:8080): no setting is needed.
    request = f"GET {path} HTTP/1.1\r\nHost: kmock:8080\r\n\r\n".encode()
    got, _, _ = parse(await exchange(FakeBroker(), request))
    assert got != 421


async def test_the_endpoints_own_host_is_allowed_and_no_host_header_too():
    broker = FakeBroker()
    broker.config["admin.host"] = "kmock.internal"
    assert (
        parse(await exchange(broker, b"GET /healthz HTTP/1.1\r\nHost: kmock.internal:9\r\n\r\n"))[0]
        == 200
    )
    assert parse(await exchange(broker, b"GET /healthz HTTP/1.1\r\n\r\n"))[0] == 200


async def test_a_silent_client_gets_408(autojump_clock):
    client, server = trio.testing.memory_stream_pair()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_serve_one, FakeBroker(), server)
        await client.send_all(b"GET /healthz HTTP/1.1\r\n")  # and never the blank line
        response = bytearray()
        while data := await client.receive_some():
            response += data
    assert parse(bytes(response))[0] == 408


async def test_serve_admin_reports_its_address_over_tcp(nursery):
    broker = FakeBroker()
    host, port = await nursery.start(serve_admin, broker)
    assert broker.admin_address == (host, port)

    def fetch(path: str) -> int:
        try:
            with urllib.request.urlopen(f"http://{host}:{port}{path}", timeout=10) as r:
                return r.status
        except urllib.error.HTTPError as e:
            return e.code

    with trio.fail_after(SCENARIO_S):
        assert await trio.to_thread.run_sync(fetch, "/readyz", abandon_on_cancel=True) == 503
        broker.ready.set()
        assert await trio.to_thread.run_sync(fetch, "/readyz", abandon_on_cancel=True) == 200


# --- the metrics text ---------------------------------------------------------------------------


def _prometheus_client_metrics() -> tuple[CollectorRegistry, dict]:
    """prometheus_client's own metrics with the names, labels, help and buckets of ours."""
    r = CollectorRegistry()
    buckets = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30)
    return r, {
        "requests": Counter(
            "kmock_requests",
            "Requests handled, by API and error code.",
            ["api", "error"],
            registry=r,
        ),
        "latency": Histogram(
            "kmock_request_latency_seconds",
            "Time from decoded request to response, by API.",
            ["api"],
            buckets=buckets,
            registry=r,
        ),
        "bytes_in": Counter("kmock_bytes_in", "Bytes received from clients.", registry=r),
        "bytes_out": Counter("kmock_bytes_out", "Bytes sent to clients.", registry=r),
        "connections": Gauge("kmock_connections", "Open client connections.", registry=r),
        "opened": Counter("kmock_connections_opened", "Connections accepted.", registry=r),
        "rebalances": Counter(
            "kmock_group_rebalances",
            "Rebalances completed (a new generation started).",
            ["group"],
            registry=r,
        ),
        "groups": Gauge(
            "kmock_groups", "Consumer groups by state and type.", ["state", "type"], registry=r
        ),
        "consumer_lag": Gauge(
            "kmock_consumer_lag",
            "Log end offset minus committed offset.",
            ["group", "topic", "partition"],
            registry=r,
        ),
        "messages_in": Counter(
            "kmock_records_in", "Records appended, by topic.", ["topic"], registry=r
        ),
    }


def _without_created_values(text: str) -> str:
    return re.sub(r"(_created(\{[^}]*\})?) \S+", r"\1 T", text)


def test_metrics_text_is_what_prometheus_client_metrics_would_write():
    ours = Metrics()
    registry, theirs = _prometheus_client_metrics()
    empty = _without_created_values(generate_latest(registry).decode())
    assert _without_created_values(ours.render().decode()) == empty

    for _ in range(3):
        ours.connection_opened()
        theirs["connections"].inc()
        theirs["opened"].inc()
    ours.connection_closed()
    theirs["connections"].dec()
    ours.bytes_in(100)
    theirs["bytes_in"].inc(100)
    ours.bytes_out(7)
    theirs["bytes_out"].inc(7)
    requests = [
        ("Produce", ErrorCode.NONE, 0.0003),
        ("Produce", ErrorCode.NONE, 0.0005),  # on a bucket bound
        ("Produce", 0, 0.0002),  # equal to NONE, not NONE: a label of its own
        ("Fetch", ErrorCode.NOT_COORDINATOR, 31.0),  # above every bound
        ("Produce", ErrorCode.NONE, 0.1 + 0.2),
        ("Fetch", 5, 1),
        # Equal to the int 5, another label: each keeps its own counter.
        ("Fetch", ErrorCode.LEADER_NOT_AVAILABLE, 0.002),
        ("Fetch", 5, 0.001),
    ]
    for api, error, seconds in requests:
        ours.request_done(api, error, seconds)
        theirs["requests"].labels(api, getattr(error, "name", str(error))).inc()
        theirs["latency"].labels(api).observe(seconds)
    for name in ("rebalances", "messages_in"):
        getattr(ours, name).labels("a").inc(2)
        getattr(ours, name).labels("b").inc()
        theirs[name].labels("a").inc(2)
        theirs[name].labels("b").inc()
    for state, group_type, n in (("Stable", "classic", 1), ("Empty", "consumer", 0)):
        ours.groups.labels(state, group_type).set(n)
        theirs["groups"].labels(state, group_type).set(n)
    ours.consumer_lag.labels("g", "t", "0").set(1)
    theirs["consumer_lag"].labels("g", "t", "0").set(1)
    ours.consumer_lag.clear()
    theirs["consumer_lag"].clear()
    ours.consumer_lag.labels('g"1', "t", 3).set(4)
    theirs["consumer_lag"].labels('g"1', "t", 3).set(4)

    text = _without_created_values(ours.render().decode())
    assert text == _without_created_values(generate_latest(registry).decode())
    assert text != empty
    with pytest.raises(ValueError, match="non-negative"):
        ours.messages_in.labels("c").inc(-1)


# --- a live broker -----------------------------------------------------------------------------


def metric_values(text: str) -> dict[tuple[str, frozenset[tuple[str, str]]], float]:
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.integration
async def test_metrics_after_kafka_python_traffic(nursery, tmp_path):
    from kafka import KafkaConsumer, KafkaProducer, OffsetAndMetadata, TopicPartition

    config = load_config(
        overrides={
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path),
            "admin.port": 0,
        }
    )
    broker = await nursery.start(serve, config)
    host, port = broker.admin_address

    def scrape() -> dict:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as r:
            assert r.headers["Content-Type"] == PROMETHEUS_CONTENT_TYPE
            return metric_values(r.read().decode())

    def ready() -> int:
        with urllib.request.urlopen(f"http://{host}:{port}/readyz", timeout=10) as r:
            return r.status

    def produce() -> None:
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap_servers, acks="all")
        for i in range(5):
            producer.send("metered", f"m{i}".encode(), partition=0)
        producer.flush()
        producer.close()

    def join_and_commit_two() -> KafkaConsumer:
        consumer = KafkaConsumer(
            "metered",
            bootstrap_servers=broker.bootstrap_servers,
            group_id="meter",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        deadline = time.monotonic() + SCENARIO_S
        while not consumer.assignment():
            assert time.monotonic() < deadline, "no assignment"
            consumer.poll(timeout_ms=KAFKA_PYTHON_POLL_MS)
        consumer.commit({TopicPartition("metered", 0): OffsetAndMetadata(2, "", -1)})
        return consumer

    with trio.fail_after(SCENARIO_S):
        await broker.ready.wait()
        assert await trio.to_thread.run_sync(ready, abandon_on_cancel=True) == 200
        await trio.to_thread.run_sync(produce, abandon_on_cancel=True)
        consumer = await trio.to_thread.run_sync(join_and_commit_two, abandon_on_cancel=True)
        try:
            stable = await trio.to_thread.run_sync(scrape, abandon_on_cancel=True)
        finally:
            await trio.to_thread.run_sync(consumer.close, abandon_on_cancel=True)
        empty = await trio.to_thread.run_sync(scrape, abandon_on_cancel=True)

    lag = (
        "kmock_consumer_lag",
        frozenset({("group", "meter"), ("topic", "metered"), ("partition", "0")}),
    )
    assert stable[lag] == 3
    assert stable[("kmock_groups", frozenset({("state", "Stable"), ("type", "classic")}))] == 1
    assert stable[("kmock_groups", frozenset({("state", "Empty"), ("type", "classic")}))] == 0
    assert empty[("kmock_groups", frozenset({("state", "Empty"), ("type", "classic")}))] == 1
    assert empty[("kmock_groups", frozenset({("state", "Stable"), ("type", "classic")}))] == 0
    assert empty[lag] == 3
    produced = ("kmock_requests_total", frozenset({("api", "Produce"), ("error", "NONE")}))
    assert empty[produced] >= 1
    assert empty[("kmock_connections_opened_total", frozenset())] >= 2
