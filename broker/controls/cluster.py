"""The cluster's controls: move a leader, move a coordinator, stop and start a broker.

The HTTP routes (broker.controls.api: /v1/cluster/leader, /v1/cluster/coordinator,
/v1/brokers/{id}/stop and /start) and the fixture helpers call these. Each change is saved
with the topic table before it returns (broker.cluster_state), so a restart keeps it.

Errors are ControlError (a 400 naming the field at fault), raised before anything changes.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

import trio

from broker.controls.faults import ControlError
from protocol.errors import KafkaError
from protocol.records import iter_batches
from storage.layout import OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC

if TYPE_CHECKING:
    from broker.topics import Partition

Broker = Any  # broker.broker.Broker (not imported: it imports this package)

log = logging.getLogger("broker.cluster")

__all__ = [
    "coordinator_partition",
    "describe",
    "move_coordinator",
    "move_leader",
    "start_broker",
    "stop_broker",
]


def _save(broker: Broker) -> None:
    try:
        broker.topics.save()
    except OSError as e:  # the change holds in memory; the next save may succeed
        log.error("could not save the cluster state: %s", e)


def _node(broker: Broker, value: Any, field: str = "broker") -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ControlError(field, f"expected a broker id, not {value!r}")
    if value not in broker.cluster.node_ids:
        raise ControlError(field, f"no broker {value} (brokers: {broker.cluster.node_ids})")
    return value


def _partition(broker: Broker, topic: Any, index: Any) -> Partition:
    if not isinstance(topic, str):
        raise ControlError("topic", f"expected a topic name, not {topic!r}")
    if isinstance(index, bool) or not isinstance(index, int):
        raise ControlError("partition", f"expected a partition number, not {index!r}")
    try:
        p: Partition = broker.topics.partition(topic, index)
    except KafkaError:
        raise ControlError("partition", f"no partition {topic}-{index}") from None
    return p


def _describe(p: Partition) -> dict[str, Any]:
    return {
        "topic": p.topic,
        "partition": p.index,
        "leader": p.leader,
        "leader_epoch": p.leader_epoch,
        "replicas": list(p.replicas),
        "isr": list(p.isr),
    }


def describe(broker: Broker) -> dict[str, Any]:
    """GET /v1/cluster: the brokers (with their addresses), which run, and every partition."""
    cluster = broker.cluster
    return {
        "brokers": [
            {
                "id": node,
                "running": node in cluster.live,
                "listeners": {
                    name: f"{host}:{port}"
                    for name, (host, port) in broker.node_advertised.get(node, {}).items()
                },
            }
            for node in cluster.node_ids
        ],
        "partitions": [_describe(p) for p in cluster.partitions()],
    }


def move_leader(broker: Broker, topic: Any, index: Any, node: Any) -> dict[str, Any]:
    """Make broker `node` the leader of the partition (a live in-sync replica); the leader
    epoch goes up by one."""
    p = _partition(broker, topic, index)
    node = _node(broker, node)
    moved = p.leader != node
    try:
        broker.cluster.move_leader(p, node)
    except ValueError as e:
        raise ControlError("broker", str(e)) from None
    _save(broker)
    if moved and p.topic in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC):
        start_loading(broker, p)  # a coordinator moved with it
    return _describe(p)


def coordinator_partition(broker: Broker, spec: dict[str, Any]) -> Partition:
    """The __consumer_offsets partition of spec["group_id"] or the __transaction_state one
    of spec["transactional_id"], created on first need as FindCoordinator creates them."""
    keys = [k for k in ("group_id", "transactional_id") if k in spec]
    if len(keys) != 1:
        raise ControlError("group_id", "give exactly one of group_id and transactional_id")
    key = spec[keys[0]]
    if not isinstance(key, str) or not key:
        raise ControlError(keys[0], f"expected a non-empty string, not {key!r}")
    if keys[0] == "group_id":
        broker.coordinator.offsets_topic()
        index = broker.coordinator.coordinator.partition_for(key)
        p: Partition = broker.topics.partition(OFFSETS_TOPIC, index)
        return p
    broker.transactions.state_topic()
    index = broker.transactions.coordinator.partition_for(key)
    q: Partition = broker.topics.partition(TRANSACTION_STATE_TOPIC, index)
    return q


def move_coordinator(broker: Broker, spec: dict[str, Any]) -> dict[str, Any]:
    """Move the coordinator of a group or transactional id to broker spec["broker"]: the
    leader of the key's partition moves, the old broker answers NOT_COORDINATOR at once
    and the new one COORDINATOR_LOAD_IN_PROGRESS until it has read the partition."""
    unknown = set(spec) - {"group_id", "transactional_id", "broker"}
    if unknown:
        raise ControlError(
            sorted(unknown)[0], "unknown field (known: group_id, transactional_id, broker)"
        )
    p = coordinator_partition(broker, spec)
    node = _node(broker, spec.get("broker"))
    moved = p.leader != node
    try:
        broker.cluster.move_leader(p, node)
    except ValueError as e:
        raise ControlError("broker", str(e)) from None
    _save(broker)
    if moved:
        start_loading(broker, p)
    return _describe(p)


def unload(broker: Broker, p: Partition) -> None:
    """The old leader of a coordinator partition unloads it: JoinGroup and SyncGroup parked
    there are answered NOT_COORDINATOR (broker.runtime.CoordinatorRuntime.unload)."""
    if p.topic == OFFSETS_TOPIC:
        broker.coordinator.unload(p.index, p.leader)


def start_loading(broker: Broker, p: Partition) -> None:
    """The new leader of a coordinator partition loads it: COORDINATOR_LOAD_IN_PROGRESS
    until it has read the partition's log to its end, in a worker thread. The old leader
    unloads it first (`unload`)."""
    unload(broker, p)
    if broker.serve_nursery is None:
        return
    done = trio.Event()
    broker.cluster.loading[(p.topic, p.index)] = done

    async def load() -> None:
        try:
            await trio.to_thread.run_sync(_read_through, p)
        finally:
            if broker.cluster.loading.get((p.topic, p.index)) is done:
                del broker.cluster.loading[(p.topic, p.index)]
            done.set()

    broker.serve_nursery.start_soon(load)


def _read_through(p: Partition) -> int:
    """Read the partition from its start to its end, as a coordinator loading it does."""
    plog = p.log
    offset, end, read = plog.log_start_offset, plog.log_end_offset, 0
    while offset < end:
        data = plog.read_bytes(offset, 1 << 20, max_offset=end, min_one=True)
        if not data:
            break
        for _, header in iter_batches(data):
            offset = max(offset, header.next_offset)
            read += 1
    return read


def _coordinator_leaders(broker: Broker) -> dict[Partition, int]:
    return {
        p: p.leader
        for name in (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)
        if (topic := broker.topics.get(name)) is not None
        for p in topic.partitions
    }


def _load_moved(broker: Broker, before: dict[Partition, int]) -> None:
    """Coordinator partitions with a new leader: it loads them (start_loading); those left
    with none are unloaded."""
    for p, leader in before.items():
        if p.leader != leader and p.leader >= 0:
            start_loading(broker, p)
        elif p.leader != leader:
            unload(broker, p)


async def stop_broker(broker: Broker, node: Any) -> dict[str, Any]:
    """Stop broker `node`: its listeners close (its connections are dropped), its
    leaderships move to the other in-sync replicas (broker.cluster_state.stop)."""
    node = _node(broker, node, "id")
    if node not in broker.cluster.live:
        raise ControlError("id", f"broker {node} is already stopped")
    if len(broker.cluster.live) == 1:
        raise ControlError("id", f"broker {node} is the last one running")
    scope = broker.node_scopes.pop(node, None)
    before = _coordinator_leaders(broker)
    broker.cluster.stop(node)
    _save(broker)
    _load_moved(broker, before)
    if scope is not None:
        scope.cancel()
    await trio.lowlevel.checkpoint()
    log.info("broker %d stopped", node)
    return {"broker": node, "live": sorted(broker.cluster.live)}


async def start_broker(broker: Broker, node: Any) -> dict[str, Any]:
    """Start broker `node` again on the ports it had: it rejoins the ISRs and, with
    auto.leader.rebalance.enable, leads its preferred partitions again."""
    node = _node(broker, node, "id")
    if node in broker.cluster.live:
        raise ControlError("id", f"broker {node} is already running")
    try:
        serve = await broker.listen_again(node)  # broker.server: bind, then serve
    except OSError as e:
        raise ControlError("id", f"broker {node} cannot listen again: {e}") from None
    before = _coordinator_leaders(broker)
    broker.cluster.start(node)
    _save(broker)
    _load_moved(broker, before)
    serve()
    await trio.lowlevel.checkpoint()
    log.info("broker %d started", node)
    return {"broker": node, "live": sorted(broker.cluster.live)}
