"""Produce and consume throughput with confluent-kafka: PERF-NOTES §5's harness.

    python bench/ck_client.py BOOTSTRAP TOPIC SIZE COUNT [consume-only | produce-only]

Runs in a fresh process per trial and prints one JSON object. The same code and settings
are used against the librdkafka mock cluster and against kmock:

  produce  acks=all, linger.ms=5, batch.size=1000000, no compression; every message to
           partition 0; a tight produce() loop with poll(0) every 1,024 messages and
           poll(0.5 ms) on BufferError, then flush(). Success is checked with the high
           watermark (it must have grown by COUNT).
  consume  assign + consume(batch), fetch.wait.max.ms=10. The mock keeps only the newest
           5 MiB / 100,000 message sets per partition, so the consumer reads the retained
           window [low, high) again and again (seeking back to low) until it has COUNT
           messages; against kmock the window is the whole log, read once.
           Two passes, each with a new consumer: first with fetch.queue.backoff.ms=10 (the
           number reported), then with librdkafka's default (1000 ms, as PERF-NOTES §5 ran).
           Why: once the prefetch queue exceeds queued.min.messages (100,000) or
           queued.max.messages.kbytes (64 MiB), librdkafka pauses fetching for
           fetch.queue.backoff.ms. Re-reading the mock's small window purges that queue at
           every seek, so the pause never happens there; reading kmock's whole log it
           does, and the default then measures librdkafka's 1 s timer, not the broker.
"""

from __future__ import annotations

import json
import os
import sys
import time

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

CONSUME_BATCH = 10_000
QUEUE_BACKOFF_MS = 10  # fetch.queue.backoff.ms of the first, reported consume pass
STALL_S = 30.0
PRODUCE_LIMIT_S = float(os.environ.get("BENCH_PRODUCE_LIMIT_S", "120"))


def _wait_topic(p: Producer, topic: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = p.list_topics(topic, timeout=5)
        t = md.topics.get(topic)
        if t is not None and t.error is None and 0 in t.partitions and t.partitions[0].leader >= 0:
            return
        time.sleep(0.05)
    raise RuntimeError(f"topic {topic} not available")


def produce(bootstrap: str, topic: str, size: int, count: int) -> dict[str, float]:
    p = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": "all",
            "linger.ms": 5,
            "batch.size": 1_000_000,
            "compression.type": "none",
        }
    )
    _wait_topic(p, topic)  # auto-creates the topic (Metadata), outside the timing
    payload = os.urandom(size)
    produce_ = p.produce
    poll = p.poll
    t0 = time.perf_counter()
    deadline = t0 + PRODUCE_LIMIT_S
    for i in range(count):
        while True:
            try:
                produce_(topic, payload, partition=0)
                break
            except BufferError:
                poll(0.0005)
                if time.perf_counter() > deadline:
                    raise RuntimeError(
                        f"produce not done after {PRODUCE_LIMIT_S:.0f} s ({i} of {count} queued)"
                    ) from None
        if not i & 1023:
            poll(0)
    left = p.flush(max(1.0, deadline - time.perf_counter()))
    t1 = time.perf_counter()
    if left:
        raise RuntimeError(f"{left} of {count} messages not delivered after {t1 - t0:.0f} s")
    return {"produce_s": t1 - t0}


def consume(
    bootstrap: str, topic: str, count: int, queue_backoff_ms: int | None
) -> dict[str, float]:
    config: dict[str, object] = {
        "bootstrap.servers": bootstrap,
        "group.id": "bench-consume",
        "enable.auto.commit": False,
        "fetch.wait.max.ms": 10,
        "enable.partition.eof": False,
    }
    if queue_backoff_ms is not None:
        config["fetch.queue.backoff.ms"] = queue_backoff_ms
    c = Consumer(config)
    tp = TopicPartition(topic, 0)
    low, high = c.get_watermark_offsets(tp, timeout=10)
    if high - low <= 0:
        raise RuntimeError("nothing to consume")
    got = 0
    errors = 0
    seeks = 0
    c.assign([TopicPartition(topic, 0, low)])
    position = low
    t0 = time.perf_counter()
    last_progress = t0
    while got < count:
        if position >= high:  # end of the retained window: read it again
            c.seek(TopicPartition(topic, 0, low))
            position = low
            seeks += 1
        # Never ask for more than the window holds: consume() waits for a full batch.
        want = min(CONSUME_BATCH, high - position, count - got)
        msgs = c.consume(num_messages=want, timeout=1.0)
        now = time.perf_counter()
        if not msgs:
            if now - last_progress > STALL_S:
                raise RuntimeError(f"consume stalled at {got} messages")
            continue
        last_progress = now
        for m in msgs:
            if m.error() is not None:
                errors += 1
        got += len(msgs)
        last = msgs[-1]
        if last.error() is None:
            position = last.offset() + 1
    t1 = time.perf_counter()
    c.close()
    if errors:
        raise RuntimeError(f"{errors} consume errors")
    return {"consume_s": t1 - t0, "consumed": got, "seeks": seeks, "window": high - low}


# "": produce, then consume; "consume-only": for bench/profile.py (the topic is filled);
# "produce-only": for a server that stores nothing (bench/kmock_nowrite.py).
MODES = ("", "consume-only", "produce-only")
USAGE = "usage: ck_client.py BOOTSTRAP TOPIC SIZE COUNT [consume-only | produce-only]"


def main() -> None:
    mode = sys.argv[5] if len(sys.argv) == 6 else ""
    if len(sys.argv) not in (5, 6) or mode not in MODES:
        raise SystemExit(USAGE)
    bootstrap, topic, size, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    out: dict[str, object] = {"size": size, "count": count}
    try:
        if mode != "consume-only":
            out.update(produce(bootstrap, topic, size, count))
        probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-probe"})
        low, high = probe.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        probe.close()
        out["low"], out["high"] = low, high
        if high != count and mode != "consume-only":
            raise RuntimeError(f"high watermark {high} after producing {count}")
        if mode != "produce-only":
            out.update(consume(bootstrap, topic, count, QUEUE_BACKOFF_MS))
            default = consume(bootstrap, topic, count, None)
            out["consume_default_s"] = default["consume_s"]
            out["consumed_default"] = default["consumed"]
    except (KafkaException, RuntimeError) as e:
        out["error"] = str(e)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
