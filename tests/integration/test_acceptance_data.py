"""Acceptance of the foundation issue, as stated there, with real clients.

1. kafka-python (KafkaAdminClient, KafkaProducer, KafkaConsumer with assign/seek) and
   confluent-kafka (AdminClient, Producer, Consumer with assign) each create a 3-partition
   topic, produce 10,000 keyed records with headers in each of the four codecs, and read
   them back identical (the partitions and offsets the producer was told, keys, values,
   headers) and in order per partition; then again after a graceful restart
   (KmockBroker.restart()): the first 10,000 read back unchanged, and 10,000 more produced
   after them and read back.
2. An idempotent confluent-kafka producer delivers every record exactly once across a
   broker restart in the middle of the run. The restart cuts produce requests that the
   broker has written but not yet answered (in the strict durability mode acks=all is
   answered after the group-commit fsync, here every 100 ms); librdkafka sends them again
   with the same sequence numbers to the restarted broker, which must recognise them from
   producer state rebuilt from the log and answer with the original offsets.

Each scenario gets a broker of its own (the `fresh_broker` fixture), and a deadline.
"""

from __future__ import annotations

import logging
import re
import threading
from collections import Counter
from contextlib import closing
from typing import Any

import pytest
from confluent_kafka import Consumer as CkConsumer
from confluent_kafka import KafkaError
from confluent_kafka import Producer as CkProducer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin import NewTopic as CkNewTopic
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from tests.integration.harness import (
    CODECS,
    HEADERS,
    REQUEST_TIMEOUT_MS,
    LogLines,
    Rec,
    batches_on_disk,
    check_compressed,
    check_records,
    confluent_conf,
    confluent_consume,
    confluent_send,
    deadline,
    encoded_headers,
    kafka_python_rec,
    key,
    unique,
    value,
    wait_until,
)

pytestmark = pytest.mark.integration

N = 10_000
PARTITIONS = 3
# The topics are created explicitly: a broker that auto-created them would give them one
# partition, and producers would not find them at all.
BROKER = {"num.partitions": 1, "auto.create.topics.enable": False}


def expected(prefix: str, placed: dict[int, tuple[int, int]]) -> list[Rec]:
    """What a reader must get: record i where the producer was told it went, with its key
    and the headers, in (partition, offset) order."""
    return sorted(
        (Rec(p, o, key(i), value(prefix, i), tuple(HEADERS)) for i, (p, o) in placed.items()),
        key=lambda r: (r.partition, r.offset),
    )


def check_identical(got: list[Rec], prefix: str, placed: dict[int, tuple[int, int]]) -> None:
    """`got` is exactly what was produced: first the readable diagnosis (lost, duplicated or
    reordered records), then record for record against where the producer was told each
    record went."""
    n = max(placed) + 1
    check_records(got, prefix, n, headers=HEADERS, contiguous_from_zero=True)
    want = expected(prefix, placed)
    have = sorted(got, key=lambda r: (r.partition, r.offset))
    if have != want:
        diff = next(
            (i for i, (h, w) in enumerate(zip(have, want, strict=False)) if h != w),
            min(len(have), len(want)),
        )
        raise AssertionError(
            f"record {diff} in (partition, offset) order differs: read "
            f"{have[diff] if diff < len(have) else None}, produced "
            f"{want[diff] if diff < len(want) else None}"
        )


# --- kafka-python ---------------------------------------------------------------------------

KP_ID = "kmock-acceptance-kafka-python"


def kp_create_topic(bootstrap: str, topic: str) -> None:
    with closing(
        KafkaAdminClient(
            bootstrap_servers=bootstrap, client_id=KP_ID, request_timeout_ms=REQUEST_TIMEOUT_MS
        )
    ) as a:
        a.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)])
        (t,) = a.describe_topics([topic])
    assert t["error_code"] == 0, t
    assert sorted(p["partition_index"] for p in t["partitions"]) == list(range(PARTITIONS)), t


def kp_produce(
    bootstrap: str, topic: str, prefix: str, start: int, n: int, codec: str
) -> dict[int, tuple[int, int]]:
    """Records start..n-1, keyed, with headers; returns i -> (partition, offset) as acked."""
    hdrs = encoded_headers()
    p = KafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=KP_ID,
        compression_type=codec,
        linger_ms=5,
        max_block_ms=15000,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )
    try:
        futures = {
            i: p.send(topic, key=key(i).encode(), value=value(prefix, i).encode(), headers=hdrs)
            for i in range(start, n)
        }
        p.flush(timeout=60)
        acked = {i: f.get(timeout=1) for i, f in futures.items()}
    finally:
        p.close(timeout=5)
    return {i: (m.partition, m.offset) for i, m in acked.items()}


def kp_read(bootstrap: str, topic: str, n: int, timeout: float = 60) -> list[Rec]:
    """Every record of the topic, from offset 0 of each partition (assign and seek, no group);
    fails unless the partitions end right after the n-th."""
    c = KafkaConsumer(
        bootstrap_servers=bootstrap,
        client_id=KP_ID,
        group_id=None,
        enable_auto_commit=False,
        fetch_max_wait_ms=100,
        request_timeout_ms=REQUEST_TIMEOUT_MS,
    )
    got: list[Rec] = []
    try:
        tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
        c.assign(tps)
        for tp in tps:
            c.seek(tp, 0)

        def more() -> bool:
            for records in c.poll(timeout_ms=500, max_records=n - len(got)).values():
                got.extend(kafka_python_rec(r) for r in records)
            return len(got) >= n

        wait_until(more, timeout, f"{n} records of {topic} (got {len(got)})")
        ends = c.end_offsets(tps)
    finally:
        c.close()
    assert sum(ends.values()) == n, f"{topic} ends at {ends}: more than the {n} records produced"
    return got


# --- confluent-kafka -------------------------------------------------------------------------

CK_ID = "kmock-acceptance-confluent-kafka"


def ck_create_topic(bootstrap: str, topic: str) -> None:
    a = AdminClient(confluent_conf(bootstrap, CK_ID))
    futures = a.create_topics(
        [CkNewTopic(topic, num_partitions=PARTITIONS, replication_factor=1)], request_timeout=10
    )
    futures[topic].result(timeout=15)
    md = a.list_topics(topic, timeout=10).topics[topic]
    assert md.error is None, md.error
    assert sorted(md.partitions) == list(range(PARTITIONS)), md.partitions


class Deliveries:
    """Delivery reports of a confluent-kafka producer: where each record went, each failure,
    and any record reported twice."""

    def __init__(self) -> None:
        self.placed: dict[int, tuple[int, int]] = {}
        self.failed: list[str] = []
        self.twice: list[int] = []

    def __call__(self, err: KafkaError | None, msg: Any) -> None:
        if err is not None:
            self.failed.append(f"{msg.value()!r}: {err}")
            return
        i = int(msg.value().decode().rsplit("-", 1)[1])
        if i in self.placed:
            self.twice.append(i)
        self.placed[i] = (msg.partition(), msg.offset())

    def check(self, n: int, start: int = 0) -> None:
        assert not self.failed, f"{len(self.failed)} deliveries failed, e.g. {self.failed[:3]}"
        assert not self.twice, f"records reported delivered twice: {self.twice[:5]}"
        missing = sorted(set(range(start, n)) - set(self.placed))
        assert not missing, f"{len(missing)} records without a delivery report: {missing[:5]}"


def ck_produce(
    bootstrap: str, topic: str, prefix: str, start: int, n: int, codec: str
) -> dict[int, tuple[int, int]]:
    done = Deliveries()
    p = CkProducer(confluent_conf(bootstrap, CK_ID, **{"linger.ms": 5, "compression.type": codec}))
    confluent_send(p, topic, prefix, range(start, n), done)
    left = p.flush(60)
    assert left == 0, f"{left} records not delivered in 60 s"
    done.check(n, start)
    return done.placed


def ck_read(bootstrap: str, topic: str, n: int, timeout: float = 60) -> list[Rec]:
    """Every record of the topic from offset 0 of each partition (assign, no subscription);
    fails unless the partitions end right after the n-th."""
    c = CkConsumer(
        confluent_conf(
            bootstrap,
            CK_ID,
            **{
                "group.id": unique("acc-ck-reader"),  # required by the client; never joined
                "enable.auto.commit": False,
                "fetch.wait.max.ms": 100,
            },
        )
    )
    got: list[Rec] = []
    try:
        c.assign([CkTopicPartition(topic, p, 0) for p in range(PARTITIONS)])

        def more() -> bool:
            got.extend(confluent_consume(c, min(n - len(got), 10000), 0.5))
            return len(got) >= n

        wait_until(more, timeout, f"{n} records of {topic} (got {len(got)})")
        ends = {
            p: c.get_watermark_offsets(CkTopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
    finally:
        c.close()
    assert sum(ends.values()) == n, f"{topic} ends at {ends}: more than the {n} records produced"
    return got


# --- both clients, every codec, across a restart ----------------------------------------------

# client -> (create the topic, produce records start..n-1 in a codec returning i -> (partition,
# offset) as acknowledged, read n records back from offset 0)
ROUND_TRIPS = {
    "kafka-python": (kp_create_topic, kp_produce, kp_read),
    "confluent-kafka": (ck_create_topic, ck_produce, ck_read),
}


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("client", ROUND_TRIPS)
@deadline(120)
def test_codec_records_identical_before_and_after_restart(fresh_broker, client, codec):
    create, produce, read = ROUND_TRIPS[client]
    b = fresh_broker(**BROKER)
    topic = unique(f"acc-{client}-{codec}")
    create(b.bootstrap_servers, topic)

    placed = produce(b.bootstrap_servers, topic, codec, 0, N, codec)
    check_compressed(b.data_dir, topic, codec)
    check_identical(read(b.bootstrap_servers, topic, N), codec, placed)

    b.restart()
    check_identical(read(b.bootstrap_servers, topic, N), codec, placed)
    placed.update(produce(b.bootstrap_servers, topic, codec, N, 2 * N, codec))
    check_compressed(b.data_dir, topic, codec)
    check_identical(read(b.bootstrap_servers, topic, 2 * N), codec, placed)


# --- idempotent producer across a restart ------------------------------------------------------

IDEMPOTENT_N = 20_000
KEYS = 50  # records share keys, so that "in order per key" means something
# librdkafka (debug "msg") on a produce request cut by the restart: its records may be in
# the log, and are sent again with the same sequence numbers.
_CUT = re.compile(
    r"\[(\d+)\]: MessageSet with \d+ message\(s\) \(MsgId \d+, BaseSeq (\d+)\) "
    r"encountered error: .*MsgPossiblyPersisted"
)


@deadline(120)
def test_confluent_idempotent_producer_exactly_once_across_restart(fresh_broker):
    # In the strict durability mode acks=all is answered after the group-commit fsync; 100 ms
    # between fsyncs keeps written but unanswered requests in flight whenever the restart
    # comes.
    b = fresh_broker(**BROKER, **{"kmock.durability": "strict", "group.commit.delay.ms": 100})
    topic = unique("acc-ck-idem")
    ck_create_topic(b.bootstrap_servers, topic)

    lines = LogLines()
    debug_log = logging.getLogger(f"kmock.acceptance.rdkafka.{topic}")
    debug_log.addHandler(lines)
    debug_log.setLevel(logging.DEBUG)
    debug_log.propagate = False

    on_disk_at_stop: list[Any] = []
    restart_error: list[BaseException] = []

    def restart() -> None:
        try:
            b.stop()
            on_disk_at_stop.extend(batches_on_disk(b.data_dir, topic))
            b.start()
        except BaseException as e:  # re-raised in the test's thread below
            restart_error.append(e)

    done = Deliveries()
    p = CkProducer(
        confluent_conf(
            b.bootstrap_servers,
            CK_ID,
            **{
                "enable.idempotence": True,
                "linger.ms": 5,
                "batch.num.messages": 200,  # many requests in flight, not one huge one
                "message.timeout.ms": 60000,
                "logger": debug_log,
                "debug": "msg,eos",
            },
        )
    )
    restarter = threading.Thread(target=restart, name="acc-restart", daemon=True)
    acked_at_restart = -1
    for i in range(IDEMPOTENT_N):
        p.produce(topic, key=f"k{i % KEYS}".encode(), value=f"v-{i}".encode(), on_delivery=done)
        p.poll(0)
        if i == IDEMPOTENT_N // 2:
            # Midway: once a quarter is acknowledged (the log holds producer state to
            # rebuild), restart the broker while the rest is queued or in flight.
            def quarter_acked() -> bool:
                p.poll(0.05)
                return len(done.placed) >= IDEMPOTENT_N // 4

            wait_until(quarter_acked, 30, "a quarter of the records to be acknowledged")
            acked_at_restart = len(done.placed)
            restarter.start()
    left = p.flush(60)
    restarter.join(30)
    assert not restarter.is_alive(), "the broker restart did not finish in 30 s"
    if restart_error:
        raise restart_error[0]
    assert left == 0, f"{left} records not delivered in 60 s after the restart"
    assert acked_at_restart < IDEMPOTENT_N, "everything was acknowledged before the restart"
    done.check(IDEMPOTENT_N)

    # The run must have tested what it is about: a request cut by the restart whose batch
    # the broker had already written, sent again by librdkafka.
    cut = {(int(m[1]), int(m[2])) for m in map(_CUT.search, lines.lines) if m}
    written = {(h.partition, h.base_sequence) for h in on_disk_at_stop}
    assert cut & written, (
        f"the restart cut no request whose batch was already written (cut: {sorted(cut)}); "
        "the scenario did not exercise duplicate detection"
    )

    got = ck_read(b.bootstrap_servers, topic, IDEMPOTENT_N)
    twice = [v for v, count in Counter(r.value for r in got).items() if count > 1]
    assert not twice, f"{len(twice)} records stored twice, e.g. {twice[:5]}"
    assert {r.value for r in got} == {f"v-{i}" for i in range(IDEMPOTENT_N)}
    # Each retried batch was answered with its original offsets: every record is where its
    # delivery report said, and nowhere else.
    wrong = [
        (r.value, (r.partition, r.offset), done.placed[int(r.value.rsplit("-", 1)[1])])
        for r in got
        if done.placed[int(r.value.rsplit("-", 1)[1])] != (r.partition, r.offset)
    ]
    assert not wrong, f"{len(wrong)} records not where their delivery said, e.g. {wrong[:3]}"
    # Per key: one partition, values in produce order, offsets contiguous per partition.
    by_key: dict[str, list[Rec]] = {}
    for r in sorted(got, key=lambda r: (r.partition, r.offset)):
        by_key.setdefault(r.key, []).append(r)
    for k, recs in by_key.items():
        assert len({r.partition for r in recs}) == 1, f"key {k} in several partitions"
        order = [int(r.value.rsplit("-", 1)[1]) for r in recs]
        assert order == sorted(order), f"key {k}: values out of produce order: {order[:20]}"
    for part in range(PARTITIONS):
        offsets = sorted(r.offset for r in got if r.partition == part)
        assert offsets == list(range(len(offsets))), f"partition {part}: offsets have gaps"
    # And on disk: no batch written twice.
    batches = batches_on_disk(b.data_dir, topic)
    seqs = [(h.partition, h.producer_id, h.producer_epoch, h.base_sequence) for h in batches]
    assert len(seqs) == len(set(seqs)), "a batch was written twice"
    assert sum(h.records_count for h in batches) == IDEMPOTENT_N
