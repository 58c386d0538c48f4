"""Broker: everything a request handler may reach through `RequestContext.broker`.

One `Broker` per running server, created by `broker.server.serve`: its settings, node and
cluster ids, the topic registry, the metrics, group commit, the producer id allocator, the
coordinator runtime, the bound and advertised addresses and the connections being served.
It imports none of the modules that serve requests (connection, routes, handlers), which
import it.
"""

from __future__ import annotations

import itertools
import logging
import os
import ssl
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import trio

from broker import listeners
from broker.cluster_state import check_settings as check_cluster_settings
from broker.config import Config, ConfigError
from broker.controls import Controls
from broker.controls.clock import Clock, make_clock
from broker.controls.faults import FaultTable
from broker.limits import ConnectionQuotas, MemoryPool
from broker.listeners import ListenerSetup
from broker.metrics import Metrics
from broker.producer_ids import ProducerIdAllocator
from broker.startup_topics import create_startup_topics, startup_topics
from broker.topics import TopicRegistry
from protocol.errors import KafkaError

if TYPE_CHECKING:
    from broker.controls.journal import Journal
    from broker.durability import Durability
    from broker.runtime import CoordinatorRuntime
    from broker.txn_runtime import TransactionRuntime

log = logging.getLogger("broker.server")  # its messages are the server's start and stop

__all__ = ["Broker", "ServedConnection", "listener_setup"]


def listener_setup(config: Config) -> ListenerSetup:
    """The checked listener settings of `config` (broker.listeners).

    Raises:
      ConfigError: one message naming the setting at fault.
    """
    try:
        return listeners.listener_setup(
            config["listeners"],
            config["advertised.listeners"],
            config["listener.security.protocol.map"],
            config["inter.broker.listener.name"],
        )
    except ValueError as e:
        raise ConfigError(str(e)) from None


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
    _write_meta(data_dir, cluster_id, node_id)
    return cluster_id


def _write_meta(data_dir: Path, cluster_id: str, node_id: int) -> None:
    """Write meta.properties (Kafka's format)."""
    path = data_dir / "meta.properties"
    tmp = path.with_suffix(".tmp")
    tmp.write_text(f"#\nversion=1\ncluster.id={cluster_id}\nnode.id={node_id}\n")
    os.replace(tmp, path)


class ServedConnection(Protocol):
    """What the idle check (broker.connection.expire_idle_connections) asks of a connection."""

    connection_id: int

    def idle_reason(self, now: float, idle_s: float) -> str | None: ...

    def close_idle(self, reason: str) -> None: ...

    def describe(self) -> dict[str, object]: ...  # GET /v1/connections


class Broker:
    """Everything a request handler may need; created by `serve`."""

    def __init__(self, config: Config) -> None:
        self.config = config
        check_cluster_settings(config)
        self.data_dir = Path(config["log.dirs"])
        self.metrics = Metrics()
        self.topics = TopicRegistry(config, self.data_dir, self.metrics)
        # The brokers this process serves (broker.cluster_state): node.id alone, or 1..N
        # with kmock.brokers; `node_id` is the first, which also acts as the controller.
        self.cluster = self.topics.cluster
        self.node_id: int = self.cluster.node_ids[0]
        # No other broker (kmock.brokers=1): a request for a group or a transaction is this
        # broker's to coordinate, and the dispatch site calls a route's handler without the
        # check that a cluster needs (`Route.alone`).
        self.alone = not self.cluster.multi
        # Per node: each listener's advertised address; set by `advertise`.
        self.node_advertised: dict[int, dict[str, tuple[str, int]]] = {}
        self.node_bound_ports: dict[int, dict[str, int]] = {}
        # Set by `serve`: its nursery, and the cancel scope of each broker's listeners.
        self.serve_nursery: trio.Nursery | None = None
        self.node_scopes: dict[int, trio.CancelScope] = {}
        # broker.server's: bind a stopped broker's listeners again, then serve them.
        self.listen_again: Callable[[int], Awaitable[Callable[[], None]]]
        self.cluster_id = ""
        # Checked first, so that a bad setting stops the start before anything is written.
        self.listener_setup = listener_setup(config)
        self.startup_topics = startup_topics(config)
        self.addresses: list[tuple[str, int]] = []  # bound (host, port), every socket
        # Per listener name: the address its clients are told (set by `advertise`), or none
        # when advertised.listeners leaves the listener out (Kafka then tells them of no
        # broker). `advertised` lists them in listener order.
        self.advertised_by_listener: dict[str, tuple[str, int]] = {}
        self.advertised: list[tuple[str, int]] = []
        self.bound_ports: dict[str, int] = {}  # per listener name, once bound
        # Set once __consumer_offsets and __transaction_state have been replayed.
        self.ready = trio.Event()
        self.started_at = time.monotonic()
        # Set by `serve` before the first request (durability needs its nursery, the
        # runtime the bound addresses).
        self.durability: Durability
        self.coordinator: CoordinatorRuntime
        self.transactions: TransactionRuntime
        # Whether this broker serves the admin endpoint (admin.port; -1: none), and with it
        # what only it reads: the request journal, request times and metrics.
        self.admin_endpoint = config["admin.port"] >= 0
        self.admin_address: tuple[str, int] | None = None  # set by broker.admin_http
        # set by broker.schema_registry_http
        self.schema_registry_address: tuple[str, int] | None = None
        self.producer_ids: ProducerIdAllocator
        self.cancel_scope: trio.CancelScope | None = None  # the serve tree, once it runs
        self.connection_ids = itertools.count(1)
        self.open_connections = 0
        self.connections: set[ServedConnection] = set()  # while served
        # Each served node's reactor (broker.reactor.Reactor, which imports the connections
        # this module must not), set by broker.server while it serves.
        self.reactors: dict[int, Any] = {}
        # (api key, version) -> (route, flexible request header) of the versions accepted so
        # far, as broker.dispatch checks them against the route table and kafka.version.
        self.accepted_versions: dict[tuple[int, int], Any] = {}
        self.memory_pool = MemoryPool(config["queued.max.request.bytes"])
        self.connection_quotas = ConnectionQuotas(config)
        # Test controls (broker.controls): the clock every timer waits on, the fault table
        # the dispatch site consults, and the request journal (with the admin endpoint).
        # (kmock.clock and kmock.clock.timestamps are checked by their settings' choices.)
        self.clock: Clock = make_clock(config["kmock.clock"], config["kmock.clock.timestamps"])
        self.faults = FaultTable()
        size = config["kmock.journal.size"]
        self.journal: Journal | None = None
        if size > 0 and self.admin_endpoint:
            from broker.controls.journal import Journal  # with the admin endpoint only

            self.journal = Journal(size, self.topic_name)
        self.controls = Controls(self)
        # Set by `serve` (broker.security): each listener's security protocol, and the TLS
        # context of each SSL and SASL_SSL listener.
        self.security_protocols: dict[str, str] = {}
        self.tls_contexts: dict[str, ssl.SSLContext] = {}

    # Two times, named apart: monotonic for deadlines (the broker's clock: trio's, which
    # autojump_clock drives in tests, or a virtual one), and the date written into records.
    def now_ms(self) -> int:
        return self.clock.now_ms()

    def wall_ms(self) -> int:
        return self.clock.record_ms()

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """A topic's name from its id (Fetch v13+ names topics by id), None if unknown."""
        topic = self.topics.by_id.get(topic_id)
        return topic.name if topic is not None else None

    @property
    def bootstrap_servers(self) -> str:
        """Every broker's advertised addresses (the first broker's first)."""
        return ",".join(
            f"{h}:{p}"
            for node in self.cluster.node_ids
            for e in self.listener_setup.listeners
            if (address := self.node_advertised.get(node, {}).get(e.listener)) is not None
            for h, p in [address]
        )

    def open(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        # Kafka refuses to start on a log dir it cannot write; so do we, before recovery
        # could serve half the logs. Raises OSError (EROFS, EACCES, ENOSPC) for the CLI.
        probe = self.data_dir / ".kmock-write-check"
        probe.write_bytes(b"")
        probe.unlink()
        self.cluster_id = _read_meta(self.data_dir, self.node_id)
        for root, node in zip(self.cluster.roots(), self.cluster.node_ids, strict=True):
            if root != self.data_dir:  # several brokers: each log dir has its meta.properties
                root.mkdir(exist_ok=True)
                if not (root / "meta.properties").exists():
                    _write_meta(root, self.cluster_id, node)
        self.producer_ids = ProducerIdAllocator(self.data_dir)
        try:
            self.topics.load(self.wall_ms())
        except ValueError as e:  # another kmock.brokers than the data was written with
            self.topics.close()
            raise ConfigError(str(e)) from None
        # Before the listeners are bound: the topics exist once the port accepts connections.
        try:
            create_startup_topics(self.topics, self.startup_topics, self.wall_ms())
        except KafkaError:
            self.topics.close()  # serve() has not started: nobody else closes the logs
            raise

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
        if self.cancel_scope is not None:
            self.cancel_scope.cancel()

    def advertise(self, bound: dict[str, int], node_id: int | None = None) -> None:
        """Set the advertised addresses of broker `node_id` (the first by default), given
        the port each listener name bound. The n-th broker (from 0) advertises the
        configured port + n, as it binds (broker.server)."""
        node = self.node_id if node_id is None else node_id
        shift = self.cluster.node_ids.index(node)
        self.node_bound_ports[node] = dict(bound)
        advertised: dict[str, tuple[str, int]] = {}
        for name, endpoint in self.listener_setup.advertised.items():
            # An advertised port 0 means "the port this listener bound" (kmock only).
            port = endpoint.port + shift if endpoint.port else bound[name]
            advertised[name] = (endpoint.host, port)
        self.node_advertised[node] = advertised
        if node == self.node_id:
            self.bound_ports = dict(bound)
            self.advertised_by_listener = advertised
            self.advertised = [
                advertised[e.listener]
                for e in self.listener_setup.listeners
                if e.listener in advertised
            ]

    def advertised_address(
        self, listener_name: str, node_id: int | None = None
    ) -> tuple[str, int] | None:
        """What a client connected through `listener_name` is told the address of broker
        `node_id` (this process's first by default) is (Kafka's
        MetadataCache.getAliveBrokerNode(id, listenerName)); None if that listener is not
        advertised or the broker is stopped."""
        node = self.node_id if node_id is None else node_id
        if node not in self.cluster.live:
            return None
        return self.node_advertised.get(node, {}).get(listener_name)

    def pinned_listeners(self) -> str:
        """`listeners` with each port 0 replaced by the port it bound, for a restart on the
        same ports."""
        return ",".join(
            str(e._replace(port=e.port or self.bound_ports[e.listener]))
            for e in self.listener_setup.listeners
        )
