"""serve(): the broker's nursery tree.

    serve nursery
    ├── per broker (one, or kmock.brokers: broker.cluster_state), in a cancel scope that
    │   stopping the broker cancels: its reactor (broker.reactor: one task answering every
    │   connection that waits for its client), listeners (trio.serve_listeners) ── a task per
    │   connection waiting for it to end (and its writer while responses are queued)
    ├── group coordinator runtime: replay of __consumer_offsets, then its timer task
    ├── transaction coordinator runtime: replay of __transaction_state, then its timer task
    ├── readiness: `broker.ready` once both replays are done
    ├── retention / compaction task
    ├── idle connection check (broker.connection.expire_idle_connections)
    ├── group-commit fsync loop, shared by all logs (broker.durability)
    ├── admin HTTP endpoint (only with admin.port)
    └── schema registry HTTP endpoint, after replaying _schemas (only with
        kmock.schema.registry.port)

`serve` reports the `Broker` (broker.broker: what a handler reaches), with its bound
addresses, through `task_status.started(broker)` (port 0 works), so tests do
`broker = await nursery.start(serve, config)`. Cancelling the tree stops the
broker; on the way out every log is fsynced and closed (shielded), so a graceful stop
(SIGINT/SIGTERM in the CLI) loses nothing.
"""

from __future__ import annotations

import functools
import gc
import logging
import time
from collections.abc import Callable
from typing import Any

import trio

from broker import routes
from broker.broker import Broker, listener_setup
from broker.config import Config, ConfigError
from broker.connection import expire_idle_connections, serve_connection
from broker.context import NODE_ID
from broker.dispatch import handle_frame
from broker.durability import Durability
from broker.reactor import Reactor
from broker.routes import route_for
from broker.security.tls import TlsError, tls_contexts
from protocol.errors import KafkaError

log = logging.getLogger("broker.server")

__all__ = ["Broker", "listener_setup", "serve"]


async def _accept(broker: Broker, listener_name: str, stream: trio.SocketStream) -> None:
    """Serve one connection accepted by listener `listener_name`, unless it is over a
    connection limit (broker.limits.ConnectionQuotas: max.connections, max.connections.per.ip)."""
    cid = next(broker.connection_ids)
    try:
        address = str(stream.socket.getpeername()[0])
    except OSError:  # already gone
        address = "unknown"
    refused = broker.connection_quotas.admit(address)
    if refused is not None:
        log.warning("connection %d from %s refused: %s", cid, address, refused)
        await stream.aclose()
        return
    broker.open_connections += 1
    try:
        protocol = broker.security_protocols[listener_name]
        if protocol == "PLAINTEXT":
            await serve_connection(broker, stream, cid, listener_name)
        else:
            # TLS and SASL (broker.security.gate, authenticator, scram) are imported by the
            # first connection that needs them: a PLAINTEXT broker never does.
            from broker.security.authenticator import Dispatch
            from broker.security.gate import serve_secured

            tls = broker.tls_contexts.get(listener_name)
            dispatch = Dispatch(serve_connection, handle_frame, route_for)
            await serve_secured(broker, stream, cid, listener_name, protocol, tls, dispatch)
    except Exception:
        # Never let one connection take the server down; this is a bug, so say so loudly.
        log.exception("connection %d crashed", cid)
    finally:
        broker.open_connections -= 1
        broker.connection_quotas.release(address)


async def serve(
    config: Config, *, own_process: bool = False, task_status: Any = trio.TASK_STATUS_IGNORED
) -> None:
    """Run a broker until cancelled. Reports the `Broker` (with bound addresses) when listening.
    `own_process`: the process is this broker's alone (`kmock serve`), whose garbage collector
    it may tune (`settle_gc`); not a test's process, with brokers coming and going."""
    from broker.runtime import CoordinatorRuntime
    from broker.txn_runtime import TransactionRuntime

    started = time.monotonic()
    broker = Broker(config)
    broker.controls.route_table = routes.all_routes()
    if broker.journal is not None:
        broker.journal.routes = {r.api_key: r for r in broker.controls.route_table}
    # The listeners' security (broker.security): TLS contexts are built before anything binds,
    # so a keystore that cannot be read stops the start with a message naming its setting.
    broker.security_protocols = {
        e.listener: e.security_protocol for e in broker.listener_setup.listeners
    }
    try:
        broker.tls_contexts = tls_contexts(config, broker.listener_setup.listeners)
    except TlsError as e:
        raise ConfigError(str(e)) from None
    broker.clock.bind()
    await trio.to_thread.run_sync(broker.open)
    try:
        with trio.CancelScope() as cancel:
            broker.cancel_scope = cancel
            async with trio.open_nursery() as nursery:
                broker.durability = Durability(
                    nursery,
                    strict=config["kmock.durability"] == "strict",
                    delay_s=config["group.commit.delay.ms"] / 1000,
                    clock=broker.clock,
                )
                # Each listener name gets its own sockets and accept loop, so that every
                # connection knows the listener it came through (RequestContext.listener_name);
                # with kmock.brokers, each broker its own (broker.cluster_state).
                nodes = {node: await bind_node(broker, node) for node in broker.cluster.node_ids}
                by_name = nodes[broker.node_id]
                for endpoint in broker.listener_setup.listeners:
                    advertised = broker.advertised_address(endpoint.listener)
                    if advertised is None:
                        log.warning(
                            "listener %s is not in advertised.listeners: its clients are told "
                            "of no broker (LISTENER_NOT_FOUND), as Kafka tells them",
                            endpoint.listener,
                        )
                    elif len(by_name) > 1:
                        log.info(
                            "listener %s on %s:%d, advertised as %s:%d",
                            endpoint.listener,
                            endpoint.host or "*",
                            broker.bound_ports[endpoint.listener],
                            *advertised,
                        )
                broker.coordinator = CoordinatorRuntime(broker)
                broker.transactions = TransactionRuntime(broker, broker.coordinator)
                await nursery.start(broker.coordinator.run)
                await nursery.start(broker.transactions.run)
                nursery.start_soon(_ready, broker, own_process)
                nursery.start_soon(_housekeeping, broker)
                nursery.start_soon(expire_idle_connections, broker)
                if broker.admin_endpoint:
                    from broker.admin_http import serve_admin

                    await nursery.start(serve_admin, broker)
                if config["kmock.schema.registry.port"] >= 0:
                    from broker.schema_registry_http import serve_schema_registry

                    await nursery.start(serve_schema_registry, broker)
                broker.serve_nursery = nursery
                broker.listen_again = functools.partial(_listen_again, broker)
                for node, sockets_by_name in nodes.items():
                    nursery.start_soon(serve_node, broker, node, sockets_by_name)
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


async def bind_node(broker: Broker, node: int) -> dict[str, list[trio.SocketListener]]:
    """Open the listening sockets of broker `node`: each listener's configured port, plus
    the broker's rank in kmock.brokers (port 0 stays 0: a free port each), or the ports it
    bound before when it starts again. Sets its advertised addresses."""
    by_name: dict[str, list[trio.SocketListener]] = {}
    bound: dict[str, int] = {}
    shift = broker.cluster.node_ids.index(node)
    before = broker.node_bound_ports.get(node, {})
    for endpoint in broker.listener_setup.listeners:
        port = before.get(endpoint.listener) or (endpoint.port + shift if endpoint.port else 0)
        sockets = await trio.open_tcp_listeners(port, host=endpoint.host or None)
        by_name[endpoint.listener] = sockets
        for lst in sockets:
            addr = lst.socket.getsockname()
            if not before:
                broker.addresses.append((addr[0], addr[1]))
            bound[endpoint.listener] = addr[1]
    broker.advertise(bound, node)
    return by_name


async def serve_node(
    broker: Broker, node: int, by_name: dict[str, list[trio.SocketListener]]
) -> None:
    """Accept and serve the connections of broker `node` until it is stopped
    (broker.controls.cluster) or the server is: its connections are cancelled with it."""
    NODE_ID.set(node)  # the connections' tasks, started from here, inherit it
    with trio.CancelScope() as scope:
        broker.node_scopes[node] = scope
        reactor = Reactor(broker.config["kmock.reactor.spin.us"] / 1e6)
        try:
            async with trio.open_nursery() as nursery:
                await nursery.start(reactor.run)
                broker.reactors[node] = reactor
                for name, sockets in by_name.items():
                    nursery.start_soon(
                        trio.serve_listeners, functools.partial(_accept, broker, name), sockets
                    )
        finally:
            if broker.reactors.get(node) is reactor:
                del broker.reactors[node]


async def _listen_again(broker: Broker, node: int) -> Callable[[], None]:
    """Bind a stopped broker's listeners again (raises OSError when a port is taken); the
    callable returned starts serving them (broker.controls.cluster)."""
    sockets = await bind_node(broker, node)
    nursery = broker.serve_nursery
    assert nursery is not None
    return lambda: nursery.start_soon(serve_node, broker, node, sockets)


async def _ready(broker: Broker, own_process: bool) -> None:
    await broker.coordinator.replayed.wait()
    await broker.transactions.loaded.wait()
    broker.ready.set()
    if own_process:
        settle_gc()


def settle_gc() -> None:
    """Keep the garbage collector's pauses short and rare once the broker is ready.

    What start-up made (modules, classes, the route table, the replayed groups) stays for
    the life of the process: frozen, no pass walks it again. And a young generation of
    10,000 objects rather than 700 (a full pass every 10,000 x 20 x 20 allocations rather
    than 700 x 10 x 10). Under 1,000 connections sending Metadata, 4 s, the collector
    stopped the loop for 0.5-0.9 s in all (a full pass of 44-432 ms among them) and now
    for 0.1-0.3 s with no full pass; the p99 went from 515 to 484 ms, the peak RSS stayed
    49.6 MB (bench/README.md, round 3). Cycles are still collected by the younger passes.
    """
    gc.freeze()
    gc.set_threshold(10_000, 20, 20)


async def _housekeeping(broker: Broker) -> None:
    """Retention and compaction, every log.retention.check.interval.ms / log.cleaner.backoff.ms."""
    from storage import apply_retention

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
                        from storage.compaction import compact  # with the first compaction

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
