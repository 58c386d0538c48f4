"""The docker-compose demo client: produce a few records to kmock and read them back.

Runs in the `example-client` service (BOOTSTRAP_SERVERS=kmock:29092) once the broker's
/readyz health check passes; exits 0 when every record came back, 1 otherwise.
"""

from __future__ import annotations

import os
import sys
import time

from kafka import KafkaConsumer, KafkaProducer

BOOTSTRAP_SERVERS = os.environ.get("BOOTSTRAP_SERVERS", "localhost:9092")
TOPIC = os.environ.get("TOPIC", "demo")
COUNT = int(os.environ.get("COUNT", "10"))
TIMEOUT_S = 30


def main() -> int:
    run = str(int(time.time()))
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP_SERVERS, acks="all")
    for i in range(COUNT):
        producer.send(TOPIC, key=f"key-{i}".encode(), value=f"run {run} message {i}".encode())
    producer.flush()
    producer.close()
    print(f"produced {COUNT} records to {TOPIC} at {BOOTSTRAP_SERVERS}")

    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=BOOTSTRAP_SERVERS,
        group_id="example-client",
        auto_offset_reset="earliest",
        consumer_timeout_ms=TIMEOUT_S * 1000,
    )
    mine = []
    deadline = time.monotonic() + TIMEOUT_S
    for message in consumer:
        if message.value.decode().startswith(f"run {run} "):
            mine.append(message)
            print(
                f"consumed {message.topic}-{message.partition}@{message.offset}: "
                f"{message.key.decode()} = {message.value.decode()}"
            )
        if len(mine) == COUNT or time.monotonic() > deadline:
            break
    consumer.commit()
    consumer.close()
    if len(mine) != COUNT:
        print(f"only {len(mine)} of {COUNT} records came back", file=sys.stderr)
        return 1
    print("ok: every record came back")
    return 0


if __name__ == "__main__":
    sys.exit(main())
