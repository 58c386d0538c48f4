"""Topics at start (broker.startup_topics): the spec's grammar and its refusals, the topics
existing once the port accepts connections and before /readyz says ready, existing topics
kept as they are, and the pytest fixture's `topics=`."""

from __future__ import annotations

import urllib.error
import urllib.request
from pathlib import Path

import pytest
import trio

from broker.config import ConfigError, load_config
from broker.pytest_plugin import KmockBroker
from broker.server import serve
from broker.startup_topics import parse_create_topics
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic
from tests.broker.test_pytest_plugin import plugin_args
from tests.conftest import broker_config
from tests.wire import WireClient

CONFIG = load_config(overrides={"num.partitions": 4})

pytest_plugins = ["pytester"]


def parsed(spec: str) -> list[tuple[str, int, dict[str, str]]]:
    return [(t.name, t.num_partitions, t.configs) for t in parse_create_topics(spec, CONFIG)]


def test_spec_forms():
    assert parsed("orders:3,events:1:1:cleanup.policy=compact") == [
        ("orders", 3, {}),
        ("events", 1, {"cleanup.policy": "compact"}),
    ]
    # Configs after the replication factor or without it; several, continued after commas.
    assert parsed(" a:2:cleanup.policy=compact,retention.ms=60000 , b:-1:-1 ,c:1:compact") == [
        ("a", 2, {"cleanup.policy": "compact", "retention.ms": "60000"}),
        ("b", 4, {}),  # -1: num.partitions
        ("c", 1, {"cleanup.policy": "compact"}),  # wurstmeister's name:partitions:replicas:policy
    ]
    assert parsed("") == []


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("orders", "'orders' is not name:partitions[:replication][:config=value,...]"),
        ("orders:x", "'orders:x': partitions 'x' is not a number"),
        ("orders:0", "'orders:0': partitions must be at least 1 (or -1)"),
        ("orders:1:two", "'orders:1:two': replication 'two' is not a number"),
        (
            "orders:1:3",
            "'orders:1:3': Unable to replicate the partition 3 time(s): The target replication "
            "factor of 3 cannot be reached because only 1 broker(s) are registered.",
        ),
        ("orders:1:0", "'orders:1:0': replication must be at least 1 (or -1)"),
        ("bad/name:1", "'bad/name:1': illegal topic name 'bad/name'"),
        ("orders:1:1:nope", "'orders:1:1:nope': 'nope' is not config=value"),
        ("orders:1:1:retention.mss=5", "Unknown topic config name: retention.mss"),
        (
            "orders:1:1:cleanup.policy=sometimes",
            "Invalid value sometimes for configuration cleanup.policy",
        ),
        ("orders:1,orders:2", "topic orders is listed twice"),
        ("__consumer_offsets:50", "__consumer_offsets is internal"),
        ("orders:99999999", "Excessively large number of partitions per request."),
    ],
)
def test_malformed_specs_name_the_setting(spec, message):
    with pytest.raises(ConfigError) as info:
        parse_create_topics(spec, CONFIG)
    assert str(info.value).startswith("kmock.create.topics: ")
    assert message in str(info.value)


async def test_topics_exist_once_the_port_accepts_connections(tmp_path):
    config = broker_config(
        tmp_path / "data",
        **{
            "kmock.create.topics": "orders:3,events:1:1:cleanup.policy=compact,retention.ms=60000",
            "auto.create.topics.enable": False,
            "admin.port": 0,
        },
    )
    async with trio.open_nursery() as nursery:
        broker = await nursery.start(serve, config)
        # The port accepts connections from here on; the topics are there already.
        orders, events = broker.topics.get("orders"), broker.topics.get("events")
        assert len(orders.partitions) == 3
        assert orders.configs == {}
        assert len(events.partitions) == 1
        assert events.configs == {"cleanup.policy": "compact", "retention.ms": "60000"}
        assert events.partitions[0].log.config.compacts
        client = await WireClient.connect(broker)
        try:
            md = await client.call(
                MetadataRequest(
                    topics=[
                        MetadataRequestTopic(name="orders"),
                        MetadataRequestTopic(name="events"),
                    ],
                    allow_auto_topic_creation=False,
                ),
                12,
            )
        finally:
            await client.aclose()
        assert [(t.name, t.error_code, len(t.partitions)) for t in md.topics] == [
            ("orders", 0, 3),
            ("events", 0, 1),
        ]
        with trio.fail_after(10):
            await broker.ready.wait()
        code = await trio.to_thread.run_sync(
            _get, "http://{}:{}/readyz".format(*broker.admin_address)
        )
        assert code == 200
        nursery.cancel_scope.cancel()


def _get(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        return e.code


async def test_existing_topics_are_kept_as_they_are(tmp_path):
    data = tmp_path / "data"
    async with trio.open_nursery() as nursery:
        broker = await nursery.start(
            serve, broker_config(data, **{"kmock.create.topics": "orders:3"})
        )
        nursery.cancel_scope.cancel()
    spec = "orders:5:1:cleanup.policy=compact,fresh:2"
    async with trio.open_nursery() as nursery:
        broker = await nursery.start(serve, broker_config(data, **{"kmock.create.topics": spec}))
        orders = broker.topics.get("orders")
        assert len(orders.partitions) == 3
        assert orders.configs == {}
        assert len(broker.topics.get("fresh").partitions) == 2
        nursery.cancel_scope.cancel()


async def test_malformed_spec_stops_the_start_before_anything_is_written(tmp_path: Path):
    data = tmp_path / "data"
    with pytest.raises(ConfigError, match=r"kmock\.create\.topics: 'orders:three'"):
        await serve(broker_config(data, **{"kmock.create.topics": "ok:1,orders:three"}))
    assert not data.exists()


def test_kmock_broker_takes_topics(tmp_path):
    broker = KmockBroker(tmp_path, topics=["orders:3", "events:1:1:cleanup.policy=compact"])
    broker.start()
    try:
        assert len(broker.broker.topics.get("orders").partitions) == 3
        assert broker.broker.topics.get("events").configs == {"cleanup.policy": "compact"}
        broker.restart()  # the setting stays; the topics are kept
        assert len(broker.broker.topics.get("orders").partitions) == 3
    finally:
        broker.stop()


def test_fixture_marker_takes_topics(pytester):
    pytester.makepyfile(
        test_topics="""
import pytest

@pytest.mark.kmock_config(topics=["orders:3", "events:1:1:cleanup.policy=compact"])
def test_list(kmock):
    assert len(kmock.broker.topics.get("orders").partitions) == 3
    assert kmock.broker.topics.get("events").configs == {"cleanup.policy": "compact"}

@pytest.mark.kmock_config(topics="a:2,b:1")
def test_string(kmock):
    assert len(kmock.broker.topics.get("a").partitions) == 2
    assert kmock.broker.topics.get("b") is not None

@pytest.mark.kmock_config(topics=["bad:x"])
def test_malformed(kmock):
    pass
"""
    )
    result = pytester.runpytest_inprocess(*plugin_args(), "-p", "no:randomly")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ConfigError: kmock.create.topics: 'bad:x': partitions 'x'*"])


async def test_a_topic_that_cannot_be_created_stops_the_start(tmp_path: Path):
    """Known only once the logs are loaded: a name that collides with an existing topic's."""
    data = tmp_path / "data"
    async with trio.open_nursery() as nursery:
        await nursery.start(serve, broker_config(data, **{"kmock.create.topics": "a_b:1"}))
        nursery.cancel_scope.cancel()
    with pytest.raises(KafkaError) as info:
        await serve(broker_config(data, **{"kmock.create.topics": "a.b:1"}))
    assert info.value.code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert str(info.value.detail) == (
        "kmock.create.topics: cannot create a.b: Topic 'a.b' collides with existing topic: a_b"
    )
