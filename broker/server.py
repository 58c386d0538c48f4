"""serve(): the broker's nursery tree.

    serve nursery
    ├── listeners (trio.serve_listeners) ── connection nursery ── one task per connection
    │                                        (and its writer while responses are queued)
    ├── coordinator runtime: replay of __consumer_offsets, then its timer task
    ├── retention / compaction task
    ├── idle connection check (broker.connection.expire_idle_connections)
    ├── group-commit fsync loop, shared by all logs (broker.durability)
    └── admin HTTP endpoint (only with admin.port)

`serve` reports the bound addresses through `task_status.started(broker)` (port 0 works),
so tests do `broker = await nursery.start(serve, config)`. Cancelling the tree stops the
broker; on the way out every log is fsynced and closed (shielded), so a graceful stop
(SIGINT/SIGTERM in the CLI) loses nothing.
"""

from __future__ import annotations

import itertools
import logging
import os
import time
import uuid
from pathlib import Path
from typing import Any

import trio

from broker.config import Config
from broker.connection import expire_idle_connections, serve_connection
from broker.durability import Durability
from broker.metrics import Metrics
from broker.producer_ids import ProducerIdAllocator
from broker.topics import TopicRegistry
from protocol.errors import KafkaError

log = logging.getLogger("broker.server")

__all__ = ["Broker", "parse_listeners", "serve"]


def parse_listeners(spec: str) -> list[tuple[str, str, int]]:
    """ "PLAINTEXT://127.0.0.1:9092,..." -> [("PLAINTEXT", "127.0.0.1", 9092), ...]."""
    out = []
    for item in (s.strip() for s in spec.split(",")):
        if not item:
            continue
        name, sep, rest = item.partition("://")
        if not sep:
            raise ValueError(f"listener {item!r} is not NAME://host:port")
        host, _, port = rest.rpartition(":")
        if name.upper() != "PLAINTEXT":
            raise ValueError(f"listener {item!r}: only PLAINTEXT is supported")
        out.append((name.upper(), host.strip("[]"), int(port)))
    if not out:
        raise ValueError("no listeners configured")
    return out


def _read_meta(data_dir: Path, node_id: int) -> str:
    """cluster.id from meta.properties (Kafka's file), created on first start."""
    path = data_dir / "meta.properties"
    if path.exists():
        props = dict(
            line.split("=", 1)
            for line in path.read_text().splitlines()
            if "=" in line and not line.startswith("#")
        )
        if "cluster.id" in props:
            return props["cluster.id"].strip()
    import base64

    cluster_id = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"#\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")
    os.replace(tmp, path)
    return cluster_id


class Broker:
    """Everything a request handler may need; created by `serve`."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self.node_id: int = config["node.id"]
        self.data_dir = Path(config["log.dirs"])
        self.metrics = Metrics()
        self.topics = TopicRegistry(config, self.data_dir, self.metrics)
        self.cluster_id = ""
        self.addresses: list[tuple[str, int]] = []  # bound (host, port)
        self.advertised: list[tuple[str, int]] = []  # what clients are told
        self.ready = trio.Event()  # set once __consumer_offsets has been replayed
        self.started_at = time.monotonic()
        self.durability: Durability
        self.coordinator: Any = None  # broker.runtime.CoordinatorRuntime
        self.admin_address: tuple[str, int] | None = None  # set by broker.admin_http
        self.producer_ids: ProducerIdAllocator
        self._cancel: trio.CancelScope | None = None
        self._connection_ids = itertools.count(1)
        self.open_connections = 0
        self.connections: set[Any] = set()  # broker.connection._Connection, while served

    # Two clocks, named apart: monotonic for deadlines (autojump_clock drives it in tests),
    # wall time for timestamps stored in records.
    @staticmethod
    def now_ms() -> int:
        return int(trio.current_time() * 1000)

    @staticmethod
    def wall_ms() -> int:
        return int(time.time() * 1000)

    @property
    def bootstrap_servers(self) -> str:
        return ",".join(f"{h}:{p}" for h, p in self.advertised)

    def open(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Kafka refuses to start on a log dir it cannot write; so do we, before recovery
        # could serve half the logs. Raises OSError (EROFS, EACCES, ENOSPC) for the CLI.
        probe = self.data_dir / ".kmock-write-check"
        probe.write_bytes(b"")
        probe.unlink()
        self.cluster_id = _read_meta(self.data_dir, self.node_id)
        self.producer_ids = ProducerIdAllocator(self.data_dir)
        self.topics.load(self.wall_ms())

    def close(self) -> None:
        for topic in self.topics.topics.values():
            for p in topic.partitions:
                try:
                    p.log.sync()
                except KafkaError as e:
                    log.error("final fsync of %s failed: %s", p.log.path, e)
        self.topics.close()

    def shutdown(self) -> None:
        """Stop serving (graceful: logs are synced and closed on the way out)."""
        if self._cancel is not None:
            self._cancel.cancel()

    def _advertise(self) -> None:
        spec = self.config["advertised.listeners"]
        if spec:
            adv = [(h, p) for _, h, p in parse_listeners(spec)]
            # An advertised port 0 means "the port we bound".
            self.advertised = [
                (h, p or self.addresses[min(i, len(self.addresses) - 1)][1])
                for i, (h, p) in enumerate(adv)
            ]
        else:
            self.advertised = [
                (h if h not in ("", "0.0.0.0", "::") else "127.0.0.1", p) for h, p in self.addresses
            ]

    async def _connection(self, stream: trio.SocketStream) -> None:
        cid = next(self._connection_ids)
        if self.open_connections >= self.config["max.connections"]:
            log.warning(
                "connection %d refused: max.connections=%d reached",
                cid,
                self.config["max.connections"],
            )
            await stream.aclose()
            return
        self.open_connections += 1
        try:
            await serve_connection(self, stream, cid)
        except Exception:
            # Never let one connection take the server down; this is a bug, so say so loudly.
            log.exception("connection %d crashed", cid)
        finally:
            self.open_connections -= 1


async def serve(config: Config, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run a broker until cancelled. Reports the `Broker` (with bound addresses) when listening."""
    from broker.runtime import CoordinatorRuntime

    started = time.monotonic()
    broker = Broker(config)
    await trio.to_thread.run_sync(broker.open)
    try:
        with trio.CancelScope() as cancel:
            broker._cancel = cancel
            async with trio.open_nursery() as nursery:
                broker.durability = Durability(nursery, config["group.commit.delay.ms"] / 1000)
                listeners = []
                for _, host, port in parse_listeners(config["listeners"]):
                    listeners.extend(await trio.open_tcp_listeners(port, host=host or None))
                for lst in listeners:
                    addr = lst.socket.getsockname()
                    broker.addresses.append((addr[0], addr[1]))
                broker._advertise()
                broker.coordinator = CoordinatorRuntime(broker)
                await nursery.start(broker.coordinator.run)
                nursery.start_soon(_housekeeping, broker)
                nursery.start_soon(expire_idle_connections, broker)
                if config["admin.port"] >= 0:
                    from broker.admin_http import serve_admin

                    await nursery.start(serve_admin, broker)
                nursery.start_soon(trio.serve_listeners, broker._connection, listeners)
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
    next_retention = trio.current_time() + retention_every
    next_compaction = trio.current_time() + compaction_every
    while True:
        await trio.sleep_until(min(next_retention, next_compaction))
        now = trio.current_time()
        for topic in list(broker.topics.topics.values()):
            for p in topic.partitions:
                policy = p.log.config.cleanup_policy
                try:
                    if now >= next_retention and "delete" in policy:
                        apply_retention(p.log, broker.wall_ms())
                    if now >= next_compaction and "compact" in policy:
                        report = compact(p.log, broker.wall_ms())
                        if report.records_removed or report.tombstones_removed:
                            log.info("compacted %s-%d: %s", topic.name, p.index, report)
                except (OSError, KafkaError) as e:
                    log.error("housekeeping of %s-%d failed: %s", topic.name, p.index, e)
                await trio.lowlevel.checkpoint()
        if now >= next_retention:
            next_retention = now + retention_every
        if now >= next_compaction:
            next_compaction = now + compaction_every
