"""serve(): the broker's nursery tree.

    serve nursery
    ├── listeners (trio.serve_listeners) ── connection nursery ── one task per connection
    │                                        (and its writer while responses are queued)
    ├── coordinator runtime: replay of __consumer_offsets, then its timer task
    ├── retention / compaction task
    ├── idle connection check (broker.connection.expire_idle_connections)
    ├── group-commit fsync loop, shared by all logs (broker.durability)
    └── admin HTTP endpoint (only with admin.port)

`serve` reports the `Broker` (broker.broker: what a handler reaches), with its bound
addresses, through `task_status.started(broker)` (port 0 works), so tests do
`broker = await nursery.start(serve, config)`. Cancelling the tree stops the
broker; on the way out every log is fsynced and closed (shielded), so a graceful stop
(SIGINT/SIGTERM in the CLI) loses nothing.
"""

from __future__ import annotations

import functools
import logging
import time
from typing import Any

import trio

from broker import routes
from broker.broker import Broker, parse_listeners
from broker.config import Config
from broker.connection import expire_idle_connections, serve_connection
from broker.durability import Durability
from protocol.errors import KafkaError

log = logging.getLogger("broker.server")

__all__ = ["Broker", "parse_listeners", "serve"]


async def _accept(broker: Broker, stream: trio.SocketStream) -> None:
    """Serve one accepted connection, unless max.connections are open already."""
    cid = next(broker.connection_ids)
    if broker.open_connections >= broker.config["max.connections"]:
        log.warning(
            "connection %d refused: max.connections=%d reached",
            cid,
            broker.config["max.connections"],
        )
        await stream.aclose()
        return
    broker.open_connections += 1
    try:
        await serve_connection(broker, stream, cid)
    except Exception:
        # Never let one connection take the server down; this is a bug, so say so loudly.
        log.exception("connection %d crashed", cid)
    finally:
        broker.open_connections -= 1


async def serve(config: Config, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run a broker until cancelled. Reports the `Broker` (with bound addresses) when listening."""
    from broker.runtime import CoordinatorRuntime

    started = time.monotonic()
    broker = Broker(config)
    broker.controls.route_table = routes.all_routes()
    if broker.journal is not None:
        broker.journal.routes = {r.api_key: r for r in broker.controls.route_table}
    await trio.to_thread.run_sync(broker.open)
    try:
        with trio.CancelScope() as cancel:
            broker.cancel_scope = cancel
            async with trio.open_nursery() as nursery:
                broker.durability = Durability(
                    nursery, config["group.commit.delay.ms"] / 1000, broker.clock
                )
                listeners = []
                for _, host, port in parse_listeners(config["listeners"]):
                    listeners.extend(await trio.open_tcp_listeners(port, host=host or None))
                for lst in listeners:
                    addr = lst.socket.getsockname()
                    broker.addresses.append((addr[0], addr[1]))
                broker.advertise()
                broker.coordinator = CoordinatorRuntime(broker)
                await nursery.start(broker.coordinator.run)
                nursery.start_soon(_housekeeping, broker)
                nursery.start_soon(expire_idle_connections, broker)
                if config["admin.port"] >= 0:
                    from broker.admin_http import serve_admin

                    await nursery.start(serve_admin, broker)
                nursery.start_soon(
                    trio.serve_listeners, functools.partial(_accept, broker), listeners
                )
                log.info(
                    "kmock listening on %s (cluster %s, data %s) in %.0f ms",
                    broker.bootstrap_servers,
                    broker.cluster_id,
                    broker.data_dir,
                    (time.monotonic() - started) * 1000,
                )
                task_status.started(broker)
    finally:
        with trio.CancelScope(shield=True):
            await trio.to_thread.run_sync(broker.close)
            log.info("kmock stopped")


async def _housekeeping(broker: Broker) -> None:
    """Retention and compaction, every log.retention.check.interval.ms / log.cleaner.backoff.ms."""
    from storage import apply_retention, compact

    retention_every = broker.config["log.retention.check.interval.ms"] / 1000
    compaction_every = broker.config["log.cleaner.backoff.ms"] / 1000
    clock = broker.clock  # a virtual one moves the schedule too (broker.controls.clock)
    next_retention = clock.now() + retention_every
    next_compaction = clock.now() + compaction_every
    while True:
        await clock.sleep_until(min(next_retention, next_compaction))
        now = clock.now()
        for topic in list(broker.topics.topics.values()):
            for p in topic.partitions:
                policy = p.log.config.cleanup_policy
                try:
                    if now >= next_retention and "delete" in policy:
                        apply_retention(p.log, clock.wall_ms())
                    if now >= next_compaction and "compact" in policy:
                        report = compact(p.log, clock.wall_ms())
                        if report.records_removed or report.tombstones_removed:
                            log.info("compacted %s-%d: %s", topic.name, p.index, report)
                except (OSError, KafkaError) as e:
                    log.error("housekeeping of %s-%d failed: %s", topic.name, p.index, e)
                await trio.lowlevel.checkpoint()
        if now >= next_retention:
            next_retention = now + retention_every
        if now >= next_compaction:
            next_compaction = now + compaction_every
