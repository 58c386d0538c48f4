"""aiokafka (asyncio) against kmock: every scenario of the matrix.

Each step of a scenario is a coroutine run by `asyncio.run` (`arun`) in the test's thread
(group members run their own loop in their own thread). Consumers commit by hand so resume
points are exact.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from contextlib import asynccontextmanager
from typing import Any

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic

from tests.integration import scenarios
from tests.integration.harness import (
    CODECS,
    MEMBER_AUTO_COMMIT,
    REQUEST_TIMEOUT_MS,
    GroupMember,
    Rec,
    encoded_headers,
    kafka_python_consumer_options,
    kafka_python_rec,
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
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        **kw,
    )
    await p.start()
    try:
        yield p
    finally:
        await p.stop()


def consumer(
    bootstrap: str, *topics: str, client_id: str = CLIENT_ID, **kw: Any
) -> AIOKafkaConsumer:
    return AIOKafkaConsumer(*topics, **kafka_python_consumer_options(bootstrap, client_id, **kw))


@asynccontextmanager
async def admin(bootstrap: str) -> AsyncIterator[AIOKafkaAdminClient]:
    a = AIOKafkaAdminClient(
        bootstrap_servers=bootstrap, client_id=CLIENT_ID, request_timeout_ms=REQUEST_TIMEOUT_MS
    )
    await a.start()
    try:
        yield a
    finally:
        await a.close()


async def produce(
    bootstrap: str, topic: str, prefix: str, n: int, *, start: int = 0, **kw: Any
) -> None:
    hdrs = encoded_headers()
    async with producer(bootstrap, **kw) as p:
        futures = [
            await p.send(topic, key=key(i).encode(), value=value(prefix, i).encode(), headers=hdrs)
            for i in range(start, n)
        ]
        await asyncio.gather(*futures)


async def take(c: AIOKafkaConsumer, n: int, *, commit: bool = False) -> list[Rec]:
    """Fetch until `n` records arrived (no more are taken); optionally commit each batch."""
    got: list[Rec] = []
    while len(got) < n:
        batch = await c.getmany(timeout_ms=100, max_records=n - len(got))
        for records in batch.values():
            got.extend(kafka_python_rec(r) for r in records)
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


def client(bootstrap: str) -> scenarios.Client:
    return scenarios.python_client(
        "aio", bootstrap, produce, consume_all, consume_and_commit, run=arun
    )


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
    scenarios.keys_and_headers(client(shared_broker.bootstrap_servers))


@pytest.mark.parametrize("codec", CODECS)
@scenario("compression-{codec}")
def test_compression(shared_broker, codec):
    scenarios.compression(client(shared_broker.bootstrap_servers), shared_broker, codec)


class Member(GroupMember):
    """One group member: its own thread running its own event loop, which runs while the
    member opens, polls and closes its consumer."""

    def _open(self) -> None:
        self.runner = asyncio.Runner()
        try:
            self.c = self.runner.run(self._start())
        except BaseException:
            self.runner.close()
            raise

    async def _start(self) -> AIOKafkaConsumer:
        c = consumer(
            self.bootstrap,
            self.topic,
            group_id=self.group,
            client_id=f"{CLIENT_ID}-{self.name}",
            **MEMBER_AUTO_COMMIT,
        )
        await c.start()
        return c

    def _poll(self) -> list[Rec]:
        batch = self.runner.run(self.c.getmany(timeout_ms=100))
        return [kafka_python_rec(r) for records in batch.values() for r in records]

    def _close(self) -> None:
        try:
            self.runner.run(self.c.stop())
        finally:
            self.runner.close()


@scenario("group-rebalance", deadline=90)
def test_group_rebalance(shared_broker):
    bootstrap = shared_broker.bootstrap_servers
    scenarios.group_rebalance(
        client(bootstrap), lambda topic, group, name: Member(bootstrap, topic, group, name)
    )


@scenario("commit-resume")
def test_commit_and_resume(shared_broker):
    scenarios.commit_and_resume(client(shared_broker.bootstrap_servers))


@scenario("restart-resume", deadline=90)
def test_resume_after_broker_restart(fresh_broker):
    b = fresh_broker()
    scenarios.resume_after_restart(client(b.bootstrap_servers), b)


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
    scenarios.idempotent_producer(client(shared_broker.bootstrap_servers), shared_broker)
