"""kmock's own client (`client.kafka`): Kafka's partitioner, addresses, and requests through a
real socket to the in-process broker (the `broker` fixture of tests/conftest.py), each call
in a worker thread because the client blocks."""

from __future__ import annotations

import socket

import pytest
import trio

from client import (
    EARLIEST,
    LATEST,
    ConnectionFailed,
    KafkaClient,
    default_partition,
    parse_host_port,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.fetch import FetchRequest
from protocol.partitioner import murmur2
from protocol.records import build_batch, decode_records, iter_batches


@pytest.mark.parametrize(
    ("key", "expected"),
    # Kafka's UtilsTest.testMurmur2.
    [
        (b"21", -973932308),
        (b"foobar", -790332482),
        (b"a-little-bit-long-string", -985981536),
        (b"a-little-bit-longer-string", -1486304829),
        (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
        (b"abc", 479470107),
    ],
)
def test_murmur2_is_kafkas(key, expected):
    assert murmur2(key) == expected


def test_default_partition_is_the_positive_hash_modulo_the_partition_count():
    # BuiltInPartitioner.partitionForKey: toPositive(murmur2(key)) % numPartitions.
    assert default_partition(b"21", 1 << 31) == -973932308 & 0x7FFFFFFF
    assert default_partition(b"abc", 7) == 479470107 % 7


@pytest.mark.parametrize(
    ("address", "expected"),
    [
        ("127.0.0.1:9093", ("127.0.0.1", 9093)),
        ("kafka", ("kafka", 9092)),
        ("[::1]:9094", ("::1", 9094)),
        ("a:1,b:2", ("a", 1)),
    ],
)
def test_parse_host_port(address, expected):
    assert parse_host_port(address) == expected


@pytest.mark.parametrize("address", [":9092", "host:port"])
def test_parse_host_port_rejects(address):
    with pytest.raises(ValueError, match=repr(address)):
        parse_host_port(address)


async def test_create_produce_list_offsets_fetch(broker):
    def scenario() -> tuple[int, dict, dict, list[bytes]]:
        with KafkaClient(broker.bootstrap_servers, timeout_s=10) as client:
            assert FetchRequest.API_KEY in client.api_versions
            client.create_topic("orders", num_partitions=2)
            assert client.partition_count("orders") == 2
            client.produce("orders", 1, build_batch([(b"k", b"v0", (), 1)]))
            base = client.produce("orders", 1, build_batch([(None, b"v1", (), 2)]))
            keys = [("orders", 0), ("orders", 1)]
            starts = client.list_offsets(keys, EARLIEST)
            ends = client.list_offsets(keys, LATEST)
            data = client.fetch("orders", {1: 0}, max_wait_ms=0)[1]
            view = memoryview(data.records)
            values = [
                r.value
                for pos, header in iter_batches(view)
                for r in decode_records(view[pos : pos + header.size])
            ]
        return base, starts, ends, values

    base, starts, ends, values = await trio.to_thread.run_sync(scenario)
    assert base == 1
    assert starts == {("orders", 0): 0, ("orders", 1): 0}
    assert ends == {("orders", 0): 0, ("orders", 1): 2}
    assert values == [b"v0", b"v1"]


async def test_errors_in_responses_are_kafka_errors(broker):
    def scenario() -> list[ErrorCode]:
        codes = []
        with KafkaClient(broker.bootstrap_servers, timeout_s=10) as client:
            client.create_topic("once", num_partitions=1)
            for call in (
                lambda: client.create_topic("once", num_partitions=1),
                lambda: client.partition_count("missing"),
                lambda: client.delete_topic("missing"),
            ):
                with pytest.raises(KafkaError) as e:
                    call()
                codes.append(e.value.code)
        return codes

    assert await trio.to_thread.run_sync(scenario) == [
        ErrorCode.TOPIC_ALREADY_EXISTS,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ]


def test_nothing_listening_is_a_connection_failure():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # bound, not listening: the connect is refused
        client = KafkaClient(f"127.0.0.1:{port}", timeout_s=5)
        with pytest.raises(ConnectionFailed, match=f"cannot connect to 127.0.0.1:{port}"):
            client.connect()


def test_a_request_before_connect_is_a_connection_failure():
    with pytest.raises(ConnectionFailed, match="not connected"):
        KafkaClient("127.0.0.1:9").send(FetchRequest(), 4)
