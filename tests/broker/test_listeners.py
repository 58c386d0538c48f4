"""Named listeners (broker.listeners): Kafka's checks and messages, the KAFKA_* environment
mapping of apache/kafka's image, and a broker with two listeners answering each client
with the address of the listener it came through."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from broker.config import ConfigError, env_to_name, load_config
from broker.listeners import listener_setup
from broker.server import serve
from protocol.errors import ErrorCode
from protocol.messages.describe_cluster import DescribeClusterRequest
from protocol.messages.find_coordinator import FindCoordinatorRequest
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.conftest import broker_config
from tests.wire import WireClient

MAP = "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT"
DEFAULT_MAP = load_config()["listener.security.protocol.map"]


def setup(listeners: str, advertised: str | None = None, pmap: str = MAP, ibl: str | None = None):
    return listener_setup(listeners, advertised, pmap, ibl)


def test_two_named_listeners_advertise_per_name():
    s = setup(
        "PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092",
        "PLAINTEXT://kmock:29092,PLAINTEXT_HOST://localhost:9092",
        ibl="plaintext",
    )
    assert [(e.listener, e.host, e.port) for e in s.listeners] == [
        ("PLAINTEXT", "0.0.0.0", 29092),
        ("PLAINTEXT_HOST", "0.0.0.0", 9092),
    ]
    assert {n: (e.host, e.port) for n, e in s.advertised.items()} == {
        "PLAINTEXT": ("kmock", 29092),
        "PLAINTEXT_HOST": ("localhost", 9092),
    }
    assert s.inter_broker_listener_name == "PLAINTEXT"


def test_unset_advertised_listeners_advertise_the_listeners():
    s = setup(
        "plaintext://:9092,PLAINTEXT_HOST://[::1]:9093,X://myhost:9094", pmap=MAP + ",X:PLAINTEXT"
    )
    assert {n: (e.host, e.port) for n, e in s.advertised.items()} == {
        "PLAINTEXT": ("127.0.0.1", 9092),
        "PLAINTEXT_HOST": ("::1", 9093),
        "X": ("myhost", 9094),
    }


@pytest.mark.parametrize(
    ("listeners", "advertised", "pmap", "ibl", "message"),
    [
        (
            "PLAINTEXT://:9092,PLAINTEXT_HOST://:9093",
            None,
            DEFAULT_MAP,
            None,
            "listeners: Error creating broker listeners from 'PLAINTEXT://:9092,"
            "PLAINTEXT_HOST://:9093': No security protocol defined for listener PLAINTEXT_HOST "
            "(add PLAINTEXT_HOST:PLAINTEXT to listener.security.protocol.map)",
        ),
        (
            "PLAINTEXT://:9092,plaintext://:9093",
            None,
            MAP,
            None,
            "listeners: Each listener must have a different name, listeners: "
            "PLAINTEXT://:9092,plaintext://:9093",
        ),
        (
            "PLAINTEXT://:9092,PLAINTEXT_HOST://localhost:9092",
            None,
            MAP,
            None,
            "listeners: Each listener must have a different port, listeners: "
            "PLAINTEXT://:9092,PLAINTEXT_HOST://localhost:9092",
        ),
        (
            "PLAINTEXT://0.0.0.0:9092,PLAINTEXT_HOST://127.0.0.1:9092",
            None,
            MAP,
            None,
            "listeners: If you have two listeners on the same port then one needs to be IPv4 "
            "and the other IPv6, listeners: PLAINTEXT://0.0.0.0:9092,"
            "PLAINTEXT_HOST://127.0.0.1:9092, port: 9092",
        ),
        (
            "PLAINTEXT://:9092",
            "PLAINTEXT://a:9092,PLAINTEXT_HOST://b:9093",
            MAP,
            None,
            "advertised.listeners listener names must be equal to or a subset of the ones "
            "defined in listeners. Found PLAINTEXT,PLAINTEXT_HOST. The valid options based on "
            "the current configuration are PLAINTEXT",
        ),
        (
            "PLAINTEXT://:9092",
            "PLAINTEXT://0.0.0.0:9092",
            MAP,
            None,
            "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a "
            "routable IP address.",
        ),
        (
            "PLAINTEXT://:9092,PLAINTEXT_HOST://:9093",
            "PLAINTEXT_HOST://b:9093",
            MAP,
            "PLAINTEXT",
            "inter.broker.listener.name must be a listener name defined in "
            "advertised.listeners. The valid options based on currently configured listeners "
            "are PLAINTEXT_HOST",
        ),
        (
            "PLAINTEXT://:9092",
            None,
            "PLAINTEXT:TLS",
            None,
            "listener.security.protocol.map: 'TLS' (for listener PLAINTEXT) is not a security "
            "protocol; Kafka's are PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
        ),
        (
            "PLAINTEXT://:9092",
            None,
            "PLAINTEXT",
            None,
            "listener.security.protocol.map: 'PLAINTEXT' is not LISTENER_NAME:PROTOCOL",
        ),
        (
            "127.0.0.1:9092",
            None,
            MAP,
            None,
            "listeners: Error creating broker listeners from '127.0.0.1:9092': Unable to parse "
            "127.0.0.1:9092 to a broker endpoint (expected NAME://host:port)",
        ),
        ("", None, MAP, None, "listeners: no listener configured"),
    ],
)
def test_bad_listener_settings_name_the_setting(listeners, advertised, pmap, ibl, message):
    with pytest.raises(ValueError, match=r"\S") as info:
        setup(listeners, advertised, pmap, ibl)
    assert str(info.value).startswith(message)


def test_one_ipv4_and_one_ipv6_listener_may_share_a_port():
    s = setup("PLAINTEXT://127.0.0.1:9092,PLAINTEXT_HOST://[::1]:9092")
    assert [e.port for e in s.listeners] == [9092, 9092]


@pytest.mark.parametrize(
    ("var", "name"),
    [
        ("KAFKA_LOG_DIRS", "log.dirs"),
        ("KAFKA_ADVERTISED_LISTENERS", "advertised.listeners"),
        ("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP", "listener.security.protocol.map"),
        ("KAFKA_INTER_BROKER_LISTENER_NAME", "inter.broker.listener.name"),
        ("KAFKA_CREATE_TOPICS", "create.topics"),
        ("KAFKA_KMOCK_CREATE_TOPICS", "kmock.create.topics"),
        ("KAFKA_A__B", "a_b"),
        ("KAFKA_A___B", "a-b"),
        ("KAFKA_A____B", "a-.b"),
        ("KAFKA_A_____B", "a-_b"),
        ("KAFKA_A______B", "a--b"),
        # Every "KAFKA_" goes, not only the prefix (Scala's String.replace).
        ("KAFKA_X_KAFKA_Y", "x.y"),
        ("KAFKA_OPTS", None),  # the image's JVM and log4j variables
        ("KAFKA_JMX_OPTS", None),
        ("KAFKA_LOG4J_LOGGERS", None),
        ("KAFKA_HEAP_OPTS", "heap.opts"),  # the image excludes KAFKA_HEAP_OPT, not this
        ("KAFKAX", None),
        ("OTHER", None),
    ],
)
def test_environment_names_map_as_apache_kafkas_image_maps_them(var, name):
    assert env_to_name(var) == name


def test_kafka_create_topics_sets_kmock_create_topics():
    cfg = load_config(environ={"KAFKA_CREATE_TOPICS": "orders:3"})
    assert cfg["kmock.create.topics"] == "orders:3"


# --- a running broker ---------------------------------------------------------------------


async def _views(host: str, port: int) -> tuple[Any, Any, Any]:
    """Metadata v12 (and v5), FindCoordinator v4 and DescribeCluster v1, through one
    connection to host:port."""
    client = WireClient(await trio.open_tcp_stream(host, port))
    try:
        md = await client.call(MetadataRequest(topics=[MetadataRequestTopic(name="orders")]), 12)
        md5 = await client.call(MetadataRequest(topics=[MetadataRequestTopic(name="orders")]), 5)
        fc = await client.call(FindCoordinatorRequest(key_type=0, coordinator_keys=["g"]), 4)
        fc0 = await client.call(FindCoordinatorRequest(key="g"), 0)
        dc = await client.call(DescribeClusterRequest(), 1)
    finally:
        await client.aclose()
    return (md, md5), (fc, fc0), dc


async def test_each_client_is_told_the_address_of_its_listener(nursery, tmp_path):
    # Two listeners on loopback, each advertising a different name for itself.
    config = broker_config(
        tmp_path / "data",
        **{
            "listeners": "PLAINTEXT://127.0.0.1:0,PLAINTEXT_HOST://127.0.0.2:0",
            "listener.security.protocol.map": MAP,
            "advertised.listeners": "PLAINTEXT://kmock:0,PLAINTEXT_HOST://localhost:19092",
            "inter.broker.listener.name": "PLAINTEXT",
        },
    )
    broker = await nursery.start(serve, config)
    await broker.ready.wait()
    internal, external = broker.bound_ports["PLAINTEXT"], broker.bound_ports["PLAINTEXT_HOST"]
    for host, port, expected in [
        ("127.0.0.1", internal, ("kmock", internal)),  # advertised port 0: the bound one
        ("127.0.0.2", external, ("localhost", 19092)),
    ]:
        (md, md5), (fc, fc0), dc = await _views(host, port)
        assert [(b.node_id, b.host, b.port) for b in md.brokers] == [(0, *expected)]
        assert [(b.host, b.port) for b in md5.brokers] == [expected]
        assert [p.leader_id for t in md.topics for p in t.partitions] == [0]
        assert [(c.node_id, c.host, c.port, c.error_code) for c in fc.coordinators] == [
            (0, *expected, ErrorCode.NONE)
        ]
        assert (fc0.host, fc0.port) == expected
        assert [(b.host, b.port) for b in dc.brokers] == [expected]
    assert broker.bootstrap_servers == f"kmock:{internal},localhost:19092"


async def test_a_listener_left_out_of_advertised_listeners_advertises_nothing(nursery, tmp_path):
    """As in Kafka: the broker has no endpoint for that listener, so its clients are told of
    no broker, LISTENER_NOT_FOUND (v6+; LEADER_NOT_AVAILABLE before) for partitions, and
    COORDINATOR_NOT_AVAILABLE for coordinators."""
    config = broker_config(
        tmp_path / "data",
        **{
            "listeners": "PLAINTEXT://127.0.0.1:0,PLAINTEXT_HOST://127.0.0.2:0",
            "listener.security.protocol.map": MAP,
            "advertised.listeners": "PLAINTEXT://127.0.0.1:0",
        },
    )
    broker = await nursery.start(serve, config)
    await broker.ready.wait()
    (md, md5), (fc, fc0), dc = await _views("127.0.0.2", broker.bound_ports["PLAINTEXT_HOST"])
    assert md.brokers == []
    assert md5.brokers == []
    assert dc.brokers == []
    assert [(p.error_code, p.leader_id) for t in md.topics for p in t.partitions] == [
        (ErrorCode.LISTENER_NOT_FOUND, -1)
    ]
    assert [p.error_code for t in md5.topics for p in t.partitions] == [
        ErrorCode.LEADER_NOT_AVAILABLE
    ]
    assert [c.error_code for c in fc.coordinators] == [ErrorCode.COORDINATOR_NOT_AVAILABLE]
    assert fc0.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    # The advertised listener answers as usual.
    (md, _), (fc, _), _ = await _views("127.0.0.1", broker.bound_ports["PLAINTEXT"])
    assert [(b.host, b.port) for b in md.brokers] == [
        ("127.0.0.1", broker.bound_ports["PLAINTEXT"])
    ]


async def test_bad_listeners_stop_the_start_before_anything_is_written(tmp_path: Path):
    data = tmp_path / "data"
    config = broker_config(
        data, **{"listeners": "PLAINTEXT://127.0.0.1:0,PLAINTEXT_HOST://127.0.0.1:0"}
    )
    with pytest.raises(
        ConfigError, match="No security protocol defined for listener PLAINTEXT_HOST"
    ):
        await serve(config)
    assert not data.exists()
