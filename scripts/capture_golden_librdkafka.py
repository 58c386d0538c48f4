"""Capture golden request frames sent by librdkafka (confluent-kafka) to a running kmock.

Starts kmock in this process (port 0, a temporary data dir) behind a recording TCP proxy
(trio). kmock advertises the proxy's address, so every connection librdkafka opens, the
bootstrap one and the ones it makes from Metadata and FindCoordinator, goes through the
proxy. Then confluent-kafka creates a topic, produces idempotently with keys and headers,
consumes in a group (join, sync, heartbeats, commits, offset fetch, leave), lists and
describes groups and their offsets, and deletes a group and a topic.

The proxy keeps the first request frame of each (API, version) that the client sent and
writes it to tests/protocol/golden/librdkafka/<api>_v<N>.hex: one line of hex, the request
header included and the 4-byte size prefix left out (what FrameBuffer.next_frame returns),
as for the kafka_python captures. Old captures are removed first, so the directory always
holds exactly one run's frames. tests/protocol/test_golden_librdkafka.py decodes them and
checks them against the names used here. Run it again when kmock starts advertising new
versions (librdkafka picks the highest version both sides support):

    /tmp/venv/bin/python scripts/capture_golden_librdkafka.py
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from pathlib import Path

import trio

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from broker.config import load_config  # noqa: E402
from broker.routes import route_for  # noqa: E402
from broker.server import serve  # noqa: E402
from protocol.frames import FrameBuffer, peek_request_key  # noqa: E402

OUT = ROOT / "tests" / "protocol" / "golden" / "librdkafka"

# What the client does, spelled out again in tests/protocol/test_golden_librdkafka.py.
CLIENT_ID = "kmock-golden"
TOPIC = "golden-orders"
DOOMED_TOPIC = "golden-doomed"
GROUP = "golden-group"
RECORDS = 10
SESSION_TIMEOUT_MS = 6000


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


class Recorder:
    def __init__(self) -> None:
        self.frames: dict[tuple[int, int], bytes] = {}

    def feed(self, frame: bytes) -> None:
        key, version, _ = peek_request_key(frame)
        self.frames.setdefault((key, version), frame)


async def pump(src: trio.SocketStream, dst: trio.SocketStream, recorder: Recorder | None) -> None:
    frames = FrameBuffer(1 << 30)
    try:
        while data := await src.receive_some(1 << 16):
            if recorder is not None:
                frames.feed(data)
                while (frame := frames.next_frame()) is not None:
                    recorder.feed(bytes(frame))
            await dst.send_all(data)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    finally:
        await dst.aclose()


async def proxy(client: trio.SocketStream, upstream: tuple[str, int], recorder: Recorder) -> None:
    server = await trio.open_tcp_stream(*upstream)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(pump, client, server, recorder)
        nursery.start_soon(pump, server, client, None)


def drive_client(bootstrap: str) -> None:
    """Everything confluent-kafka does against the broker, in the order it does it."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    common = {"bootstrap.servers": bootstrap, "client.id": CLIENT_ID}
    admin = AdminClient(common)
    for name in (TOPIC, DOOMED_TOPIC):
        admin.create_topics(
            [NewTopic(name, num_partitions=3, replication_factor=1)], request_timeout=10
        )[name].result(timeout=15)

    producer = Producer({**common, "enable.idempotence": True, "linger.ms": 5})
    for i in range(RECORDS):
        producer.produce(
            TOPIC, key=f"key-{i}".encode(), value=f"value-{i}".encode(), headers=[("trace", b"t-1")]
        )
    assert producer.flush(15) == 0, "records not delivered"

    consumer = Consumer(
        {
            **common,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "session.timeout.ms": SESSION_TIMEOUT_MS,
            "heartbeat.interval.ms": 100,
            "fetch.wait.max.ms": 100,
        }
    )
    consumer.subscribe([TOPIC])
    got = 0
    while got < RECORDS:
        for m in consumer.consume(num_messages=RECORDS, timeout=1.0):
            if m.error() and m.error().code() != KafkaError._PARTITION_EOF:
                raise RuntimeError(m.error())
            if not m.error():
                got += 1
    consumer.commit(asynchronous=False)
    # Stay in the group for a few heartbeat intervals, polling all the while.
    until = time.monotonic() + 1.0
    while time.monotonic() < until:
        consumer.consume(num_messages=1, timeout=0.1)
    consumer.close()  # LeaveGroup

    groups = admin.list_consumer_groups(request_timeout=10).result(timeout=15)
    assert any(g.group_id == GROUP for g in groups.valid), groups
    admin.describe_consumer_groups([GROUP], request_timeout=10)[GROUP].result(timeout=15)
    admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(GROUP)], request_timeout=10)[
        GROUP
    ].result(timeout=15)
    for call in (
        lambda: admin.delete_consumer_groups([GROUP], request_timeout=10)[GROUP].result(15),
        lambda: admin.delete_topics([DOOMED_TOPIC], request_timeout=10)[DOOMED_TOPIC].result(15),
    ):
        try:
            call()
        except Exception as e:  # an API kmock does not serve yet: nothing to capture
            print(f"skipped: {e}", file=sys.stderr)


async def main() -> None:
    recorder = Recorder()
    with tempfile.TemporaryDirectory(prefix="kmock-golden-") as data_dir:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        proxy_port = listeners[0].socket.getsockname()[1]
        config = load_config(
            overrides={
                "listeners": "PLAINTEXT://127.0.0.1:0",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy_port}",
                "log.dirs": data_dir,
            }
        )
        async with trio.open_nursery() as nursery:
            broker = await nursery.start(serve, config)
            await broker.ready.wait()
            upstream = broker.addresses[0]

            async def accept(stream: trio.SocketStream) -> None:
                await proxy(stream, upstream, recorder)

            nursery.start_soon(trio.serve_listeners, accept, listeners)
            with trio.fail_after(120):
                await trio.to_thread.run_sync(drive_client, f"127.0.0.1:{proxy_port}")
            nursery.cancel_scope.cancel()

    OUT.mkdir(parents=True, exist_ok=True)
    for old in OUT.glob("*.hex"):
        old.unlink()
    for (key, version), frame in sorted(recorder.frames.items()):
        route = route_for(key)
        name = snake(route.name) if route is not None else f"api{key}"
        path = OUT / f"{name}_v{version}.hex"
        path.write_text(frame.hex() + "\n")
        print(f"wrote {path.relative_to(ROOT)} ({len(frame)} bytes)")


if __name__ == "__main__":
    trio.run(main)
