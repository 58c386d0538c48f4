"""The test controls as a user drives them: each control is an HTTP request from the test
(kmock's /v1 admin endpoint) while a real client runs, and each scenario has a deadline.

  * two NOT_LEADER_OR_FOLLOWER on Produce: a confluent-kafka idempotent producer retries
    and every record is stored exactly once; the journal shows the failed and the
    successful Produce requests with their codes;
  * a kafka-python group member killed with SIGKILL (no LeaveGroup): one advance of the
    virtual clock past its session timeout, and the surviving member owns every partition
    within well under a second of wall time;
  * a kafkajs consumer: the journal says which offsets it committed, with which generation;
  * disconnects and delays injected on Produce (kafka-python) and Fetch (confluent-kafka):
    both recover, and every acknowledged record is read back, once.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import urllib.request
from collections import Counter
from typing import Any

import pytest

from tests.integration.harness import (
    KAFKA_PYTHON_MEMBER,
    Proc,
    check_idempotent,
    confluent_conf,
    consumed,
    deadline,
    explain,
    kafka_python_consumer_options,
    kafka_python_group_consumer,
    unique,
    wait_until,
)
from tests.integration.test_kafkajs import js

pytestmark = pytest.mark.integration

CONTROLS = {"admin.port": 0}


def control(broker: Any, method: str, path: str, body: Any = None) -> Any:
    """One control over HTTP, as a test in any language would send it."""
    host, port = broker.broker.admin_address
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://{host}:{port}{path}", data=data, method=method)
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())


# --- faults: an idempotent producer retries NOT_LEADER_OR_FOLLOWER ----------------------


@deadline(60)
def test_confluent_idempotent_producer_rides_out_not_leader(fresh_broker: Any) -> None:
    from confluent_kafka import Producer

    broker = fresh_broker(**CONTROLS)
    topic = unique("controls-idem")
    n = 50
    # Create the topic first, so that the faults hit record batches, not the first lookup.
    p = Producer(confluent_conf(broker.bootstrap_servers, "idem", **{"enable.idempotence": True}))
    p.list_topics(topic, timeout=10)
    added = control(
        broker,
        "POST",
        "/v1/faults",
        {"api": "Produce", "error": "NOT_LEADER_OR_FOLLOWER", "count": 2, "topic": topic},
    )
    assert added["faults"][0]["count"] == 2
    delivered: list[Any] = []
    errors: list[Any] = []

    def on_delivery(err: Any, msg: Any) -> None:
        (errors if err else delivered).append(err or msg.value().decode())

    for i in range(n):
        p.produce(topic, key=b"k%d" % i, value=b"v-%d" % i, on_delivery=on_delivery)
    assert p.flush(30) == 0
    assert not errors, errors
    assert sorted(delivered) == sorted(f"v-{i}" for i in range(n))
    # Exactly once on disk: one producer id, gapless sequences, n records.
    check_idempotent(broker.data_dir, topic, n)
    assert control(broker, "GET", "/v1/faults")["faults"] == []
    produces = control(broker, "GET", "/v1/journal?api=Produce")["entries"]
    codes = [e["error"] for e in produces]
    assert codes[:2] == ["NOT_LEADER_OR_FOLLOWER"] * 2, codes
    assert set(codes[2:]) == {"NONE"}, codes
    assert all(e["fault"] == added["faults"][0]["id"] for e in produces[:2])
    failed = produces[0]["response"]["topics"][0]
    assert failed["topic"] == topic
    assert failed["partitions"][0]["error_code"] == 6
    ok = produces[2]["response"]["topics"][0]["partitions"][0]
    assert (ok["error_code"], ok["base_offset"]) == (0, 0)  # the retried batch, first in


# --- virtual clock: a killed member's session expires on advance ------------------------


@deadline(90)
def test_kafka_python_member_killed_expires_on_virtual_advance(fresh_broker: Any) -> None:
    from kafka.admin import KafkaAdminClient, NewTopic

    broker = fresh_broker(**CONTROLS, **{"kmock.clock": "virtual"})
    topic, group = unique("controls-clock"), unique("controls-clock-g")
    # The topic exists, and both members have its partitions in their metadata, before they
    # subscribe: a kafka-python leader that joins without them assigns nothing, and its
    # rejoin can be lost (the client race KAFKA_PYTHON_POLL_MS describes).
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap_servers, client_id="setup")
    try:
        admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])
    finally:
        admin.close()
    base = {"group_id": group, "heartbeat_interval_ms": 200}
    # The member to be killed has the shortest session the broker takes; the survivor a
    # long one, so that one advance expires only the first.
    doomed_opts = kafka_python_consumer_options(
        broker.bootstrap_servers, "doomed", session_timeout_ms=6000, **base
    )
    doomed = Proc(
        [sys.executable, "-c", KAFKA_PYTHON_MEMBER, json.dumps(doomed_opts), topic], "doomed"
    )
    with explain(doomed):

        def doomed_partitions() -> list[int] | None:
            events = [e for e in doomed.events() if e.get("event") == "assigned"]
            return events[-1]["partitions"] if events else None

        wait_until(lambda: doomed_partitions() == [0, 1, 2, 3], 30, "the first member's join")
        survivor = kafka_python_group_consumer(
            topic,
            **kafka_python_consumer_options(
                broker.bootstrap_servers, "survivor", session_timeout_ms=30000, **base
            ),
        )
        try:

            def survivor_partitions() -> set[int]:
                survivor.poll(timeout_ms=100)
                return {tp.partition for tp in survivor.assignment()}

            wait_until(
                lambda: len(survivor_partitions()) == 2 and len(doomed_partitions() or ()) == 2,
                30,
                "the rebalance to two members",
            )
            os.killpg(doomed.popen.pid, signal.SIGKILL)  # no LeaveGroup
            doomed.popen.wait(10)
            # Without an advance nothing expires: the virtual clock has not moved.
            for _ in range(5):
                assert len(survivor_partitions()) == 2
            started = time.monotonic()
            clock = control(broker, "POST", "/v1/clock/advance", {"ms": 6_001})
            assert clock["elapsed_ms"] == 6_001
            wait_until(lambda: survivor_partitions() == {0, 1, 2, 3}, 10, "the survivor's takeover")
            took = time.monotonic() - started
            assert took < 1.0, f"the survivor owned every partition after {took:.2f} s"
            joins = [
                e
                for e in control(broker, "GET", f"/v1/journal?api=JoinGroup&group_id={group}")[
                    "entries"
                ]
                if e["client_id"] == "survivor" and e["error"] == "NONE"
            ]
            generations = [e["response"]["generation_id"] for e in joins]
            assert generations == sorted(generations)
            assert len(generations) >= 2
        finally:
            survivor.close()


# --- journal: what a kafkajs consumer committed, and in which generation ----------------


@deadline(90)
def test_kafkajs_commits_read_back_from_the_journal(fresh_broker: Any, kafkajs_check: Any) -> None:
    from confluent_kafka import Producer

    broker = fresh_broker(**CONTROLS, **{"num.partitions": 1})
    topic, group = unique("controls-js"), unique("controls-js-g")
    n = 5
    p = Producer(confluent_conf(broker.bootstrap_servers, "seed"))
    for i in range(n):
        p.produce(topic, key=b"key-%d" % i, value=f"{topic}-{i}".encode())
    assert p.flush(30) == 0
    reader = js(kafkajs_check, "group", broker.bootstrap_servers, topic=topic, group=group, n=n)
    with explain(reader):
        assert [r.offset for r in consumed(reader)] == list(range(n))
        member_id = reader.first("assigned")["member_id"]
        entries = control(broker, "GET", f"/v1/journal?group_id={group}")["entries"]
        joined = [
            e
            for e in entries
            if e["api"] == "JoinGroup" and e["response"].get("member_id") == member_id
        ]
        assert joined, [(e["api"], e["error"]) for e in entries]
        generation = joined[-1]["response"]["generation_id"]
        commits = [e for e in entries if e["api"] == "OffsetCommit"]
        assert commits
        committed = []
        for e in commits:
            request = e["request"]
            assert e["error"] == "NONE"
            assert request["member_id"] == member_id
            assert request["generation_id_or_member_epoch"] == generation
            for t in request["topics"]:
                assert t["topic"] == topic
                committed += [part["committed_offset"] for part in t["partitions"]]
        # kafkajs-check commits each record's offset + 1 as it hands it out.
        assert committed == list(range(1, n + 1))


# --- disconnects and delays: clients recover, nothing acknowledged is lost --------------


@deadline(90)
def test_disconnects_and_delays_lose_nothing_acknowledged(fresh_broker: Any) -> None:
    from confluent_kafka import Consumer
    from kafka import KafkaProducer

    broker = fresh_broker(**CONTROLS, **{"num.partitions": 1})
    topic = unique("controls-blip")
    n = 40
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap_servers,
        client_id="blip-producer",
        acks="all",
        retries=10,
        retry_backoff_ms=50,
        request_timeout_ms=5000,
        max_in_flight_requests_per_connection=1,
        linger_ms=0,
    )
    try:
        producer.partitions_for(topic)  # created, before the faults
        control(
            broker,
            "POST",
            "/v1/faults",
            [
                {"api": "Produce", "action": "disconnect", "count": 2},
                {"api": "Produce", "delay_ms": 200, "count": 3},
            ],
        )
        acked = []
        for i in range(n):
            producer.send(topic, f"v-{i}".encode()).get(timeout=30)
            acked.append(f"v-{i}")
            if i == n // 2:
                closed = control(broker, "POST", "/v1/connections/close", {})["closed"]
                assert any(c["client_id"] == "blip-producer" for c in closed)
        assert control(broker, "GET", "/v1/faults")["faults"] == []
    finally:
        producer.close(5)
    outcomes = Counter(
        e["outcome"] for e in control(broker, "GET", "/v1/journal?api=Produce")["entries"]
    )
    assert outcomes["disconnect"] == 2, outcomes
    # The consumer meets a dropped Fetch connection and slow fetches on its way.
    control(
        broker,
        "POST",
        "/v1/faults",
        [
            {"api": "Fetch", "action": "disconnect", "count": 2, "topic": topic},
            {"api": "Fetch", "delay_ms": 300, "count": 2, "topic": topic},
        ],
    )
    c = Consumer(
        confluent_conf(
            broker.bootstrap_servers,
            "blip-consumer",
            **{"group.id": unique("blip"), "auto.offset.reset": "earliest"},
        )
    )
    c.subscribe([topic])
    got: list[str] = []
    try:

        def read_all() -> bool:
            for m in c.consume(num_messages=100, timeout=0.2):
                if not m.error():
                    got.append(m.value().decode())
            return len(got) >= n

        wait_until(read_all, 60, "every acknowledged record", lambda: f"read {len(got)}")
    finally:
        c.close()
    assert sorted(got) == sorted(acked)  # each once: the faults fired before any append
    fetches = control(broker, "GET", f"/v1/journal?api=Fetch&topic={topic}")["entries"]
    assert sum(e["outcome"] == "disconnect" for e in fetches) == 2
