"""Two named listeners of one broker, each reached by kafka-python and confluent-kafka: every
client is told, in Metadata and FindCoordinator, the address of the listener it bootstrapped
from, and produces and consumes in a group through it.

This is the container setup of docker-compose.yml (an app container on the internal listener,
the host on PLAINTEXT_HOST) on loopback: the internal listener on 127.0.0.1, the "host" one
on 127.0.0.2, so that the two advertised addresses differ and each is reachable.
"""

from __future__ import annotations

from contextlib import closing
from typing import Any

import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import Producer as CkProducer
from confluent_kafka.admin import AdminClient
from kafka import KafkaConsumer, KafkaProducer

from tests.integration.harness import (
    REQUEST_TIMEOUT_MS,
    confluent_conf,
    confluent_consume,
    deadline,
    unique,
    wait_until,
)

pytestmark = pytest.mark.integration

LISTENERS = {
    "listeners": "PLAINTEXT://127.0.0.1:0,PLAINTEXT_HOST://127.0.0.2:0",
    "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
    "inter.broker.listener.name": "PLAINTEXT",
}


def _addresses(broker: Any) -> dict[str, tuple[str, int]]:
    ports = broker.broker.bound_ports
    return {
        "PLAINTEXT": ("127.0.0.1", ports["PLAINTEXT"]),
        "PLAINTEXT_HOST": ("127.0.0.2", ports["PLAINTEXT_HOST"]),
    }


def _kafka_python_round_trip(host: str, port: int, topic: str) -> dict[str, Any]:
    """Produce and consume one record in a group, bootstrapped from host:port; what the
    client was told of the broker and of the group's coordinator."""
    bootstrap = f"{host}:{port}"
    producer = KafkaProducer(bootstrap_servers=bootstrap, request_timeout_ms=REQUEST_TIMEOUT_MS)
    try:
        producer.send(topic, key=b"k", value=bootstrap.encode()).get(timeout=10)
        brokers = {(b.node_id, b.host, b.port) for b in producer._metadata.brokers()}
    finally:
        producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=unique("g"),
        auto_offset_reset="earliest",
        consumer_timeout_ms=1000,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )
    try:
        values: list[bytes] = []
        wait_until(
            lambda: values.extend(m.value for m in consumer) or values, 20, "kafka-python records"
        )
        # kafka-python keeps the FindCoordinator answer as a broker of its own.
        coordinator = consumer._client.cluster.broker_metadata(consumer._coordinator.coordinator_id)
        consumer.commit()
    finally:
        consumer.close()
    return {
        "brokers": brokers,
        "coordinator": (coordinator.host, coordinator.port),
        "values": values,
    }


def _confluent_round_trip(host: str, port: int, topic: str) -> dict[str, Any]:
    bootstrap = f"{host}:{port}"
    admin = AdminClient(confluent_conf(bootstrap, "listeners-admin"))
    brokers = {(b.id, b.host, b.port) for b in admin.list_topics(timeout=10).brokers.values()}
    producer = CkProducer(confluent_conf(bootstrap, "listeners-producer", acks="all"))
    producer.produce(topic, key=b"k", value=bootstrap.encode())
    assert producer.flush(10) == 0
    group = unique("g")
    values: list[str] = []
    with closing(
        CkConsumer(
            confluent_conf(
                bootstrap,
                "listeners-consumer",
                **{"group.id": group, "auto.offset.reset": "earliest"},
            )
        )
    ) as consumer:
        consumer.subscribe([topic])
        wait_until(
            lambda: values.extend(r.value for r in confluent_consume(consumer, 10)) or values,
            20,
            "confluent-kafka records",
        )
        consumer.commit(asynchronous=False)
        # The group's coordinator, as FindCoordinator told the admin client.
        described = admin.describe_consumer_groups([group])[group].result(timeout=10)
    return {
        "brokers": brokers,
        "coordinator": (described.coordinator.host, described.coordinator.port),
        "values": values,
    }


@deadline(90)
def test_each_client_sees_the_address_of_its_listener(fresh_broker):
    broker = fresh_broker(**LISTENERS)
    addresses = _addresses(broker)
    for name, (host, port) in addresses.items():
        topic = unique(f"listeners-{name.lower()}")
        kp = _kafka_python_round_trip(host, port, topic + "-kp")
        assert kp["brokers"] == {(0, host, port)}, name
        assert kp["coordinator"] == (host, port), name
        assert kp["values"] == [f"{host}:{port}".encode()]
        ck = _confluent_round_trip(host, port, topic + "-ck")
        assert ck["brokers"] == {(0, host, port)}, name
        assert ck["coordinator"] == (host, port), name
        assert ck["values"] == [f"{host}:{port}"]
    # The two listeners advertise two different addresses: the test tells them apart.
    assert len(set(addresses.values())) == 2
