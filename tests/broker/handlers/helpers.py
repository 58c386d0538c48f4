"""Helpers shared by the handler tests: a running broker, kafka-python's admin client in a
worker thread, and records appended to a log directly (so that a test of one API does not
depend on Produce).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import trio
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from protocol.records import build_batch
from tests.reliability.inproc import running

TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER


@asynccontextmanager
async def running_broker(tmp_path: Any, **settings: Any) -> AsyncIterator[Any]:
    async with running(tmp_path, **settings) as broker:
        # __consumer_offsets is created by the first group lookup, as in Kafka; these tests
        # include it among the existing topics.
        broker.coordinator.offsets_topic()
        yield broker


async def admin(broker: Any, call: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """`call(admin_client, *args, **kwargs)` with a fresh KafkaAdminClient, in a thread."""

    def run() -> Any:
        client = KafkaAdminClient(
            bootstrap_servers=broker.bootstrap_servers,
            client_id="kmock-admin-test",
            request_timeout_ms=10000,
        )
        try:
            return call(client, *args, **kwargs)
        finally:
            client.close()

    return await trio.to_thread.run_sync(run, abandon_on_cancel=True)


def append_records(broker: Any, topic: str, n: int) -> None:
    """Records for partition 0, appended to its log directly: these tests are about the
    admin APIs, and must not depend on Produce."""
    batch = build_batch([(None, b"v%d" % i, [], broker.wall_ms()) for i in range(n)])
    broker.topics.partition(topic, 0).log.append(batch, wall_ms=broker.wall_ms())


def by_name(results: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["name"]: r for r in results}


async def describe_topic_configs(broker: Any, topic: str, **kw: Any) -> dict[str, Any]:
    described = await admin(
        broker,
        KafkaAdminClient.describe_configs,
        [ConfigResource(TOPIC, topic)],
        config_filter="all",
        **kw,
    )
    return described["topic"][topic]
