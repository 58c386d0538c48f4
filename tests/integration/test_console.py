"""The web console in a real browser: Debian's Chromium, headless, driven by npm's
playwright-core (tests/integration/console/console-check.js), after real clients made
something to look at.

kafka-python and confluent-kafka produce to a two-partition topic; a group runs through two
rebalances (a confluent-kafka member alone, a kafka-python member joins, then leaves with a
LeaveGroup), commits some offsets and empties. Then the browser checks that the console shows
the topic, finds a message by offset, shows the lag confluent-kafka's AdminClient reports
(list_consumer_group_offsets against the watermarks), resets the offsets to earliest (a dry
run first, then for real; the AdminClient sees them at 0 afterwards), and draws both
rebalances on the group's timeline with their members, and follows a partition live (a
record produced while it waits appears); bad input in its forms shows a message and changes
nothing. A screenshot of each page is kept under
tests/integration/console/artifacts/ (or $KMOCK_CONSOLE_ARTIFACTS) and its path printed.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.integration.harness import (
    KAFKA_PYTHON_MEMBER,
    Proc,
    confluent_conf,
    deadline,
    explain,
    kafka_python_consumer_options,
    unique,
    wait_until,
)

pytestmark = pytest.mark.integration

CONSOLE_DIR = Path(__file__).resolve().parent / "console"
ARTIFACTS = Path(os.environ.get("KMOCK_CONSOLE_ARTIFACTS", CONSOLE_DIR / "artifacts"))
CHROMIUM = os.environ.get("KMOCK_CHROMIUM", "/usr/bin/chromium")
BROWSER_TIMEOUT_S = 120
N = 6  # records per partition


@pytest.fixture(scope="session")
def console_check() -> list[str]:
    node = shutil.which("node")
    assert node, "node is not installed (make system-deps)"
    assert (CONSOLE_DIR / "node_modules" / "playwright-core").is_dir(), (
        "playwright-core is not installed: run `make node-deps` "
        "(npm ci in tests/integration/console)"
    )
    assert os.access(CHROMIUM, os.X_OK), f"{CHROMIUM} is missing: run `make system-deps`"
    return [node, str(CONSOLE_DIR / "console-check.js")]


def _produce(bootstrap: str, topic: str) -> None:
    """N records on partition 0 from kafka-python (JSON values, a header), N on partition 1
    from confluent-kafka (text values)."""
    from confluent_kafka import Producer
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="console-kp")
    try:
        for i in range(N):
            value = json.dumps({"i": i, "by": "kafka-python"}).encode()
            producer.send(
                topic,
                value=value,
                key=f"k-{i}".encode(),
                partition=0,
                headers=[("origin", b"kafka-python")],
            )
        producer.flush(30)
    finally:
        producer.close(10)
    errors: list[Any] = []
    p = Producer(confluent_conf(bootstrap, "console-ck"))
    for i in range(N):
        p.produce(
            topic,
            value=f"confluent-{i}".encode(),
            key=f"c-{i}".encode(),
            partition=1,
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
    assert p.flush(30) == 0
    assert not errors, errors


def _produce_one(bootstrap: str, topic: str, partition: int, value: bytes) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, client_id="console-live")
    try:
        producer.send(topic, value=value, partition=partition).get(30)
    finally:
        producer.close(10)


@deadline(240)
def test_console_in_a_browser(fresh_broker: Any, console_check: list[str]) -> None:
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
    from confluent_kafka.admin import AdminClient, NewTopic

    broker = fresh_broker(**{"admin.port": 0})
    bootstrap = broker.bootstrap_servers
    topic, group = unique("console"), unique("console-g")
    admin = AdminClient(confluent_conf(bootstrap, "console-admin"))
    admin.create_topics([NewTopic(topic, num_partitions=2, replication_factor=1)])[topic].result(30)
    _produce(bootstrap, topic)

    # Generation 1: a confluent-kafka member alone.
    a = Consumer(
        confluent_conf(
            bootstrap,
            "console-a",
            **{
                "group.id": group,
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "partition.assignment.strategy": "range",
            },
        )
    )

    def a_partitions() -> list[int]:
        a.poll(0.1)
        return sorted(tp.partition for tp in a.assignment())

    try:
        a.subscribe([topic])
        wait_until(lambda: a_partitions() == [0, 1], 30, "the first member's assignment")
        a.commit(
            offsets=[TopicPartition(topic, 0, 1), TopicPartition(topic, 1, 1)], asynchronous=False
        )
        # Generation 2 (the first rebalance): a kafka-python member joins.
        opts = kafka_python_consumer_options(
            bootstrap, "console-b", group_id=group, heartbeat_interval_ms=500
        )
        b = Proc([sys.executable, "-c", KAFKA_PYTHON_MEMBER, json.dumps(opts), topic], "console-b")
        with explain(b):

            def b_partitions() -> list[int] | None:
                events = [e for e in b.events() if e.get("event") == "assigned"]
                return events[-1]["partitions"] if events else None

            wait_until(
                lambda: len(a_partitions()) == 1 and len(b_partitions() or ()) == 1,
                45,
                "the rebalance to two members",
            )
            # Generation 3 (the second rebalance): it leaves.
            b.popen.send_signal(signal.SIGTERM)
            wait_until(lambda: a_partitions() == [0, 1], 45, "the rebalance back to one member")
            b.check(30)
        a.commit(
            offsets=[TopicPartition(topic, 0, 4), TopicPartition(topic, 1, 3)], asynchronous=False
        )
    finally:
        a.close()  # LeaveGroup: the group is Empty, so its offsets may be reset

    # The lag as confluent-kafka's AdminClient sees it.
    def committed() -> dict[int, int]:
        request = [ConsumerGroupTopicPartitions(group)]
        result = admin.list_consumer_group_offsets(request)[group].result(30)
        return {tp.partition: tp.offset for tp in result.topic_partitions if tp.topic == topic}

    watcher = Consumer(confluent_conf(bootstrap, "console-watermarks", **{"group.id": "unused"}))
    try:
        highs = {p: watcher.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in (0, 1)}
    finally:
        watcher.close()
    before = committed()
    assert before == {0: 4, 1: 3}
    lags = {str(p): highs[p] - before[p] for p in (0, 1)}
    assert lags == {"0": N - 4, "1": N - 3}

    host, port = broker.broker.admin_address
    spec = {
        "url": f"http://{host}:{port}",
        "topic": topic,
        "group": group,
        "lags": lags,
        "message": {"partition": 0, "offset": 3, "text": '"by": "kafka-python"'},
        "follow": {"partition": 1, "offset": N, "text": "arrived-live"},
        "members": ["console-a", "console-b"],
        "artifacts": str(ARTIFACTS),
        "chromium": CHROMIUM,
        "timeout_ms": 15_000,
    }
    shutil.rmtree(ARTIFACTS, ignore_errors=True)  # only this run's screenshots
    check = Proc([*console_check, json.dumps(spec)], "console-check", cwd=CONSOLE_DIR)
    try:
        wait_until(
            lambda: (
                check.popen.poll() is not None
                or any(e.get("event") == "follow-waiting" for e in check.events())
            ),
            BROWSER_TIMEOUT_S,
            "the console's live follow",
            check.output,
        )
        if check.popen.poll() is None:
            _produce_one(bootstrap, topic, 1, b"arrived-live")
        rc = check.wait(BROWSER_TIMEOUT_S)
    finally:
        for shot in (e["path"] for e in check.events() if e.get("event") == "screenshot"):
            print(f"console screenshot: {shot}")
    failed = [e for e in check.events() if e.get("event") == "failed"]
    assert not failed, f"console check failed: {failed}\n{check.output()}"
    assert rc == 0, check.output()
    checks = [e["check"] for e in check.events() if e.get("event") == "ok"]
    assert "reset: partition 1 committed at 0" in checks, check.output()
    assert any(c.startswith("timeline: a later one") for c in checks), check.output()
    # The reset reached __consumer_offsets: the admin client reads it back.
    assert committed() == {0: 0, 1: 0}
