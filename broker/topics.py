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
"""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import os
import re
import shutil
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trio

from broker.config import TOPIC_CONFIGS, Config
from protocol.errors import ErrorCode, KafkaError
from storage import Log, LogConfig

log = logging.getLogger("broker.topics")

OFFSETS_TOPIC = "__consumer_offsets"
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
MAX_TOPIC_NAME = 249
# Kafka's controller refuses an operation that would write more than 10,000 records
# (QuorumController.MAX_RECORDS_PER_USER_OP, KAFKA-14996); one record per partition here.
MAX_PARTITIONS_PER_REQUEST = 10_000


def check_partition_count(new_partitions: int) -> None:
    if new_partitions > MAX_PARTITIONS_PER_REQUEST:
        raise KafkaError(
            ErrorCode.POLICY_VIOLATION, "Excessively large number of partitions per request."
        )


def validate_topic_name(name: str) -> None:
    """Kafka's Topic.validate: 1-249 chars of [a-zA-Z0-9._-], not "." or ".."."""
    if (
        not name
        or name in (".", "..")
        or len(name) > MAX_TOPIC_NAME
        or not _LEGAL_TOPIC.match(name)
    ):
        raise KafkaError(ErrorCode.INVALID_TOPIC_EXCEPTION, f"illegal topic name {name!r}")


@dataclass(eq=False)
class Partition:
    topic: str
    index: int
    log: Log
    leader_epoch: int = 0
    # Fetches parked on this partition; an append wakes them all.
    waiters: set[trio.Event] = field(default_factory=set)

    def notify(self) -> None:
        for ev in self.waiters:
            ev.set()
        self.waiters.clear()


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

    flush_messages = get("flush.messages")
    flush_ms = get("flush.ms")
    if flush_messages == 1:
        flush_mode, flush_interval = "always", 0
    elif flush_ms is None or flush_ms < 0:
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
        max_message_bytes=get("max.message.bytes"),
        message_timestamp_type=str(get("message.timestamp.type")),
    )


def _invalid(name: str, value: str, why: str) -> KafkaError:
    return KafkaError(
        ErrorCode.INVALID_CONFIG, f"Invalid value {value} for configuration {name}: {why}"
    )


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
            if setting.min_value is not None and number < setting.min_value:
                raise _invalid(name, value, f"Value must be at least {setting.min_value}")
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
    def __init__(self, config: Config, data_dir: Path) -> None:
        self.config = config
        self.data_dir = data_dir
        self.topics: dict[str, Topic] = {}
        self.by_id: dict[uuid.UUID, Topic] = {}
        self.recovery_notes: list[str] = []

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
        tmp = self._table_path().with_suffix(".tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(table, f, indent=1, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self._table_path())
        _fsync_dir(self.data_dir)

    def load(self, now_wall_ms: int) -> None:
        """Open every topic in topics.json, recovering each log; remove orphan directories."""
        path = self._table_path()
        table = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
        for name, entry in table.items():
            topic = Topic(
                name,
                uuid.UUID(entry["topic_id"]),
                [],
                dict(entry["configs"]),
                bool(entry.get("internal", False)),
            )
            lc = _log_config(self.config, topic.configs)
            for i in range(int(entry["partitions"])):
                topic.partitions.append(self._open_partition(topic, i, lc, now_wall_ms))
            self.topics[name] = topic
            self.by_id[topic.topic_id] = topic
        known = {f"{t.name}-{p.index}" for t in self.topics.values() for p in t.partitions}
        for child in self.data_dir.iterdir():
            if child.is_dir() and re.match(r".+-\d+$", child.name) and child.name not in known:
                log.warning(
                    "removing %s: not in topics.json (a create or delete that did not finish)",
                    child,
                )
                shutil.rmtree(child, ignore_errors=True)

    def _open_partition(
        self, topic: Topic, index: int, lc: LogConfig, now_wall_ms: int
    ) -> Partition:
        pdir = self.data_dir / f"{topic.name}-{index}"
        fresh = not pdir.exists()
        pdir.mkdir(parents=True, exist_ok=True)
        meta = pdir / "partition.metadata"
        if fresh or not meta.exists():
            tid = base64.urlsafe_b64encode(topic.topic_id.bytes).rstrip(b"=").decode()
            meta.write_text(f"version: 0\ntopic_id: {tid}\n", encoding="utf-8")
        plog = Log.open(pdir, lc, now_wall_ms=now_wall_ms)
        report = getattr(plog, "recovery_report", None)
        if report:
            note = f"{pdir.name}: {report}"
            self.recovery_notes.append(note)
            log.warning("recovered %s", note)
        return Partition(topic.name, index, plog)

    # --- queries ---

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
        if name in self.topics or name == OFFSETS_TOPIC:
            raise KafkaError(ErrorCode.TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists.")
        # Kafka refuses names that collide once '.' and '_' are treated alike (metrics names).
        folded = name.replace(".", "_")
        for other in self.topics:
            if other.replace(".", "_") == folded:
                raise KafkaError(
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"Topic '{name}' collides with existing topic: {other}",
                )

    def create(
        self,
        name: str,
        num_partitions: int,
        configs: dict[str, str],
        *,
        now_wall_ms: int,
        internal: bool = False,
        topic_id: uuid.UUID | None = None,
    ) -> Topic:
        if not (internal and name == OFFSETS_TOPIC and name not in self.topics):
            self.check_new(name)
        if num_partitions < 1:
            raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"{num_partitions} partitions")
        check_partition_count(num_partitions)
        topic = Topic(name, topic_id or uuid.uuid4(), [], configs, internal)
        lc = _log_config(self.config, configs)
        try:
            for i in range(num_partitions):
                topic.partitions.append(self._open_partition(topic, i, lc, now_wall_ms))
        except (OSError, KafkaError) as e:
            # Out of descriptors or disk: undo, so that nothing half-created stays behind.
            self._discard(name, topic.partitions, num_partitions)
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR,
                f"could not create {num_partitions} partitions of {name}: {e}",
            ) from e
        self.topics[name] = topic
        self.by_id[topic.topic_id] = topic
        self._save()
        return topic

    def add_partitions(self, name: str, total: int, *, now_wall_ms: int) -> None:
        topic = self.topics[name]
        check_partition_count(total - len(topic.partitions))
        lc = _log_config(self.config, topic.configs)
        added: list[Partition] = []
        try:
            for i in range(len(topic.partitions), total):
                added.append(self._open_partition(topic, i, lc, now_wall_ms))
        except (OSError, KafkaError) as e:
            self._discard(name, added, total, first=len(topic.partitions))
            raise KafkaError(
                ErrorCode.KAFKA_STORAGE_ERROR, f"could not add partitions to {name}: {e}"
            ) from e
        topic.partitions.extend(added)
        self._save()

    def _discard(self, name: str, opened: list[Partition], total: int, first: int = 0) -> None:
        for p in opened:
            with contextlib.suppress(KafkaError):  # its directory goes next anyway
                p.log.close()
        for i in range(first, total):
            shutil.rmtree(self.data_dir / f"{name}-{i}", ignore_errors=True)

    def delete(self, name: str) -> None:
        topic = self.topics.pop(name)
        self.by_id.pop(topic.topic_id, None)
        self._save()
        for p in topic.partitions:
            p.notify()
            p.log.close()
            shutil.rmtree(self.data_dir / f"{name}-{p.index}", ignore_errors=True)

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


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
