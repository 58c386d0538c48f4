"""Several brokers in one process: who leads each partition, who is in sync, who is up.

With `kmock.brokers` = N > 1 the process serves N brokers, ids 1..N, each on its own
listeners (broker.server). They share one log per partition: replication inside the
process is exact and immediate ("followers are the same log"), so the high watermark is
the log end offset whenever a leader is up. What clients can see of a cluster is kept as
Kafka keeps it, per partition (Kafka's PartitionRegistration, Partition.scala):

  replicas      placed by Kafka's default placement (broker.placement), preferred first;
  isr           the live replicas (a stopped broker leaves it, and comes back on start:
                its log is the same, so it is caught up at once);
  leader        the first live replica in the ISR; -1 when none is left (the partition is
                offline: LEADER_NOT_AVAILABLE), as Kafka without unclean election;
  leader_epoch  bumped on every leader change; `epochs` is the leader epoch cache
                (epoch, start offset), which OffsetForLeaderEpoch answers from
                (Kafka's LeaderEpochFileCache).

These live on `broker.topics.Partition` and are saved with the topic table (topics.json),
so a restart keeps leaders, epochs and coordinators. A broker stopped when the process
ends is up again at the next start: it rejoins the ISR of its partitions, and offline
partitions get a leader back; leaderships that were moved stay where they were moved.

Stopping a broker moves its leaderships to the next in-sync replica; starting it runs a
preferred-leader election for its partitions when auto.leader.rebalance.enable (Kafka's
default), at once rather than after leader.imbalance.check.interval.seconds.

A coordinator (group or transaction) is the leader of the key's partition of
__consumer_offsets or __transaction_state. kmock keeps every group and transaction in the
one coordinator of the process; a move makes the old broker answer NOT_COORDINATOR and the
new one COORDINATOR_LOAD_IN_PROGRESS until it has read the partition's log through (Kafka's
GroupMetadataManager.loadGroupsForPartition), after which it serves the same state.

With N = 1 nothing changes from the single broker kmock always was: node id `node.id`, the
only replica, leader epoch 0, the data directory laid out as before.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import trio

from broker.placement import check_replication_factor, replica_assignment
from protocol.errors import ErrorCode, KafkaError
from storage.layout import broker_dir_name, partition_dir

# broker.topics' Partition and Topic (not imported: broker.topics imports this module).
Partition = Any
Topic = Any

log = logging.getLogger("broker.cluster")

__all__ = ["ClusterState", "check_settings"]


def check_settings(config: Any) -> None:
    """The cluster settings' ranges, checked before anything starts.

    Raises:
      ConfigError: naming the setting.
    """
    from broker.config import ConfigError

    brokers = config["kmock.brokers"]
    if brokers < 1:
        raise ConfigError(f"kmock.brokers: {brokers}: Value must be at least 1")
    for name in ("offsets.topic.replication.factor", "transaction.state.log.replication.factor"):
        if config[name] < 1:
            raise ConfigError(f"{name}: {config[name]}: Value must be at least 1")


class ClusterState:
    """The brokers of this process, which are up, and the leadership changes."""

    def __init__(self, size: int, node_id: int, data_dir: Path, auto_rebalance: bool) -> None:
        self.size = size
        self.node_ids = [node_id] if size == 1 else list(range(1, size + 1))
        self.live: set[int] = set(self.node_ids)
        self.data_dir = data_dir
        self.auto_rebalance = auto_rebalance
        # (topic, partition) of coordinator partitions whose new leader is still loading.
        self.loading: dict[tuple[str, int], trio.Event] = {}
        self.topics: dict[str, Topic] = {}  # the registry's, set by it

    @property
    def multi(self) -> bool:
        return self.size > 1

    # --- placement and directories ---

    def roots(self) -> list[Path]:
        """Every directory that holds partition directories."""
        if not self.multi:
            return [self.data_dir]
        return [self.data_dir / broker_dir_name(b) for b in self.node_ids]

    def root_of(self, replicas: list[int]) -> Path:
        """Where a partition's log lives: under its preferred replica's directory."""
        if not self.multi:
            return self.data_dir
        return self.data_dir / broker_dir_name(replicas[0])

    def partition_root(self, replicas: list[int], topic: str, index: int) -> Path:
        """Where a partition's log is: in the directory it was created in (under its
        preferred replica of the time) when it exists, though a reassignment may have
        changed the preferred replica since; else under the preferred replica's."""
        preferred = self.root_of(replicas)
        if self.multi and not partition_dir(preferred, topic, index).is_dir():
            for root in self.roots():
                if partition_dir(root, topic, index).is_dir():
                    return root
        return preferred

    def assign(
        self, topic: str, first: int, total: int, replication_factor: int
    ) -> list[list[int]]:
        """The replicas of partitions first..total-1 of a new (or growing) topic.

        Raises:
          KafkaError: INVALID_REPLICATION_FACTOR for more replicas than brokers.
        """
        check_replication_factor(replication_factor, self.size)
        return [
            replica_assignment(topic, i, replication_factor, self.node_ids)
            for i in range(first, total)
        ]

    def check_assignment(self, broker_ids: list[int]) -> None:
        """A manual assignment names registered brokers only, each once (Kafka's
        ReplicationControlManager.validateManualPartitionAssignment)."""
        if not broker_ids:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "The manual partition assignment includes an empty replica list.",
            )
        seen: set[int] = set()
        for b in broker_ids:
            if b not in self.node_ids:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes broker {b}, "
                    "but no such broker is registered.",
                )
            if b in seen:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes the broker {b} more than once.",
                )
            seen.add(b)

    def init_partition(self, p: Partition, replicas: list[int]) -> None:
        """A new partition: every live replica in sync, led by the first of them."""
        p.replicas = list(replicas)
        p.isr = [b for b in replicas if b in self.live]
        p.leader = p.isr[0] if p.isr else -1
        p.leader_epoch = 0
        p.epochs = [(0, 0)]

    # --- persistence (in topics.json, beside each topic) ---

    def to_json(self, topic: Topic) -> list[dict[str, Any]] | None:
        if not self.multi:
            return None
        return [
            {
                "replicas": p.replicas,
                "isr": p.isr,
                "leader": p.leader,
                "leader_epoch": p.leader_epoch,
                "epochs": [list(e) for e in p.epochs],
            }
            for p in topic.partitions
        ]

    def replicas_from_json(self, name: str, entry: dict[str, Any]) -> list[list[int]]:
        """The saved replicas of each partition of a topic in topics.json.

        Raises:
          ValueError: the table was written by a cluster of another size (its logs are in
            other directories); the message names kmock.brokers.
        """
        saved = entry.get("cluster")
        count = int(entry["partitions"])
        if not self.multi:
            if saved is not None:
                raise ValueError(
                    f"kmock.brokers: the data directory {self.data_dir} was written by a "
                    "cluster of several brokers (topics.json lists replicas); start with the "
                    "same kmock.brokers"
                )
            return [list(self.node_ids) for _ in range(count)]
        if saved is None:
            raise ValueError(
                f"kmock.brokers: the data directory {self.data_dir} was written by a single "
                f"broker (topic {name} has no replicas); start it with kmock.brokers=1 or use "
                "another log.dirs"
            )
        replicas = [list(p["replicas"]) for p in saved]
        unknown = {b for r in replicas for b in r} - set(self.node_ids)
        if unknown or len(replicas) != count:
            raise ValueError(
                f"kmock.brokers: topic {name} in {self.data_dir} has replicas on broker(s) "
                f"{sorted(unknown)} but kmock.brokers={self.size}; start with the same "
                "kmock.brokers"
            )
        return replicas

    def restore(self, p: Partition, saved: dict[str, Any] | None) -> None:
        """Leader, ISR and epochs as saved; every broker is up again at a start."""
        if saved is None:
            self.init_partition(p, p.replicas)
            return
        p.leader = int(saved["leader"])
        p.leader_epoch = int(saved["leader_epoch"])
        p.isr = [int(b) for b in saved["isr"]]
        p.epochs = [(int(e), int(o)) for e, o in saved["epochs"]]
        for b in p.replicas:
            self._rejoin(p, b)

    # --- queries ---

    def partition_error(self, p: Partition, node_id: int) -> ErrorCode:
        """What a partition request at broker `node_id` meets: NONE at the leader,
        LEADER_NOT_AVAILABLE for an offline partition, else NOT_LEADER_OR_FOLLOWER (Kafka's
        ReplicaManager.getPartitionOrException for a replica that is not the leader, and
        for a broker that is no replica of it at all)."""
        if p.leader == node_id:
            return ErrorCode.NONE
        if p.leader < 0:
            return ErrorCode.LEADER_NOT_AVAILABLE
        return ErrorCode.NOT_LEADER_OR_FOLLOWER

    def coordinator_error(self, p: Partition, node_id: int) -> ErrorCode:
        """What a group or transaction request at `node_id` meets, for the key's partition
        (Kafka's CoordinatorRuntime: NOT_COORDINATOR when this broker does not lead it,
        COORDINATOR_LOAD_IN_PROGRESS while it loads it, COORDINATOR_NOT_AVAILABLE when
        nobody leads it)."""
        if p.leader < 0:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if p.leader != node_id:
            return ErrorCode.NOT_COORDINATOR
        if (p.topic, p.index) in self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    def offline_replicas(self, p: Partition) -> list[int]:
        return [b for b in p.replicas if b not in self.live]

    def partitions(self) -> Iterable[Partition]:
        for t in self.topics.values():
            yield from t.partitions

    # --- changes ---

    def _set_leader(self, p: Partition, leader: int) -> bool:
        if p.leader == leader:
            return False
        p.leader = leader
        # Every change of the leader field is a new epoch, going offline included (KRaft's
        # PartitionChangeBuilder); a leader's epoch starts at its log end (Kafka's
        # Partition.makeLeader adds that entry to the leader epoch cache).
        p.leader_epoch += 1
        if leader >= 0:
            p.epochs.append((p.leader_epoch, p.log.log_end_offset))
        p.notify()  # parked fetches answer, and see the change
        log.info(
            "partition %s-%d: leader %d, epoch %d, isr %s",
            p.topic,
            p.index,
            leader,
            p.leader_epoch,
            p.isr,
        )
        return True

    def move_leader(self, p: Partition, broker: int) -> None:
        """Make `broker` the leader (a live replica in the ISR), bumping the epoch even
        when it already leads (an explicit election).

        Raises:
          ValueError: the broker cannot lead the partition; the message says why.
        """
        if broker not in p.replicas:
            raise ValueError(
                f"broker {broker} is not a replica of {p.topic}-{p.index} {p.replicas}"
            )
        if broker not in self.live:
            raise ValueError(f"broker {broker} is stopped")
        if broker not in p.isr:
            raise ValueError(f"broker {broker} is not in the ISR {p.isr} of {p.topic}-{p.index}")
        if p.leader == broker:
            return
        self._set_leader(p, broker)

    def reassign(self, p: Partition, target: list[int]) -> None:
        """A reassignment to the replicas `target` (checked by the caller), completed at once:
        Kafka adds the new replicas, waits until they are in the ISR, then drops the
        removed ones; here every replica is the same log, so the new ones are caught up
        from the start and the new set takes effect in one step. As Kafka's
        PartitionChangeBuilder: the ISR is the running replicas of the new set; the leader
        stays when it is one of them, else the first of them leads; the leader epoch goes
        up when the leader changes or a replica is removed
        (triggerLeaderEpochBumpForReplicaReassignmentIfNeeded). A target replica that is
        stopped joins the ISR when it starts."""
        removed = any(b not in target for b in p.replicas)
        p.replicas = list(target)
        p.isr = [b for b in target if b in self.live]
        leader = p.leader if p.leader in p.isr else (p.isr[0] if p.isr else -1)
        if not self._set_leader(p, leader) and removed:
            p.leader_epoch += 1
            if leader >= 0:
                p.epochs.append((p.leader_epoch, p.log.log_end_offset))
            p.notify()
        log.info(
            "partition %s-%d reassigned: replicas %s, leader %d, epoch %d",
            p.topic,
            p.index,
            p.replicas,
            p.leader,
            p.leader_epoch,
        )

    def elect_preferred(self, p: Partition) -> ErrorCode:
        """Kafka's PREFERRED election: ELECTION_NOT_NEEDED when the preferred replica
        leads; PREFERRED_LEADER_NOT_AVAILABLE when it is down or out of the ISR."""
        preferred = p.replicas[0]
        if p.leader == preferred:
            return ErrorCode.ELECTION_NOT_NEEDED
        if preferred not in self.live or preferred not in p.isr:
            return ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        self._set_leader(p, preferred)
        return ErrorCode.NONE

    def stop(self, broker: int) -> None:
        """Broker `broker` goes away: it leaves every ISR; its leaderships go to the next
        in-sync live replica, or the partition goes offline. Kafka keeps the last replica
        in the ISR of a partition that loses it (no unclean election), and so do we."""
        self.live.discard(broker)
        for p in self.partitions():
            if broker not in p.replicas:
                continue
            others = [b for b in p.isr if b != broker and b in self.live]
            if others:
                p.isr = others
            if p.leader == broker:
                self._set_leader(p, others[0] if others else -1)

    def start(self, broker: int) -> None:
        """Broker `broker` is back: it rejoins every ISR (caught up: the log is shared),
        leads its offline partitions, and with auto.leader.rebalance.enable takes back
        the partitions it is the preferred replica of."""
        self.live.add(broker)
        for p in self.partitions():
            if broker not in p.replicas:
                continue
            self._rejoin(p, broker)
            if self.auto_rebalance and p.replicas[0] == broker:
                self.elect_preferred(p)

    def _rejoin(self, p: Partition, broker: int) -> None:
        if broker not in self.live:
            return
        if broker not in p.isr:
            p.isr = [b for b in p.replicas if b in p.isr or b == broker]
        if p.leader < 0 or p.leader not in self.live:
            live_isr = [b for b in p.isr if b in self.live]
            if live_isr:
                self._set_leader(p, live_isr[0])
