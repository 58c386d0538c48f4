"""aiokafka (asyncio) against kmock: every scenario of the matrix.

Each scenario is a coroutine run by `asyncio.run` in the test's thread (group members run
their own loop in their own thread). Consumers commit by hand so resume points are exact.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    HEADERS,
    HEARTBEAT_MS,
    SESSION_TIMEOUT_MS,
    Rec,
    check_compressed,
    check_idempotent,
    check_records,
    key,
    unique,
    value,
)
from tests.integration.matrix import scenario

pytestmark = pytest.mark.integration

CLIENT = "aiokafka"
NOT_EXPRESSIBLE: dict[str, str] = {}

CLIENT_ID = "kmock-aiokafka"


def arun(coro: Awaitable[Any], timeout: float = 45) -> Any:
    async def bounded() -> Any:
        return await asyncio.wait_for(coro, timeout)

    return asyncio.run(bounded())


@asynccontextmanager
async def producer(bootstrap: str, **kw: Any) -> AsyncIterator[AIOKafkaProducer]:
    p = AIOKafkaProducer(
        bootstrap_servers=bootstrap,
        client_id=CLIENT_ID,
        acks="all",
        linger_ms=5,
        request_timeout_ms=10000,
        **kw,
    )
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


def consumer(bootstrap: str, *topics: str, **kw: Any) -> AIOKafkaConsumer:
    opts: dict[str, Any] = {
        "bootstrap_servers": bootstrap,
        "client_id": CLIENT_ID,
        "auto_offset_reset": "earliest",
        "enable_auto_commit": False,
        "fetch_max_wait_ms": 100,
        "session_timeout_ms": SESSION_TIMEOUT_MS,
        "heartbeat_interval_ms": HEARTBEAT_MS,
        "request_timeout_ms": 10000,
    }
    opts.update(kw)
    return AIOKafkaConsumer(*topics, **opts)


@asynccontextmanager
async def admin(bootstrap: str) -> AsyncIterator[AIOKafkaAdminClient]:
    a = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, client_id=CLIENT_ID, request_timeout_ms=10000
    )
    await a.start()
    try:
        yield a
    finally:
        await a.close()


async def produce(
    bootstrap: str, topic: str, prefix: str, n: int, *, start: int = 0, **kw: Any
) -> None:
    hdrs = [(k, v.encode()) for k, v in HEADERS]
    async with producer(bootstrap, **kw) as p:
        futures = [
            await p.send(topic, key=key(i).encode(), value=value(prefix, i).encode(), headers=hdrs)
            for i in range(start, n)
        ]
        await asyncio.gather(*futures)


def rec(r: Any) -> Rec:
    return Rec(
        r.partition,
        r.offset,
        r.key.decode() if r.key is not None else None,
        r.value.decode() if r.value is not None else None,
        tuple((k, v.decode()) for k, v in r.headers or ()),
    )


async def take(c: AIOKafkaConsumer, n: int, *, commit: bool = False) -> list[Rec]:
    """Fetch until `n` records arrived (no more are taken); optionally commit each batch."""
    got: list[Rec] = []
    while len(got) < n:
        batch = await c.getmany(timeout_ms=100, max_records=n - len(got))
        for records in batch.values():
            got.extend(rec(r) for r in records)
        if commit and batch:
            await c.commit()
    return got


async def consume_all(bootstrap: str, topic: str, n: int) -> list[Rec]:
    c = consumer(bootstrap)
    await c.start()
    try:
        parts = None
        while not parts:
            await c._client.force_metadata_update()
            parts = c.partitions_for_topic(topic)
        c.assign([TopicPartition(topic, p) for p in sorted(parts)])
        return await take(c, n)
    finally:
        await c.stop()


@asynccontextmanager
async def group_consumer(bootstrap: str, topic: str, group: str) -> AsyncIterator[AIOKafkaConsumer]:
    c = consumer(bootstrap, topic, group_id=group)
    await c.start()
    try:
        yield c
    finally:
        await c.stop()


async def consume_and_commit(bootstrap: str, topic: str, group: str, n: int) -> list[Rec]:
    async with group_consumer(bootstrap, topic, group) as c:
        return await take(c, n, commit=True)


@scenario("metadata")
def test_metadata(shared_broker):
    topic = unique("aio-meta")

    async def main() -> tuple[Any, Any]:
        await produce(shared_broker.bootstrap_servers, topic, "m", 3)
        async with admin(shared_broker.bootstrap_servers) as a:
            return await a.describe_cluster(), await a.describe_topics([topic])

    cluster, topics = arun(main())
    scenarios.check_cluster(
        shared_broker,
        cluster_id=cluster.get("cluster_id"),
        controller_id=cluster.get("controller_id"),
        brokers=[(b["node_id"], b["host"], b["port"]) for b in cluster["brokers"]],
    )
    (t,) = topics
    assert t["error_code"] == 0
    assert t["topic"] == topic
    scenarios.check_partitions(
        shared_broker,
        [
            (p["partition"], p["leader"], p["replicas"], p["isr"], p["error_code"])
            for p in t["partitions"]
        ],
    )


@scenario("create-delete-topic")
def test_create_delete_topic(shared_broker):
    topic = unique("aio-admin")

    async def main() -> None:
        async with admin(shared_broker.bootstrap_servers) as a:
            created = await a.create_topics([NewTopic(topic, 3, 1)])
            errors = [tuple(t[:2]) for t in created.topic_errors]
            assert errors == [(topic, 0)], f"CreateTopics answered {created}"
            (t,) = await a.describe_topics([topic])
            assert t["error_code"] == 0, t
            assert len(t["partitions"]) == 3, t
            assert topic in await a.list_topics()
            deleted = await a.delete_topics([topic])
            assert [tuple(t[:2]) for t in deleted.topic_error_codes] == [(topic, 0)], deleted
            assert topic not in await a.list_topics()

    arun(main())


@scenario("keys-headers")
def test_keys_and_headers(shared_broker):
    topic = unique("aio-keys")

    async def main() -> list[Rec]:
        await produce(shared_broker.bootstrap_servers, topic, "kh", 200)
        return await consume_all(shared_broker.bootstrap_servers, topic, 200)

    check_records(arun(main()), "kh", 200, headers=HEADERS, contiguous_from_zero=True)


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(shared_broker, codec):
    topic = unique(f"aio-{codec}")
    arun(produce(shared_broker.bootstrap_servers, topic, codec, 200, compression_type=codec))
    check_compressed(shared_broker.data_dir, topic, codec)
    got = arun(consume_all(shared_broker.bootstrap_servers, topic, 200))
    check_records(got, codec, 200, headers=HEADERS, contiguous_from_zero=True)


class Member:
    """One group member: its own thread running its own event loop."""

    def __init__(self, bootstrap: str, topic: str, group: str, name: str) -> None:
        self.name = name
        self._assignment: frozenset[int] | None = None
        self._records: list[Rec] = []
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=lambda: asyncio.run(self._run(bootstrap, topic, group)),
            name=f"aio-member-{name}",
            daemon=True,
        )
        self._thread.start()

    async def _run(self, bootstrap: str, topic: str, group: str) -> None:
        try:
            c = consumer(
                bootstrap,
                topic,
                group_id=group,
                client_id=f"{CLIENT_ID}-{self.name}",
                enable_auto_commit=True,
                auto_commit_interval_ms=500,
            )
            await c.start()
            try:
                while not self._stop.is_set():
                    batch = await c.getmany(timeout_ms=100)
                    for records in batch.values():
                        self._records.extend(rec(r) for r in records)
                    self._assignment = frozenset(tp.partition for tp in c.assignment())
            finally:
                await c.stop()
        except BaseException as e:  # reported through assignment()/stop()
            self._error = e

    def assignment(self) -> frozenset[int] | None:
        self._raise()
        return self._assignment

    def records(self) -> list[Rec]:
        return list(self._records)

    def stop(self, timeout: float = 15) -> None:
        self._stop.set()
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"member {self.name} did not stop in {timeout} s"
        self._raise()

    def describe(self) -> str:
        return (
            f"member {self.name}: assignment {sorted(self._assignment or ())}, "
            f"{len(self._records)} records, error {self._error!r}"
        )

    def _raise(self) -> None:
        if self._error is not None:
            raise AssertionError(f"member {self.name} failed: {self._error!r}") from self._error


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(shared_broker):
    topic, group = unique("aio-group"), unique("aio-group")
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        start_member=lambda name: Member(bootstrap, topic, group, name),
        produce=lambda prefix, n: arun(produce(bootstrap, topic, prefix, n)),
    )


@scenario("commit-resume")
def test_commit_and_resume(shared_broker):
    topic, group = unique("aio-commit"), unique("aio-commit")
    bootstrap = shared_broker.bootstrap_servers

    async def main() -> list[Rec]:
        await produce(bootstrap, topic, "c", 200)
        first = await consume_and_commit(bootstrap, topic, group, 120)
        rest = await consume_and_commit(bootstrap, topic, group, 80)
        return first + rest

    check_records(arun(main()), "c", 200)


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(fresh_broker):
    b = fresh_broker()
    topic, group = unique("aio-restart"), unique("aio-restart")
    bootstrap = b.bootstrap_servers

    async def before() -> list[Rec]:
        await produce(bootstrap, topic, "r", 200)
        return await consume_and_commit(bootstrap, topic, group, 120)

    async def after() -> tuple[list[Rec], list[Rec]]:
        await produce(bootstrap, topic, "r", 260, start=200)
        rest = await consume_and_commit(bootstrap, topic, group, 140)
        return rest, await consume_all(bootstrap, topic, 260)

    first = arun(before())
    b.restart()
    rest, everything = arun(after())
    check_records(first + rest, "r", 260)
    check_records(everything, "r", 260, contiguous_from_zero=True)


@scenario("list-describe-groups")
def test_list_and_describe_groups(shared_broker):
    topic, group = unique("aio-desc"), unique("aio-desc")
    bootstrap = shared_broker.bootstrap_servers

    async def main() -> tuple[Any, ...]:
        await produce(bootstrap, topic, "d", 30)
        async with group_consumer(bootstrap, topic, group) as c, admin(bootstrap) as a:
            await take(c, 30, commit=True)
            ends = await c.end_offsets([TopicPartition(topic, p) for p in range(3)])
            listed = await a.list_consumer_groups()
            described = await a.describe_consumer_groups([group])
            offsets = await a.list_consumer_group_offsets(group)
            return ends, listed, described, offsets

    ends, listed, described, offsets = arun(main())
    assert (group, "consumer") in [tuple(g[:2]) for g in listed], listed
    (response,) = described
    (g,) = response.to_object()["groups"]
    assert g["error_code"] == 0, g
    assert g["group"] == group, g
    assert g["state"] == "Stable", g
    assert g["protocol_type"] == "consumer", g
    assert g["protocol"] in ("range", "roundrobin"), g
    (m,) = g["members"]
    assert m["client_id"] == CLIENT_ID, m
    committed = {tp.partition: om.offset for tp, om in offsets.items() if tp.topic == topic}
    assert committed == {tp.partition: end for tp, end in ends.items()}


@scenario("idempotent-producer")
def test_idempotent_producer(shared_broker):
    topic = unique("aio-idem")
    arun(produce(shared_broker.bootstrap_servers, topic, "i", 200, enable_idempotence=True))
    check_idempotent(shared_broker.data_dir, topic, 200)
    check_records(
        arun(consume_all(shared_broker.bootstrap_servers, topic, 200)),
        "i",
        200,
        contiguous_from_zero=True,
    )
