"""Exactly-once through real clients: transactional producers of confluent-kafka (librdkafka),
aiokafka, kafka-python and kafkajs against kmock, read back by read_committed and
read_uncommitted consumers.

Every producer runs the same plan: a transaction of 10 records committed, one of 10
aborted (sent and acknowledged first, so that the records are in the log), one of 5
committed. A read_committed consumer must see exactly the 15 committed records, a
read_uncommitted one all 25. Then, with confluent-kafka (and kafka-python for the offsets):
consume-transform-produce commits the group's offsets only with its transaction; a second
producer with the same transactional.id fences the first; a transaction left open past its
timeout is aborted by the broker and stops holding read_committed consumers back; and a
restart of the broker keeps every transaction's outcome.

Markers are written after EndTxn is answered (as Kafka writes them), so a reader waits
until it has the records it expects and then checks that every partition is at its end
(for read_committed: the last stable offset) with nothing more.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from broker.pytest_plugin import KmockBroker
from tests.integration.harness import JS_DIR, deadline, run, unique

pytestmark = pytest.mark.integration

PARTITIONS = 3
PLAN = (("commit", 10), ("abort", 10), ("commit", 5))
READ_S = 20


# --- reading back -----------------------------------------------------------------------


def read_values(
    bootstrap: str,
    topic: str,
    isolation: str,
    expected: int,
    *,
    partitions: int = PARTITIONS,
    timeout: float = READ_S,
) -> list[str]:
    """Every value of `topic` a consumer with `isolation` reads: at least `expected` of them
    and then the end of every partition with nothing after it, or what there was when
    `timeout` ran out."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": unique("reader"),
            "isolation.level": isolation,
            "enable.partition.eof": True,
            "enable.auto.commit": False,
            "fetch.wait.max.ms": 50,
        }
    )
    try:
        consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values: list[str] = []
        at_end: set[int] = set()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if len(values) >= expected and len(at_end) == partitions:
                break
            message = consumer.poll(0.2)
            if message is None:
                continue
            error = message.error()
            if error is not None:
                if error.code() == KafkaError._PARTITION_EOF:
                    at_end.add(message.partition())
                    continue
                raise KafkaException(error)
            at_end.discard(message.partition())
            values.append(message.value().decode())
        return values
    finally:
        consumer.close()


def plan_values(prefix: str, outcome: str | None = None) -> list[str]:
    """The values the plan writes (only its steps with `outcome`, if given)."""
    return sorted(
        f"{prefix}-{step}-{i}"
        for step, (o, n) in enumerate(PLAN)
        if outcome is None or o == outcome
        for i in range(n)
    )


def check_plan(bootstrap: str, topic: str, prefix: str) -> None:
    committed = plan_values(prefix, "commit")
    assert len(committed) == 15
    got = read_values(bootstrap, topic, "read_committed", 15)
    assert sorted(got) == committed
    everything = plan_values(prefix)
    assert len(everything) == 25
    assert sorted(read_values(bootstrap, topic, "read_uncommitted", 25)) == everything


def create_topic(bootstrap: str, topic: str, partitions: int = PARTITIONS) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        future.result(10)


# --- the plan, per client -------------------------------------------------------------------


def confluent_plan(bootstrap: str, topic: str, prefix: str, transactional_id: str) -> None:
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": transactional_id, "linger.ms": 5}
    )
    producer.init_transactions(15)
    for step, (outcome, n) in enumerate(PLAN):
        producer.begin_transaction()
        for i in range(n):
            producer.produce(topic, key=f"key-{i}".encode(), value=f"{prefix}-{step}-{i}".encode())
        # librdkafka purges what is still queued when it aborts: send it first.
        assert producer.flush(15) == 0
        if outcome == "commit":
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)


def kafka_python_plan(bootstrap: str, topic: str, prefix: str, transactional_id: str) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(
        bootstrap_servers=bootstrap, transactional_id=transactional_id, linger_ms=5
    )
    try:
        producer.init_transactions()
        for step, (outcome, n) in enumerate(PLAN):
            producer.begin_transaction()
            futures = [
                producer.send(topic, key=f"key-{i}".encode(), value=f"{prefix}-{step}-{i}".encode())
                for i in range(n)
            ]
            producer.flush(15)
            for f in futures:
                f.get(15)
            if outcome == "commit":
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    finally:
        producer.close(5)


def aiokafka_plan(bootstrap: str, topic: str, prefix: str, transactional_id: str) -> None:
    from aiokafka import AIOKafkaProducer

    async def main() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, transactional_id=transactional_id, linger_ms=5
        )
        await producer.start()
        try:
            for step, (outcome, n) in enumerate(PLAN):
                await producer.begin_transaction()
                sent = [
                    await producer.send(
                        topic, key=f"key-{i}".encode(), value=f"{prefix}-{step}-{i}".encode()
                    )
                    for i in range(n)
                ]
                await asyncio.gather(*sent)
                if outcome == "commit":
                    await producer.commit_transaction()
                else:
                    await producer.abort_transaction()
        finally:
            await producer.stop()

    asyncio.run(asyncio.wait_for(main(), 45))


def kafkajs_plan(bootstrap: str, topic: str, prefix: str, transactional_id: str) -> None:
    plan = ",".join(f"{o}:{n}" for o, n in PLAN)
    p = run(
        [
            "node",
            "kafkajs-check.js",
            "--mode",
            "transactions",
            "--brokers",
            bootstrap,
            "--topic",
            topic,
            "--prefix",
            prefix,
            "--transactional-id",
            transactional_id,
            "--plan",
            plan,
            "--timeout",
            "40",
        ],
        "kafkajs-check transactions",
        50,
        cwd=JS_DIR,
    )
    steps = [e for e in p.events() if e.get("event") == "transaction"]
    assert [(s["outcome"], s["n"]) for s in steps] == list(PLAN)


PLANS: dict[str, Callable[[str, str, str, str], None]] = {
    "confluent-kafka": confluent_plan,
    "kafka-python": kafka_python_plan,
    "aiokafka": aiokafka_plan,
    "kafkajs": kafkajs_plan,
}


@deadline(90)
@pytest.mark.parametrize("client", list(PLANS))
def test_commit_abort_commit_reads_back_the_committed_records_only(
    client: str, shared_broker: KmockBroker
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic = unique(f"txn-{client}")
    create_topic(bootstrap, topic)
    PLANS[client](bootstrap, topic, "v", unique(f"tid-{client}"))
    check_plan(bootstrap, topic, "v")


# --- consume-transform-produce ------------------------------------------------------------


def committed_offsets(bootstrap: str, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed(
            [TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=10
        )
        return {tp.partition: tp.offset for tp in found if tp.offset >= 0}
    finally:
        consumer.close()


def transform_once(bootstrap: str, source: str, sink: str, group: str, commit: bool) -> int:
    """Read everything of `source` as a member of `group`, write it upper-cased to `sink`,
    and send the group's offsets in the same transaction; commit or abort it."""
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "isolation.level": "read_committed",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": 6000,
        }
    )
    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": f"{group}-ctp", "linger.ms": 5}
    )
    try:
        consumer.subscribe([source])
        producer.init_transactions(15)
        producer.begin_transaction()
        got = 0
        end = time.monotonic() + READ_S
        while got < 6 and time.monotonic() < end:
            message = consumer.poll(0.2)
            if message is None or message.error() is not None:
                continue
            producer.produce(sink, value=message.value().upper())
            got += 1
        assert got == 6, f"read {got} of 6 source records"
        assert producer.flush(15) == 0
        producer.send_offsets_to_transaction(
            consumer.position(consumer.assignment()), consumer.consumer_group_metadata(), 15
        )
        if commit:
            producer.commit_transaction(15)
        else:
            producer.abort_transaction(15)
        return got
    finally:
        consumer.close()


def kafka_python_transform_once(
    bootstrap: str, source: str, sink: str, group: str, commit: bool
) -> int:
    """`transform_once` with kafka-python's consumer and transactional producer."""
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KTopicPartition
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(
        source,
        bootstrap_servers=bootstrap,
        group_id=group,
        isolation_level="read_committed",
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        session_timeout_ms=6000,
        heartbeat_interval_ms=1000,
    )
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id=f"{group}-ctp")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        got = 0
        end = time.monotonic() + READ_S
        while got < 6 and time.monotonic() < end:
            for records in consumer.poll(timeout_ms=200).values():
                for r in records:
                    producer.send(sink, value=r.value.upper())
                    got += 1
        assert got == 6, f"read {got} of 6 source records"
        producer.flush(15)
        offsets = {
            KTopicPartition(source, p): OffsetAndMetadata(
                consumer.position(KTopicPartition(source, p)), "", -1
            )
            for p in range(PARTITIONS)
        }
        producer.send_offsets_to_transaction(offsets, group)
        if commit:
            producer.commit_transaction()
        else:
            producer.abort_transaction()
        return got
    finally:
        consumer.close()
        producer.close(5)


TRANSFORMS: dict[str, Callable[[str, str, str, str, bool], int]] = {
    "confluent-kafka": transform_once,
    "kafka-python": kafka_python_transform_once,
}


@deadline(120)
@pytest.mark.parametrize("client", list(TRANSFORMS))
def test_consume_transform_produce_commits_offsets_only_with_the_transaction(
    client: str,
    shared_broker: KmockBroker,
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    source, sink, group = unique("ctp-in"), unique("ctp-out"), unique("ctp-group")
    create_topic(bootstrap, source)
    create_topic(bootstrap, sink)
    plain = Producer({"bootstrap.servers": bootstrap})
    for i in range(6):
        plain.produce(source, value=f"r{i}".encode(), partition=i % PARTITIONS)
    assert plain.flush(10) == 0

    TRANSFORMS[client](bootstrap, source, sink, group, False)
    assert committed_offsets(bootstrap, group, source) == {}
    assert read_values(bootstrap, sink, "read_committed", 0) == []

    TRANSFORMS[client](bootstrap, source, sink, group, True)
    assert committed_offsets(bootstrap, group, source) == {0: 2, 1: 2, 2: 2}
    assert sorted(read_values(bootstrap, sink, "read_committed", 6)) == [f"R{i}" for i in range(6)]
    assert len(read_values(bootstrap, sink, "read_uncommitted", 12)) == 12


# --- fencing ------------------------------------------------------------------------------


@deadline(90)
def test_a_second_producer_with_the_same_transactional_id_fences_the_first(
    shared_broker: KmockBroker,
) -> None:
    bootstrap = shared_broker.bootstrap_servers
    topic, tid = unique("fence"), unique("fence-tid")
    create_topic(bootstrap, topic)
    config = {"bootstrap.servers": bootstrap, "transactional.id": tid, "linger.ms": 5}
    first = Producer(config)
    first.init_transactions(15)
    first.begin_transaction()
    for i in range(3):
        first.produce(topic, value=f"zombie-{i}".encode())
    assert first.flush(15) == 0

    second = Producer(config)
    second.init_transactions(15)  # aborts the first one's open transaction
    second.begin_transaction()
    for i in range(4):
        second.produce(topic, value=f"second-{i}".encode())
    second.commit_transaction(15)

    def finish_zombie() -> None:
        first.produce(topic, value=b"zombie-late")
        first.flush(5)
        first.commit_transaction(15)

    with pytest.raises(KafkaException) as raised:
        finish_zombie()
    error = raised.value.args[0]
    assert error.fatal() or error.code() in (
        KafkaError._FENCED,
        KafkaError.PRODUCER_FENCED,
        KafkaError.INVALID_PRODUCER_EPOCH,
    ), error

    assert sorted(read_values(bootstrap, topic, "read_committed", 4)) == [
        f"second-{i}" for i in range(4)
    ]


# --- the broker aborts a transaction past its timeout --------------------------------------


@deadline(90)
def test_a_transaction_past_its_timeout_is_aborted_and_stops_holding_readers_back(
    fresh_broker: Callable[..., KmockBroker],
) -> None:
    broker = fresh_broker(**{"transaction.abort.timed.out.transaction.cleanup.interval.ms": 200})
    bootstrap = broker.bootstrap_servers
    topic = unique("timeout")
    create_topic(bootstrap, topic, partitions=1)
    stuck = Producer(
        {
            "bootstrap.servers": bootstrap,
            "transactional.id": unique("stuck"),
            "transaction.timeout.ms": 1500,
            "linger.ms": 5,
        }
    )
    stuck.init_transactions(15)
    stuck.begin_transaction()
    stuck.produce(topic, value=b"never-committed")
    assert stuck.flush(15) == 0
    plain = Producer({"bootstrap.servers": bootstrap})
    plain.produce(topic, value=b"after")
    assert plain.flush(10) == 0

    started = time.monotonic()
    got = read_values(bootstrap, topic, "read_committed", 1, partitions=1, timeout=15)
    assert got == ["after"]
    # Not before the timeout (the open transaction holds the LSO), but soon after it.
    assert time.monotonic() - started < 10
    assert sorted(read_values(bootstrap, topic, "read_uncommitted", 2, partitions=1)) == [
        "after",
        "never-committed",
    ]


# --- restart ------------------------------------------------------------------------------


@deadline(120)
def test_a_restart_keeps_every_transactions_outcome(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = KmockBroker(data, {"num.partitions": PARTITIONS})
    broker.start()
    try:
        bootstrap = broker.bootstrap_servers
        create_topic(bootstrap, "kept")
        confluent_plan(bootstrap, "kept", "v", "kept-tid")
        check_plan(bootstrap, "kept", "v")
    finally:
        broker.stop()
    again = KmockBroker(data, {"num.partitions": PARTITIONS})
    again.start()
    try:
        bootstrap = again.bootstrap_servers
        check_plan(bootstrap, "kept", "v")
        # The transactional id survived with its producer: the next one carries on.
        producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "kept-tid"})
        producer.init_transactions(15)
        producer.begin_transaction()
        producer.produce("kept", value=b"after-restart")
        producer.commit_transaction(15)
        got = read_values(bootstrap, "kept", "read_committed", 16)
        assert sorted(got) == sorted([*plan_values("v", "commit"), "after-restart"])
    finally:
        again.stop()
