"""confluent-kafka producing batches of ~1 MB (bench §2's settings): received into buffers of
their own (protocol.frames.receive_buffer) and appended into blocks reserved ahead of the
segment (storage.segment, PREALLOCATE_*). Every record must read back byte for byte, before
and after a restart, and the segment file must hold exactly the batches."""

from __future__ import annotations

import os

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.integration.harness import deadline, unique, wait_until

pytestmark = pytest.mark.integration

COUNT = 400  # x 10 KiB: 4 MB, four 1 MB requests and several reservation steps
SIZE = 10240


def _produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
        }
    )
    failed: list[str] = []
    for v in values:
        p.produce(topic, v, partition=0, on_delivery=lambda e, m: e and failed.append(str(e)))
    assert p.flush(30) == 0
    assert not failed, failed[:3]


def _consume(bootstrap: str, topic: str, n: int) -> list[bytes]:
    c = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("large"),
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 10,
        }
    )
    got: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])

        def more() -> bool:
            for m in c.consume(num_messages=n - len(got), timeout=0.2):
                assert m.error() is None, m.error()
                got.append(m.value())
            return len(got) >= n

        wait_until(more, 30, f"{n} records (got {len(got)})")
    finally:
        c.close()
    return got


@deadline(90)
def test_one_megabyte_batches_read_back_whole_before_and_after_a_restart(fresh_broker):
    b = fresh_broker(**{"num.partitions": 1})
    topic = unique("large")
    values = [os.urandom(SIZE) for _ in range(COUNT)]
    _produce(b.bootstrap_servers, topic, values)
    assert _consume(b.bootstrap_servers, topic, COUNT) == values
    segment = b.data_dir / f"{topic}-0" / "00000000000000000000.log"
    size = os.stat(segment).st_size
    assert size > COUNT * SIZE
    b.restart()
    assert os.stat(segment).st_size == size  # recovery found whole batches, cut nothing
    more = [os.urandom(SIZE) for _ in range(COUNT)]
    _produce(b.bootstrap_servers, topic, more)
    assert _consume(b.bootstrap_servers, topic, 2 * COUNT) == values + more
