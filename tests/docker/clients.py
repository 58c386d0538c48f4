"""kafka-python checks run both on the host (imported by the tests) and inside a container
of the example-client image (run as a script, one JSON line out), so that each side
produces, consumes and describes the cluster through the same code.

    python clients.py BOOTSTRAP describe
    python clients.py BOOTSTRAP produce TOPIC PREFIX COUNT
    python clients.py BOOTSTRAP consume TOPIC GROUP PREFIX COUNT
    python clients.py BOOTSTRAP committed GROUP

The script needs only kafka-python: it is mounted into a container that has nothing else.
"""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer

TIMEOUT_S = 30  # each step, against a broker that answered its health check


def describe(bootstrap: str) -> dict[str, Any]:
    """The cluster id and the broker addresses this client was given after bootstrapping."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
    try:
        cluster = admin.describe_cluster()
    finally:
        admin.close()
    return {
        "cluster_id": cluster["cluster_id"],
        "brokers": sorted(f"{b['host']}:{b['port']}" for b in cluster["brokers"]),
    }


def produce(bootstrap: str, topic: str, prefix: str, count: int) -> list[str]:
    """`count` records `<prefix>-<i>`, acks=all, each acknowledged; their values, sorted."""
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        values = [f"{prefix}-{i}" for i in range(count)]
        for future in [producer.send(topic, value.encode()) for value in values]:
            future.get(timeout=TIMEOUT_S)
    finally:
        producer.close()
    return sorted(values)


def consume(bootstrap: str, topic: str, group: str, prefix: str, count: int) -> list[str]:
    """Read until `count` records starting with `prefix` came (or the deadline), commit;
    those records' values, sorted."""
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=TIMEOUT_S * 1000,
    )
    values: list[str] = []
    deadline = time.monotonic() + TIMEOUT_S
    try:
        for message in consumer:
            value = message.value.decode()
            if value.startswith(f"{prefix}-"):
                values.append(value)
            if len(values) >= count or time.monotonic() > deadline:
                break
        consumer.commit()
    finally:
        consumer.close()
    return sorted(values)


def committed(bootstrap: str, group: str) -> dict[str, int]:
    """The group's committed offsets as the broker reports them ("topic-partition" -> offset)."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=TIMEOUT_S * 1000)
    try:
        offsets = admin.list_group_offsets({group: None})[group]
    finally:
        admin.close()
    return {f"{tp.topic}-{tp.partition}": meta.offset for tp, meta in sorted(offsets.items())}


def main(argv: list[str]) -> int:
    bootstrap, command, *args = argv
    if command == "describe":
        out: Any = describe(bootstrap)
    elif command == "produce":
        out = produce(bootstrap, args[0], args[1], int(args[2]))
    elif command == "consume":
        out = consume(bootstrap, args[0], args[1], args[2], int(args[3]))
    elif command == "committed":
        out = committed(bootstrap, args[0])
    else:
        print(f"unknown command {command!r}", file=sys.stderr)
        return 2
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
