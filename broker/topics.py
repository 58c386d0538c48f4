"""Topics and partitions on this broker, and the logs behind them.

On disk (under `log.dirs`), as Kafka lays it out:
  meta.properties            cluster.id and node.id, written once (Kafka's format)
  <topic>-<n>/               one directory per partition (storage.Log)
  <topic>-<n>/partition.metadata   "version: 0" and the topic id (Kafka's format)
  topics.json                kmock's topic table: name, id, partition count, config overrides.
                             Kafka keeps this in its metadata log; one small JSON file
                             rewritten atomically (temp file + rename) is enough for one node.

A topic exists once topics.json names it; partition directories are created before that
write and removed after the delete's write, so a crash in between leaves at worst an
orphan directory, which the next start removes.

CreateTopics and CreatePartitions open the new partitions' logs in a worker thread
(directories, partition.metadata, segment files: about 1 ms each, 10 s for the 10,000 a
request may ask for), so the broker keeps serving meanwhile. While that runs the topic's
name is reserved in `_changing`: a second create of the name is TOPIC_ALREADY_EXISTS, and
Metadata and Produce do not see the topic, because it enters `topics` only once every
partition is open, in the same step as the topics.json write (no checkpoint in between).
Kafka's controller serializes such operations instead; what a client sees is the same.
"""

from __future__ import annotations

import base64
import contextlib
import logging
import os
import re
import shutil
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import trio

from broker.cluster_state import ClusterState
from broker.config import LONG_MAX, TOPIC_CONFIGS, Config, below_minimum, invalid_value
from protocol.compression import BytesLike
from protocol.errors import ErrorCode, KafkaError
from storage import AppendInfo, Log, LogConfig
from storage.layout import (
    OFFSETS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    parse_partition_dir,
    partition_dir,
)
from storage.recovery import recovery_log_lines
from storage.segment import fsync_directory

if TYPE_CHECKING:
    from broker.metrics import Metrics
    from protocol.records import BatchHeader

log = logging.getLogger("broker.topics")

_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
# Kafka's controller refuses an operation that would write more than 10,000 records
# (QuorumController.MAX_RECORDS_PER_USER_OP, KAFKA-14996); one record per partition here.
MAX_PARTITIONS_PER_REQUEST = 10_000
# Created by the coordinators on first need, never by clients.
_INTERNAL_TOPICS = (OFFSETS_TOPIC, TRANSACTION_STATE_TOPIC)

# How many times the view of the topics that Metadata answers with has changed in this
# process: a topic published or deleted, partitions added (TopicRegistry), or a partition's
# leader, leader epoch, replicas or ISR assigned (Partition.__setattr__). Metadata keeps an
# encoded answer while it stays the same (broker.handlers.metadata).
view_changes = 0
_VIEW_FIELDS = frozenset({"leader", "leader_epoch", "replicas", "isr"})


def _view_changed() -> None:
    global view_changes
    view_changes += 1


def check_partition_count(new_partitions: int) -> None:
    if new_partitions > MAX_PARTITIONS_PER_REQUEST:
        raise KafkaError(
            ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request."
        )


def topic_name_problem(name: str) -> str | None:
    """Kafka's Topic.validate: 1-249 chars of [a-zA-Z0-9._-], not "." or "..". Its message
    for an illegal name, or None."""
    if not name:
        return "Topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'Topic name cannot be "." or ".."'
    if len(name) > MAX_TOPIC_NAME:
        return (
            f"Topic name is illegal, it can't be longer than {MAX_TOPIC_NAME} characters, "
            f"topic name: {name}"
        )
    if not _LEGAL_TOPIC.match(name):
        return (
            f'Topic name "{name}" is illegal, it contains a character other than ASCII '
            "alphanumerics, '.', '_' and '-'"
        )
    return None


def validate_topic_name(name: str) -> None:
    """Refuse an illegal name (`topic_name_problem`) with INVALID_TOPIC_EXCEPTION."""
    if topic_name_problem(name) is not None:
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"illegal topic name {name!r}")


@dataclass(eq=False)
class Partition:
    topic: str
    index: int
    log: Log
    leader_epoch: int = 0
    # The cluster's view of it (broker.cluster_state): set by the registry.
    replicas: list[int] = field(default_factory=list)
    isr: list[int] = field(default_factory=list)
    leader: int = -1
    epochs: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])  # (epoch, start)
    # Fetches parked on this partition; an append wakes them all.
    waiters: set[trio.Event] = field(default_factory=set)
    # Where appended records are counted (None for a registry outside a running broker).
    metrics: Metrics | None = None
    # This topic's kmock_records_in counter, looked up at the first append (a topic that
    # never had one shows no series).
    records_in: Any = field(default=None, init=False, repr=False)

    def append(
        self,
        batch: BytesLike,
        *,
        wall_ms: int,
        partition_leader_epoch: int | None = None,
        header: BatchHeader | None = None,
    ) -> AppendInfo:
        """Append one validated v2 batch, wake the fetches waiting on this partition and
        count its records in kmock_records_in (Kafka's ReplicaManager.appendToLocalLog,
        which marks BrokerTopicStats' messagesInRate the same way).

        Raises:
          KafkaError: what `Log.append` raises; nothing is notified or counted then.
        """
        info = self.log.append(
            batch, wall_ms=wall_ms, partition_leader_epoch=partition_leader_epoch, header=header
        )
        self._appended(info.last_offset - info.base_offset + 1)
        return info

    def append_stamped(self, batch: bytes, header: BatchHeader, *, wall_ms: int) -> None:
        """`append` of a batch the broker built at this partition's log end offset
        (`Log.append_stamped`: a group coordinator's records)."""
        self.log.append_stamped(batch, header, wall_ms=wall_ms)
        self._appended(header.last_offset_delta + 1)

    def _appended(self, records: int) -> None:
        if self.waiters:  # notify(), called only when a fetch waits
            self.notify()
        counter = self.records_in
        if counter is None:
            if self.metrics is None:
                return
            counter = self.records_in = self.metrics.messages_in.labels(self.topic)
        counter.inc(records)

    def notify(self) -> None:
        for ev in self.waiters:
            ev.set()
        self.waiters.clear()

    def __setattr__(self, name: str, value: Any) -> None:
        # The cluster's view is assigned, never changed in place (broker.cluster_state
        # assigns new lists): every change of it is counted in `view_changes`.
        if name in _VIEW_FIELDS:
            _view_changed()
        object.__setattr__(self, name, value)


@dataclass(eq=False)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: list[Partition]
    configs: dict[str, str]  # topic-level overrides, Kafka names (retention.ms, ...)
    is_internal: bool = False


def _log_config(config: Config, overrides: dict[str, str]) -> LogConfig:
    def get(name: str) -> Any:
        if name in overrides:
            setting = TOPIC_CONFIGS[name]
            raw = overrides[name]
            if setting.type in ("int", "long"):
                return int(raw)
            return raw
        return config.topic_default(name)

    # Kafka's flush.messages and flush.ms (broker.durability); their defaults, Long.MAX_VALUE,
    # mean never, and so does a negative flush.ms.
    flush_messages = get("flush.messages")
    flush_ms = get("flush.ms")
    if flush_messages == 1:
        flush_mode, flush_interval = "always", 0
    elif flush_ms is None or flush_ms < 0 or flush_ms >= LONG_MAX:
        flush_mode, flush_interval = "none", 0
    else:
        flush_mode, flush_interval = "interval", flush_ms
    return LogConfig(
        segment_bytes=get("segment.bytes"),
        segment_ms=get("segment.ms"),
        retention_ms=get("retention.ms"),
        retention_bytes=get("retention.bytes"),
        index_interval_bytes=get("index.interval.bytes"),
        cleanup_policy=str(get("cleanup.policy")),
        delete_retention_ms=get("delete.retention.ms"),
        flush_mode=flush_mode,
        flush_interval_ms=flush_interval,
        flush_messages=flush_messages,
        max_message_bytes=get("max.message.bytes"),
        message_timestamp_type=str(get("message.timestamp.type")),
    )


def _invalid(name: str, value: str, why: str) -> KafkaError:
    return KafkaError(ErrorCode.INVALID_CONFIG, invalid_value(name, value, why))


def validate_topic_configs(configs: dict[str, str | None]) -> dict[str, str]:
    """Check topic configs as Kafka's ConfigDef does (type, range, allowed values).

    Returns them normalised (list values trimmed: "compact, delete" -> "compact,delete").

    Raises:
      KafkaError: INVALID_CONFIG, with Kafka's wording.
    """
    out: dict[str, str] = {}
    for name, value in configs.items():
        setting = TOPIC_CONFIGS.get(name)
        if setting is None:
            raise KafkaError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        if value is None:
            raise KafkaError(ErrorCode.INVALID_REQUEST, f"Null value not supported for {name}")
        value = value.strip()
        if setting.type in ("int", "long", "double"):
            try:
                number: float = float(value) if setting.type == "double" else int(value)
            except ValueError:
                raise _invalid(
                    name, value, f"Not a number of type {setting.type.upper()}"
                ) from None
            why = below_minimum(setting, number)
            if why is not None:
                raise _invalid(name, value, why)
        elif setting.type == "boolean":
            if value.lower() not in ("true", "false"):
                raise _invalid(name, value, "Expected value to be either true or false")
            value = value.lower()
        elif setting.type == "list":
            items = [v.strip() for v in value.split(",") if v.strip()]
            if setting.choices and (
                not items or not set(items) <= set(setting.choices) or len(set(items)) != len(items)
            ):
                raise _invalid(name, value, f"String must be one of: {', '.join(setting.choices)}")
            value = ",".join(items)
        elif setting.choices and value not in setting.choices:
            raise _invalid(name, value, f"String must be one of: {', '.join(setting.choices)}")
        out[name] = value
    return out


class TopicRegistry:
    def __init__(self, config: Config, data_dir: Path, metrics: Metrics | None = None) -> None:
        self.config = config
        self.data_dir = data_dir
        self.metrics = metrics
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        self.recovery_notes: list[str] = []
        # Brokers, replicas, leaders (broker.cluster_state); one broker unless kmock.brokers.
        self.cluster = ClusterState(
            config["kmock.brokers"],
            config["node.id"],
            data_dir,
            config["auto.leader.rebalance.enable"],
        )
        self.cluster.topics = self.topics
        # Names whose partitions are being opened in a worker thread, with the event set when
        # that is over (see the module docstring).
        self._changing: dict[str, trio.Event] = {}

    # --- persistence ---

    def _table_path(self) -> Path:
        return self.data_dir / "topics.json"

    def _save(self) -> None:
        table = {
            t.name: {
                "topic_id": str(t.topic_id),
                "partitions": len(t.partitions),
                "configs": t.configs,
                "internal": t.is_internal,
            }
            for t in self.topics.values()
        }
        if self.cluster.multi:
            for t in self.topics.values():
                table[t.name]["cluster"] = self.cluster.to_json(t)
        import json  # here and in load: a start on an empty data dir writes no topics.json

        tmp = self._table_path().with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(table, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._table_path())
        fsync_directory(self.data_dir)

    def save(self) -> None:
        """Write the topic table (with leaders and ISR: broker.cluster_state), as
        `_save`; for the cluster's changes.

        Raises:
          OSError: it could not be written.
        """
        self._save()

    def load(self, now_wall_ms: int) -> None:
        """Open every topic in topics.json, recovering each log; remove orphan directories.

        Raises:
          ValueError: topics.json was written by a cluster of another kmock.brokers.
        """
        path = self._table_path()
        table: dict[str, Any] = {}
        if path.exists():
            import json

            table = json.loads(path.read_text(encoding="utf-8"))
        placed = {name: self.cluster.replicas_from_json(name, e) for name, e in table.items()}
        for name, entry in table.items():
            topic = Topic(
                name,
                uuid.UUID(entry["topic_id"]),
                [],
                dict(entry["configs"]),
                bool(entry.get("internal", False)),
            )
            lc = _log_config(self.config, topic.configs)
            saved = entry.get("cluster") or [None] * int(entry["partitions"])
            for i in range(int(entry["partitions"])):
                p = self._open_partition(topic, i, lc, now_wall_ms, placed[name][i])
                self.cluster.restore(p, saved[i])
                topic.partitions.append(p)
            self.topics[name] = topic
            self.by_id[topic.topic_id] = topic
            _view_changed()
        rebuilt = sum(
            any(e.action == "index rebuilt" for e in p.log.recovery_report)
            for t in self.topics.values()
            for p in t.partitions
        )
        if rebuilt:
            log.info(
                "rebuilt the index files of %d partition(s), as after any unclean shutdown; "
                "the DEBUG log names them",
                rebuilt,
            )
        known = {p.log.path.absolute() for t in self.topics.values() for p in t.partitions}
        for root in self.cluster.roots():
            if not root.is_dir():
                continue
            for child in root.iterdir():
                if (
                    child.is_dir()
                    and parse_partition_dir(child.name) is not None
                    and child.absolute() not in known
                ):
                    log.warning(
                        "removing %s: not in topics.json (a create or delete that did not finish)",
                        child,
                    )
                    shutil.rmtree(child, ignore_errors=True)

    def _open_partition(
        self, topic: Topic, index: int, lc: LogConfig, now_wall_ms: int, replicas: list[int]
    ) -> Partition:
        pdir = partition_dir(
            self.cluster.partition_root(replicas, topic.name, index), topic.name, index
        )
        fresh = not pdir.exists()
        pdir.mkdir(parents=True, exist_ok=True)
        meta = pdir / "partition.metadata"
        if fresh or not meta.exists():
            tid = base64.urlsafe_b64encode(topic.topic_id.bytes).rstrip(b"=").decode()
            meta.write_text(f"version: 0\ntopic_id: {tid}\n", encoding="utf-8")
        plog = Log.open(pdir, lc, now_wall_ms=now_wall_ms)
        for level, line in recovery_log_lines(pdir.name, plog.recovery_report):
            self.recovery_notes.append(line)
            log.log(level, "%s", line)
        partition = Partition(topic.name, index, plog, metrics=self.metrics)
        partition.replicas = list(replicas)
        return partition

    def _open_partitions(
        self,
        topic: Topic,
        first: int,
        total: int,
        lc: LogConfig,
        now_wall_ms: int,
        replicas: list[list[int]],
    ) -> list[Partition]:
        """Open partitions first..total-1 of `topic`; all or none. Blocking: the async
        callers run it in a worker thread, so it changes no registry state (but for
        appending recovery notes, which a fresh partition does not have).

        Raises:
          OSError, KafkaError: after removing whatever it had created.
        """
        opened: list[Partition] = []
        try:
            for i in range(first, total):
                p = self._open_partition(topic, i, lc, now_wall_ms, replicas[i - first])
                self.cluster.init_partition(p, replicas[i - first])
                opened.append(p)
        except (OSError, KafkaError):
            # Out of descriptors or disk: undo, so that nothing half-created stays behind.
            self._discard(topic.name, opened, total, first)
            raise
        return opened

    def offsets_topic(self, *, now_wall_ms: int) -> Topic:
        """__consumer_offsets, created on first need with its settings: compacted,
        offsets.topic.num.partitions partitions of offsets.topic.segment.bytes segments
        (Kafka's GroupCoordinator.groupMetadataTopicConfigs)."""
        topic = self.topics.get(OFFSETS_TOPIC)
        if topic is None:
            topic = self.create(
                OFFSETS_TOPIC,
                self.config["offsets.topic.num.partitions"],
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(self.config["offsets.topic.segment.bytes"]),
                },
                now_wall_ms=now_wall_ms,
                internal=True,
                replication_factor=self._internal_replicas("offsets.topic.replication.factor"),
            )
            log.info("created %s with %d partitions", OFFSETS_TOPIC, len(topic.partitions))
        return topic

    def transaction_state_topic(self, *, now_wall_ms: int) -> Topic:
        """__transaction_state, created on first need with its settings: compacted,
        transaction.state.log.num.partitions partitions of
        transaction.state.log.segment.bytes segments (Kafka's
        TransactionStateManager.transactionTopicConfigs)."""
        topic = self.topics.get(TRANSACTION_STATE_TOPIC)
        if topic is None:
            topic = self.create(
                TRANSACTION_STATE_TOPIC,
                self.config["transaction.state.log.num.partitions"],
                {
                    "cleanup.policy": "compact",
                    "segment.bytes": str(self.config["transaction.state.log.segment.bytes"]),
                },
                now_wall_ms=now_wall_ms,
                internal=True,
                replication_factor=self._internal_replicas(
                    "transaction.state.log.replication.factor"
                ),
            )
            log.info(
                "created %s with %d partitions", TRANSACTION_STATE_TOPIC, len(topic.partitions)
            )
        return topic

    def _internal_replicas(self, setting: str) -> int:
        """An internal topic's replication factor. Kafka refuses to create it while fewer
        brokers are up (COORDINATOR_NOT_AVAILABLE, until there are); kmock's brokers are all
        registered from the start, so more than kmock.brokers is capped at it."""
        return min(int(self.config[setting]), self.cluster.size)

    # --- queries ---

    def missing_partitions(self, name: str, indexes: Iterable[int]) -> list[int]:
        """Those of `indexes` that are not partitions of topic `name` (all of them when the
        topic does not exist): the metadata cache check of Kafka's
        KafkaApis.handleOffsetCommitRequest and handleTxnOffsetCommitRequest."""
        topic = self.topics.get(name)
        count = 0 if topic is None else len(topic.partitions)
        return [i for i in indexes if not 0 <= i < count]

    def get(self, name: str) -> Topic | None:
        return self.topics.get(name)

    def partition(self, name: str, index: int) -> Partition:
        topic = self.topics.get(name)
        if topic is None or not 0 <= index < len(topic.partitions):
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"{name}-{index}")
        return topic.partitions[index]

    # --- changes ---

    def check_new(self, name: str) -> None:
        """Raise the KafkaError that creating topic `name` would raise, creating nothing."""
        validate_topic_name(name)
        if name in self.topics or name in self._changing or name in _INTERNAL_TOPICS:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        # Kafka refuses names that collide once '.' and '_' are treated alike (metrics names).
        folded = name.replace(".", "_")
        for other in (*self.topics, *self._changing):
            if other.replace(".", "_") == folded:
                raise KafkaError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {other}",
                )

    def _new_topic(
        self,
        name: str,
        num_partitions: int,
        configs: dict[str, str],
        internal: bool,
        topic_id: uuid.UUID | None,
    ) -> Topic:
        if not (internal and name in _INTERNAL_TOPICS and name not in self.topics):
            self.check_new(name)
        if num_partitions < 1:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"{num_partitions} partitions")
        check_partition_count(num_partitions)
        return Topic(name, topic_id or uuid.uuid4(), [], configs, internal)

    def _publish(self, topic: Topic) -> None:
        """Make a topic whose partitions are all open visible, and write topics.json.

        Raises:
          KafkaError: KAFKA_STORAGE_ERROR when topics.json cannot be written; the topic is
            then not in the registry (its partitions are still open: the caller undoes them).
        """
        self.topics[topic.name] = topic
        self.by_id[topic.topic_id] = topic
        _view_changed()
        try:
            self._save()
        except OSError as e:
            del self.topics[topic.name]
            del self.by_id[topic.topic_id]
            _view_changed()
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"could not create {topic.name}: {e}"
            ) from e

    def create(
        self,
        name: str,
        num_partitions: int,
        configs: dict[str, str],
        *,
        now_wall_ms: int,
        internal: bool = False,
        topic_id: uuid.UUID | None = None,
        replication_factor: int | None = None,
        assignments: list[list[int]] | None = None,
    ) -> Topic:
        """Create a topic, opening its logs here, blocking: for the few partitions of an
        auto-created topic or __consumer_offsets. CreateTopics uses `create_in_thread`.

        Raises:
          KafkaError: the checks' errors (see `check_new`); LEADER_NOT_AVAILABLE while a
            CreateTopics of the same name is opening its partitions (what Kafka answers a
            Metadata request for a topic still being created); KAFKA_STORAGE_ERROR, with
            nothing left behind.
        """
        if name in self._changing and name not in self.topics:
            raise KafkaError(ErrorCode.LEADER_NOT_AVAILABLE, f"{name} is being created")
        topic = self._new_topic(name, num_partitions, configs, internal, topic_id)
        replicas = self._placement(name, num_partitions, replication_factor, assignments)
        lc = _log_config(self.config, configs)
        try:
            topic.partitions = self._open_partitions(
                topic, 0, num_partitions, lc, now_wall_ms, replicas
            )
        except (OSError, KafkaError) as e:
            raise _create_failed(name, num_partitions, e) from e
        try:
            self._publish(topic)
        except KafkaError:
            self._discard(name, topic.partitions, num_partitions)
            raise
        return topic

    def _placement(
        self,
        name: str,
        count: int,
        replication_factor: int | None,
        assignments: list[list[int]] | None,
        first: int = 0,
    ) -> list[list[int]]:
        """The replicas of partitions first..count-1 (broker.cluster_state).

        Raises:
          KafkaError: INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT.
        """
        if assignments is not None:
            for replicas in assignments:
                self.cluster.check_assignment(replicas)
            return [list(r) for r in assignments]
        if replication_factor is None:
            replication_factor = int(self.config["default.replication.factor"])
        return self.cluster.assign(name, first, count, replication_factor)

    async def create_in_thread(
        self,
        name: str,
        num_partitions: int,
        configs: dict[str, str],
        *,
        now_wall_ms: int,
        replication_factor: int | None = None,
        assignments: list[list[int]] | None = None,
    ) -> Topic:
        """`create`, with the partitions' file work in a worker thread (see the module
        docstring).

        Cancellation never leaves a topic half-created: before the thread starts it creates
        nothing, and once the thread runs the call waits for it (trio's default) and then
        publishes the topic, or undoes it, as if it had not been cancelled.
        """
        topic = self._new_topic(name, num_partitions, configs, False, None)
        replicas = self._placement(name, num_partitions, replication_factor, assignments)
        lc = _log_config(self.config, configs)
        self._changing[name] = trio.Event()
        try:
            try:
                topic.partitions = await trio.to_thread.run_sync(
                    self._open_partitions, topic, 0, num_partitions, lc, now_wall_ms, replicas
                )
            except (OSError, KafkaError) as e:
                raise _create_failed(name, num_partitions, e) from e
            try:
                self._publish(topic)
            except KafkaError:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(
                        self._discard, name, topic.partitions, num_partitions
                    )
                raise
        finally:
            self._changing.pop(name).set()
        return topic

    async def wait_settled(self, name: str) -> None:
        """Wait until no partitions of topic `name` are being opened."""
        while (event := self._changing.get(name)) is not None:
            await event.wait()

    async def add_partitions(
        self,
        name: str,
        total: int,
        *,
        now_wall_ms: int,
        assignments: list[list[int]] | None = None,
    ) -> None:
        """Grow topic `name` to `total` partitions, opening the new logs in a worker thread.

        The caller checks the request after `wait_settled(name)`, with no checkpoint
        between that and this call. The topic may be deleted while the logs are opened:
        the new partitions are then removed too.

        Raises:
          KafkaError: KAFKA_STORAGE_ERROR, with nothing added; UNKNOWN_TOPIC_OR_PARTITION
            when the topic was deleted meanwhile.
        """
        assert name not in self._changing, f"{name} is already changing"
        topic = self.topics[name]
        first = len(topic.partitions)
        check_partition_count(total - first)
        # The new partitions get as many replicas as the first one has (Kafka's
        # ReplicationControlManager.createPartitions uses the topic's replication factor),
        # or those of the request's manual `assignments` (checked by the caller).
        replicas = self._placement(
            name, total, len(topic.partitions[0].replicas), assignments, first
        )
        lc = _log_config(self.config, topic.configs)
        self._changing[name] = trio.Event()
        try:
            try:
                added = await trio.to_thread.run_sync(
                    self._open_partitions, topic, first, total, lc, now_wall_ms, replicas
                )
            except (OSError, KafkaError) as e:
                raise _add_failed(name, e) from e
            failure: KafkaError | None = None
            if self.topics.get(name) is not topic:
                failure = KafkaError(
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
            else:
                lc = _log_config(self.config, topic.configs)  # as AlterConfigs left them
                for p in added:
                    p.log.config = lc
                topic.partitions.extend(added)
                _view_changed()
                try:
                    self._save()
                except OSError as e:
                    del topic.partitions[first:]
                    _view_changed()
                    failure = _add_failed(name, e)
            if failure is not None:
                with trio.CancelScope(shield=True):
                    await trio.to_thread.run_sync(self._discard, name, added, total, first)
                raise failure
        finally:
            self._changing.pop(name).set()

    def _discard(self, name: str, opened: list[Partition], total: int, first: int = 0) -> None:
        for p in opened:
            with contextlib.suppress(KafkaError):  # its directory goes next anyway
                p.log.close()
        for i in range(first, total):
            for root in self.cluster.roots():
                shutil.rmtree(partition_dir(root, name, i), ignore_errors=True)

    def delete(self, name: str) -> None:
        topic = self.topics.pop(name)
        self.by_id.pop(topic.topic_id, None)
        _view_changed()
        self._save()
        for p in topic.partitions:
            p.notify()
            p.log.close()
            shutil.rmtree(p.log.path, ignore_errors=True)

    def set_configs(self, name: str, configs: dict[str, str]) -> None:
        topic = self.topics[name]
        topic.configs = configs
        lc = _log_config(self.config, configs)
        for p in topic.partitions:
            p.log.config = lc
        self._save()

    def close(self) -> None:
        """Close every log; one that cannot be closed (a full or failed disk) is logged and
        left for recovery at the next start, and the others are still closed."""
        for topic in self.topics.values():
            for p in topic.partitions:
                try:
                    p.log.close()
                except KafkaError as e:
                    log.error("closing %s-%d failed: %s", topic.name, p.index, e)


def _create_failed(name: str, num_partitions: int, e: Exception) -> KafkaError:
    return KafkaError(
        ErrorCode.KAFKA_STORAGE_ERROR,
        f"could not create {num_partitions} partitions of {name}: {e}",
    )


def _add_failed(name: str, e: Exception) -> KafkaError:
    return KafkaError(ErrorCode.KAFKA_STORAGE_ERROR, f"could not add partitions to {name}: {e}")
