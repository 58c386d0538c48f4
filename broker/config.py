"""Broker configuration under Kafka's own names, from defaults, a properties file, the
environment and command-line flags (later sources win, in that order).

`SETTINGS` is the one table of what can be configured. It feeds the `kmock serve` flags
(`log.dirs` -> `--log-dirs`), the properties-file and environment parsers, `kmock serve
--help`, and DescribeConfigs (broker resources list every setting; topic resources list the
topic-level ones under their topic names, e.g. `retention.ms` for `log.retention.ms`).

Environment: `KAFKA_<NAME>` with `_` for `.`, `__` for `_` and `___` for `-` (the convention
of the common Kafka container images), e.g. KAFKA_LOG_DIRS=/data, KAFKA_NUM_PARTITIONS=3,
KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://broker:9092.

Where kmock's default differs from Kafka's, the table says so in `kafka_default`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from coordinator.config import COORDINATOR_SETTINGS
from coordinator.consumer import ConsumerGroupConfig

__all__ = [
    "SETTINGS",
    "Config",
    "ConfigError",
    "Setting",
    "consumer_group_config",
    "load_config",
    "parse_properties",
]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
_GROUP = COORDINATOR_SETTINGS
_CONSUMER = ConsumerGroupConfig()  # the group.consumer.* defaults, which are Kafka's


class ConfigError(ValueError):
    """A setting that does not exist or whose value has the wrong type."""


@dataclass(frozen=True, slots=True)
class Setting:
    name: str
    type: str  # "string" | "int" | "long" | "boolean" | "list" | "class"
    default: Any
    doc: str
    topic_name: str | None = None  # the topic-level config this broker setting is the default of
    kafka_default: Any = None  # when kmock's default differs from Kafka's
    read_only: bool = True  # Kafka's "read-only" broker configs (cannot be altered at runtime)
    min_value: int | float | None = None  # Kafka's ConfigDef range check (atLeast)
    choices: tuple[str, ...] | None = None  # Kafka's ValidString / ValidList
    acted_on: bool = True  # False: accepted and reported like Kafka, but kmock ignores it


def _s(name: str, type: str, default: Any, doc: str, **kw: Any) -> Setting:
    return Setting(name, type, default, doc, **kw)


SETTINGS: dict[str, Setting] = {
    s.name: s
    for s in [
        # --- server ---
        _s(
            "listeners",
            "list",
            "PLAINTEXT://127.0.0.1:9092",
            "Where to listen, as PLAINTEXT://host:port (port 0 picks a free port).",
            kafka_default="PLAINTEXT://:9092",
        ),
        _s(
            "advertised.listeners",
            "list",
            None,
            "Address given to clients in Metadata and FindCoordinator; defaults to listeners.",
        ),
        _s("node.id", "int", 0, "This broker's id (broker.id)."),
        _s(
            "log.dirs",
            "string",
            "./data",
            "Directory holding the partition logs.",
            kafka_default="/tmp/kafka-logs",
        ),
        _s(
            "socket.request.max.bytes",
            "int",
            104857600,
            "Largest request frame accepted; a larger one closes the connection.",
        ),
        _s("connections.max.idle.ms", "long", 600000, "Connections idle for longer are closed."),
        _s("max.connections", "int", INT_MAX, "Connections accepted at once; more are closed."),
        _s(
            "admin.port",
            "int",
            -1,
            "Port of the HTTP admin endpoint (/healthz, /readyz, /metrics); -1 = off. kmock only.",
        ),
        _s("admin.host", "string", "127.0.0.1", "Host of the HTTP admin endpoint. kmock only."),
        # --- topics ---
        _s("num.partitions", "int", 1, "Partitions of auto-created topics."),
        _s(
            "default.replication.factor",
            "int",
            1,
            "Replication factor of auto-created topics (kmock is a single broker).",
        ),
        _s(
            "auto.create.topics.enable",
            "boolean",
            True,
            "Create a topic when a client asks for its metadata.",
        ),
        _s("delete.topic.enable", "boolean", True, "Allow DeleteTopics."),
        _s(
            "message.max.bytes",
            "int",
            1048588,
            "Largest record batch accepted.",
            topic_name="max.message.bytes",
            read_only=False,
            min_value=0,
        ),
        _s(
            "log.message.timestamp.type",
            "string",
            "CreateTime",
            "CreateTime or LogAppendTime.",
            topic_name="message.timestamp.type",
            read_only=False,
            choices=("CreateTime", "LogAppendTime"),
        ),
        # --- log ---
        _s(
            "log.segment.bytes",
            "int",
            1073741824,
            "Segment size before a new one is rolled.",
            topic_name="segment.bytes",
            read_only=False,
            min_value=14,
        ),
        _s(
            "log.roll.ms",
            "long",
            None,
            "Segment age before a new one is rolled.",
            topic_name="segment.ms",
            read_only=False,
            min_value=1,
        ),
        _s("log.roll.hours", "int", 168, "log.roll.ms in hours, used when that is unset."),
        _s(
            "log.retention.ms",
            "long",
            None,
            "How long to keep a segment (-1: forever).",
            topic_name="retention.ms",
            read_only=False,
            min_value=-1,
        ),
        _s("log.retention.minutes", "int", None, "log.retention.ms in minutes."),
        _s("log.retention.hours", "int", 168, "log.retention.ms in hours."),
        _s(
            "log.retention.bytes",
            "long",
            -1,
            "Size of a partition beyond which old segments are deleted (-1: no limit).",
            topic_name="retention.bytes",
            read_only=False,
        ),
        _s(
            "log.retention.check.interval.ms",
            "long",
            300000,
            "How often retention runs.",
            min_value=1,
        ),
        _s(
            "log.index.interval.bytes",
            "int",
            4096,
            "Bytes between two offset index entries.",
            topic_name="index.interval.bytes",
            read_only=False,
            min_value=0,
        ),
        _s(
            "log.cleanup.policy",
            "list",
            "delete",
            "delete or compact.",
            topic_name="cleanup.policy",
            read_only=False,
            choices=("delete", "compact"),
        ),
        _s(
            "log.cleaner.delete.retention.ms",
            "long",
            86400000,
            "How long tombstones stay in a compacted topic.",
            topic_name="delete.retention.ms",
            read_only=False,
            min_value=0,
        ),
        _s("log.cleaner.backoff.ms", "long", 15000, "How often compaction runs."),
        _s(
            "log.flush.interval.messages",
            "long",
            LONG_MAX,
            "1 = fsync every append before it is acknowledged.",
            topic_name="flush.messages",
            read_only=False,
            min_value=1,
        ),
        _s(
            "log.flush.interval.ms",
            "long",
            5,
            "Group commit: a write waited for (acks=all, OffsetCommit) is answered after the "
            "next fsync, which starts at once or when the running one ends; other writes are "
            "fsynced within N ms. -1 = never fsync (Kafka's default: the OS page cache decides).",
            topic_name="flush.ms",
            kafka_default="unset (never fsync)",
            read_only=False,
        ),
        _s(
            "group.commit.delay.ms",
            "long",
            0,
            "Group commit: wait until this long after the previous fsync began before the "
            "next one for a waiting write, so that more writes share it (PostgreSQL's "
            "commit_delay); 0 = start it at once. kmock only.",
            min_value=0,
        ),
        # Topic configs that clients and tools set routinely: accepted, validated and reported
        # under Kafka's names and defaults, but with no effect on a single broker without
        # replication, tiered storage or a log cleaner schedule of its own.
        _s(
            "compression.type",
            "string",
            "producer",
            "Compression of stored batches; kmock stores batches as the producer sent them.",
            topic_name="compression.type",
            read_only=False,
            acted_on=False,
            choices=("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd"),
        ),
        _s(
            "min.insync.replicas",
            "int",
            1,
            "Replicas that must acknowledge acks=all; always met by the one broker.",
            topic_name="min.insync.replicas",
            read_only=False,
            acted_on=False,
            min_value=1,
        ),
        _s(
            "unclean.leader.election.enable",
            "boolean",
            False,
            "No effect with one replica.",
            topic_name="unclean.leader.election.enable",
            read_only=False,
            acted_on=False,
        ),
        _s(
            "log.cleaner.min.compaction.lag.ms",
            "long",
            0,
            "Accepted; not used by kmock.",
            topic_name="min.compaction.lag.ms",
            read_only=False,
            acted_on=False,
            min_value=0,
        ),
        _s(
            "log.cleaner.max.compaction.lag.ms",
            "long",
            LONG_MAX,
            "Accepted; not used by kmock.",
            topic_name="max.compaction.lag.ms",
            read_only=False,
            acted_on=False,
            min_value=1,
        ),
        _s(
            "log.cleaner.min.cleanable.ratio",
            "double",
            0.5,
            "Accepted; not used by kmock.",
            topic_name="min.cleanable.dirty.ratio",
            read_only=False,
            acted_on=False,
            min_value=0,
        ),
        _s(
            "log.preallocate",
            "boolean",
            False,
            "Accepted; not used by kmock.",
            topic_name="preallocate",
            read_only=False,
            acted_on=False,
        ),
        _s(
            "log.segment.delete.delay.ms",
            "long",
            60000,
            "Accepted; kmock deletes at once.",
            topic_name="file.delete.delay.ms",
            read_only=False,
            acted_on=False,
            min_value=0,
        ),
        _s(
            "log.index.size.max.bytes",
            "int",
            10485760,
            "Accepted; not used by kmock.",
            topic_name="segment.index.bytes",
            read_only=False,
            acted_on=False,
            min_value=4,
        ),
        _s(
            "log.roll.jitter.ms",
            "long",
            0,
            "Accepted; not used by kmock.",
            topic_name="segment.jitter.ms",
            read_only=False,
            acted_on=False,
            min_value=0,
        ),
        _s(
            "log.message.timestamp.before.max.ms",
            "long",
            LONG_MAX,
            "Accepted; kmock does not reject old timestamps.",
            topic_name="message.timestamp.before.max.ms",
            read_only=False,
            acted_on=False,
            min_value=0,
        ),
        _s(
            "log.message.timestamp.after.max.ms",
            "long",
            3600000,
            "Accepted; kmock does not reject future timestamps.",
            topic_name="message.timestamp.after.max.ms",
            read_only=False,
            acted_on=False,
            min_value=0,
        ),
        # --- group coordinator ---
        _s(
            "offsets.topic.num.partitions",
            "int",
            _GROUP["offsets.topic.num.partitions"].default,
            "Partitions of __consumer_offsets.",
        ),
        _s("offsets.topic.segment.bytes", "int", 104857600, "Segment size of __consumer_offsets."),
        _s(
            "offsets.retention.minutes",
            "int",
            _GROUP["offsets.retention.minutes"].default,
            "How long committed offsets are kept.",
        ),
        _s(
            "offsets.retention.check.interval.ms",
            "long",
            _GROUP["offsets.retention.check.interval.ms"].default,
            "How often expired offsets are removed.",
        ),
        _s(
            "offset.metadata.max.bytes",
            "int",
            _GROUP["offset.metadata.max.bytes"].default,
            "Largest commit metadata string.",
        ),
        _s(
            "group.min.session.timeout.ms",
            "int",
            _GROUP["group.min.session.timeout.ms"].default,
            "Smallest session timeout accepted.",
        ),
        _s(
            "group.max.session.timeout.ms",
            "int",
            _GROUP["group.max.session.timeout.ms"].default,
            "Largest session timeout accepted.",
        ),
        _s(
            "group.initial.rebalance.delay.ms",
            "int",
            _GROUP["group.initial.rebalance.delay.ms"].default,
            "Wait for more members before the first rebalance of an empty group.",
            kafka_default=_GROUP["group.initial.rebalance.delay.ms"].kafka_default,
        ),
        _s(
            "group.max.size",
            "int",
            _GROUP["group.max.size"].default,
            "Members a group may have.",
        ),
        # --- KIP-848 consumer groups (group.protocol=consumer) ---
        _s(
            "group.consumer.session.timeout.ms",
            "int",
            _CONSUMER.session_timeout_ms,
            "A consumer group member that does not heartbeat for this long is removed.",
            min_value=1,
        ),
        _s(
            "group.consumer.heartbeat.interval.ms",
            "int",
            _CONSUMER.heartbeat_interval_ms,
            "How often consumer group members heartbeat (sent to them); below the session timeout.",
            min_value=1,
        ),
        _s(
            "group.consumer.max.size",
            "int",
            _CONSUMER.max_size,
            "Members a consumer group may have.",
            min_value=1,
        ),
        _s(
            "group.consumer.assignors",
            "list",
            ",".join(_CONSUMER.assignors),
            "Server-side assignors (uniform, range); the first is the default, a member may "
            "name another.",
        ),
        _s(
            "group.consumer.migration.policy",
            "string",
            "disabled",
            "Online conversion between classic and consumer groups: kmock has none, so a "
            "consumer-protocol member cannot join a classic group that has members.",
            kafka_default="bidirectional",
            choices=("disabled",),
        ),
    ]
}


def _convert(setting: Setting, value: Any) -> Any:
    if value is None or not isinstance(value, str):
        return value
    v = value.strip()
    try:
        if setting.type in ("int", "long"):
            return int(v)
        if setting.type == "double":
            return float(v)
        if setting.type == "boolean":
            if v.lower() not in ("true", "false"):
                raise ValueError(v)
            return v.lower() == "true"
    except ValueError:
        raise ConfigError(f"{setting.name}: {value!r} is not a valid {setting.type}") from None
    return v


def parse_properties(text: str) -> dict[str, str]:
    """Java-style `key=value` (or `key: value`) lines; `#` and `!` start comments."""
    out: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line[0] in "#!":
            continue
        sep = min((i for i in (line.find("="), line.find(":")) if i >= 0), default=-1)
        if sep < 0:
            raise ConfigError(f"not a key=value line: {raw!r}")
        out[line[:sep].strip()] = line[sep + 1 :].strip()
    return out


def env_to_name(var: str) -> str | None:
    """KAFKA_LOG_DIRS -> log.dirs; `__` -> `_`, `___` -> `-`. None for other variables."""
    if not var.startswith("KAFKA_"):
        return None
    rest = var[len("KAFKA_") :].lower()
    return (
        rest.replace("___", "\0")
        .replace("__", "\1")
        .replace("_", ".")
        .replace("\0", "-")
        .replace("\1", "_")
    )


@dataclass
class Config:
    values: dict[str, Any] = field(default_factory=dict)
    # Settings given explicitly (file, env or flag), for DescribeConfigs' config_source.
    explicit: set[str] = field(default_factory=set)

    def __getitem__(self, name: str) -> Any:
        return self.values[name]

    # --- derived values (Kafka's precedence rules) ---

    @property
    def retention_ms(self) -> int:
        if self["log.retention.ms"] is not None:
            return int(self["log.retention.ms"])
        if self["log.retention.minutes"] is not None:
            return int(self["log.retention.minutes"]) * 60_000
        return int(self["log.retention.hours"]) * 3_600_000

    @property
    def roll_ms(self) -> int:
        if self["log.roll.ms"] is not None:
            return int(self["log.roll.ms"])
        return int(self["log.roll.hours"]) * 3_600_000

    def topic_default(self, topic_name: str) -> Any:
        """The broker-wide default of a topic-level config (`retention.ms` -> 604800000)."""
        derived = {"retention.ms": self.retention_ms, "segment.ms": self.roll_ms}
        if topic_name in derived:
            return derived[topic_name]
        for s in SETTINGS.values():
            if s.topic_name == topic_name:
                return self[s.name]
        raise KeyError(topic_name)


def consumer_group_config(config: Config) -> ConsumerGroupConfig:
    """The KIP-848 consumer groups' settings (group.consumer.*).

    Raises:
      ConfigError: a value out of range, an unknown assignor, a heartbeat interval not
        below the session timeout, or a migration policy other than disabled.
    """
    policy = str(config["group.consumer.migration.policy"]).lower()
    if policy != "disabled":
        raise ConfigError(
            f"group.consumer.migration.policy: {policy!r} is not supported: kmock does not "
            "convert groups between the classic and consumer protocols; use disabled"
        )
    assignors = tuple(a.strip() for a in str(config["group.consumer.assignors"]).split(","))
    try:
        return ConsumerGroupConfig(
            session_timeout_ms=int(config["group.consumer.session.timeout.ms"]),
            heartbeat_interval_ms=int(config["group.consumer.heartbeat.interval.ms"]),
            max_size=int(config["group.consumer.max.size"]),
            assignors=tuple(a for a in assignors if a),
        )
    except ValueError as e:
        raise ConfigError(str(e)) from None


TOPIC_CONFIGS: dict[str, Setting] = {
    s.topic_name: s for s in SETTINGS.values() if s.topic_name is not None
}


def load_config(
    *,
    properties: Mapping[str, str] | None = None,
    environ: Mapping[str, str] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Config:
    """Defaults, then a properties file's contents, then KAFKA_* variables, then overrides."""
    cfg = Config({name: s.default for name, s in SETTINGS.items()})
    layers: Iterable[Mapping[str, Any]] = (
        properties or {},
        {n: v for k, v in (environ or {}).items() if (n := env_to_name(k)) is not None},
        overrides or {},
    )
    for layer in layers:
        for name, value in layer.items():
            if value is None:
                continue
            if name == "broker.id":
                name = "node.id"
            setting = SETTINGS.get(name)
            if setting is None:
                raise ConfigError(f"unknown setting {name!r}")
            cfg.values[name] = _convert(setting, value)
            cfg.explicit.add(name)
    return cfg
