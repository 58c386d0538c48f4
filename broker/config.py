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
from typing import Any, NamedTuple

from broker.cluster_settings import CLUSTER_SETTINGS
from broker.coordinator_settings import COORDINATOR_BROKER_SETTINGS
from broker.listeners import DEFAULT_PROTOCOL_MAP
from broker.security_settings import SECURITY_SETTINGS, listener_prefixed
from coordinator.consumer import ConsumerGroupConfig, ConsumerGroupMigrationPolicy
from protocol.releases import RELEASES

__all__ = [
    "ALIASES",
    "SETTINGS",
    "Config",
    "ConfigError",
    "Setting",
    "below_minimum",
    "consumer_group_config",
    "env_to_name",
    "invalid_value",
    "load_config",
    "parse_properties",
]

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1


class ConfigError(ValueError):
    """A setting that does not exist or whose value has the wrong type."""


class Setting(NamedTuple):
    """One broker setting. A NamedTuple rather than a frozen dataclass: ~180 of them are
    made at every start, and the class itself is made in a fifth of the time."""

    name: str
    type: str  # "string" | "int" | "long" | "boolean" | "list" | "class"
    default: Any
    doc: str
    topic_name: str | None = None  # the topic-level config this broker setting is the default of
    kafka_default: Any = None  # when kmock's default differs from Kafka's
    read_only: bool = True  # Kafka's "read-only" broker configs (cannot be altered at runtime)
    min_value: int | float | None = None  # Kafka's ConfigDef range check (atLeast)
    choices: tuple[str, ...] | None = None  # Kafka's ValidString / ValidList
    choices_ignore_case: bool = False  # Kafka's CaseInsensitiveValidString
    acted_on: bool = True  # False: accepted and reported like Kafka, but kmock ignores it
    sensitive: bool = False  # Kafka's PASSWORD type: never shown (DescribeConfigs, logs)


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
            "Where to listen, as NAME://host:port,... (each NAME mapped to its protocol by "
            "listener.security.protocol.map; port 0 picks a free port).",
            kafka_default="PLAINTEXT://:9092",
        ),
        _s(
            "advertised.listeners",
            "list",
            None,
            "Address given to clients in Metadata and FindCoordinator, per listener name: a "
            "client is told the address of the listener it connected through. Defaults to "
            "listeners (a wildcard host becoming 127.0.0.1).",
        ),
        _s(
            "listener.security.protocol.map",
            "list",
            DEFAULT_PROTOCOL_MAP,
            "The security protocol of each listener name, NAME:PROTOCOL,... (e.g. "
            "PLAINTEXT_HOST:PLAINTEXT, SASL_SSL:SASL_SSL): PLAINTEXT, SSL, SASL_PLAINTEXT or "
            "SASL_SSL. Security settings take a per-listener prefix, "
            "listener.name.<name>.ssl.keystore.location, as in Kafka.",
        ),
        _s(
            "inter.broker.listener.name",
            "string",
            None,
            "Accepted and checked (a name in advertised.listeners); kmock has no other broker.",
            acted_on=False,
        ),
        _s("node.id", "int", 0, "This broker's id (broker.id)."),
        _s(
            "kafka.version",
            "string",
            None,
            "The Kafka release (2.1 to 4.1) whose API versions ApiVersions lists and requests "
            "may use, where kmock implements them. Unset: 4.1's, plus the older versions "
            "kmock implements but message formats v0/v1 (Produce v0-2, Fetch v0-3). "
            "kmock only.",
            choices=RELEASES,
        ),
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
            min_value=1,
        ),
        _s(
            "fetch.max.bytes",
            "int",
            57671680,
            "Largest Fetch response: a request's max_bytes is capped to it, as Kafka's "
            "KafkaApis caps it (the first batch is still returned whole if larger).",
            min_value=1024,
        ),
        _s("connections.max.idle.ms", "long", 600000, "Connections idle for longer are closed."),
        _s(
            "max.connections",
            "int",
            INT_MAX,
            "Connections accepted at once; more are closed.",
            min_value=0,
        ),
        _s(
            "max.connections.per.ip",
            "int",
            INT_MAX,
            "Connections accepted at once from one client address; more are closed.",
            min_value=0,
        ),
        _s(
            "max.connections.per.ip.overrides",
            "string",
            None,
            "Per-address limits that replace max.connections.per.ip, as host:count,ip:count.",
        ),
        _s(
            "queued.max.request.bytes",
            "long",
            256 * 1024 * 1024,
            "Memory for requests being received or handled, all connections together; past it "
            "the broker stops reading requests over 64 KiB until memory comes back. -1 = "
            "unbounded. kmock counts the bytes that arrived, not the size a request announces; "
            "with this default and up to 1,000 connections the broker stays under 512 MiB "
            "(docs/reliability.md, Memory).",
            kafka_default=-1,
            min_value=-1,
        ),
        _s(
            "kmock.reactor.spin.us",
            "int",
            100,
            "Microseconds the broker keeps polling its connections, other tasks running in "
            "between, after answering a connection that was alone in its pass, before it "
            "sleeps: a client whose next request comes within that time finds the broker "
            "awake (waking a sleeping process costs tens of us on a VM). Spins that find "
            "nothing back off as the broker's polls do (broker/reactor.py). 0 = sleep at "
            "once. kmock only.",
            min_value=0,
        ),
        _s(
            "admin.port",
            "int",
            -1,
            "Port of the HTTP admin endpoint (/healthz, /readyz, /metrics); -1 = off. kmock only.",
        ),
        _s("admin.host", "string", "127.0.0.1", "Host of the HTTP admin endpoint. kmock only."),
        _s(
            "admin.allowed.hosts",
            "list",
            "",
            "Host header values the admin endpoint answers besides admin.host, 127.0.0.1, "
            "localhost and [::1] (others get 421, against DNS rebinding), comma-separated; "
            "* for any. kmock only.",
        ),
        _s(
            "kmock.schema.registry.port",
            "int",
            -1,
            "Port of the schema registry (Confluent's REST API, stored in the _schemas "
            "topic); -1 = off, 0 = any free port. kmock only.",
            min_value=-1,
        ),
        _s(
            "kmock.schema.registry.host",
            "string",
            "127.0.0.1",
            "Host of the schema registry endpoint. kmock only.",
        ),
        _s(
            "kmock.create.topics",
            "list",
            None,
            "Topics created at start, before the port accepts connections and /readyz says "
            "ready: name:partitions[:replication][:config=value,...], comma-separated, e.g. "
            "orders:3,events:1:1:cleanup.policy=compact. Existing topics are kept as they are. "
            "KAFKA_CREATE_TOPICS sets it too. kmock only.",
        ),
        # --- test controls (broker.controls, docs/controls.md); kmock only ---
        _s(
            "kmock.clock",
            "string",
            "wall",
            "wall, or virtual: every broker timer waits on a clock that moves only when "
            "advanced (POST /v1/clock/advance). kmock only.",
            choices=("wall", "virtual"),
        ),
        _s(
            "kmock.clock.timestamps",
            "string",
            "wall",
            "With a virtual clock: whether the timestamps the broker writes into records "
            "(LogAppendTime) are real (wall) or virtual. kmock only.",
            choices=("wall", "virtual"),
        ),
        _s(
            "kmock.journal.size",
            "int",
            10000,
            "Requests kept in the request journal (GET /v1/journal, with admin.port); "
            "0 = off. kmock only.",
            min_value=0,
        ),
        # --- topics ---
        _s("num.partitions", "int", 1, "Partitions of auto-created topics.", min_value=1),
        _s(
            "default.replication.factor",
            "int",
            1,
            "Replication factor of auto-created topics, at most kmock.brokers.",
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
        _s(
            "log.roll.hours",
            "int",
            168,
            "log.roll.ms in hours, used when that is unset.",
            min_value=1,
        ),
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
        _s("log.cleaner.backoff.ms", "long", 15000, "How often compaction runs.", min_value=0),
        _s(
            "kmock.durability",
            "string",
            "kafka",
            "kafka: a write is answered once it is in the OS page cache (a kill -9 of kmock "
            "loses nothing acknowledged); logs are fsynced at segment roll, at shutdown and "
            "per log.flush.interval.*, as in Kafka. strict: an acks=all Produce and an "
            "OffsetCommit are answered only after an fsync covers them (group commit: one "
            "fsync shared by every write waiting at that moment), so an OS crash or power "
            "loss loses nothing acknowledged; it costs about one fsync of latency per acks=all "
            "round trip and the fsyncs' disk time. kmock only.",
            choices=("kafka", "strict"),
        ),
        _s(
            "log.flush.interval.messages",
            "long",
            LONG_MAX,
            "Messages a log may hold unflushed: the write that reaches this count is "
            "fsynced before it is answered (1 = every write).",
            topic_name="flush.messages",
            read_only=False,
            min_value=1,
        ),
        _s(
            "log.flush.interval.ms",
            "long",
            None,
            "Longest time a message stays unflushed: a log is fsynced within this many ms of "
            "a write. Unset: log.flush.scheduler.interval.ms, i.e. never on a timer.",
            topic_name="flush.ms",
            read_only=False,
        ),
        _s(
            "log.flush.scheduler.interval.ms",
            "long",
            LONG_MAX,
            "Kafka: how often its flusher checks logs against flush.ms. kmock checks each "
            "log when its flush.ms is due; this is only log.flush.interval.ms's default.",
        ),
        _s(
            "group.commit.delay.ms",
            "long",
            0,
            "kmock.durability=strict: wait until this long after the previous fsync began "
            "before the next one for a waiting write, so that more writes share it "
            "(PostgreSQL's commit_delay); 0 = start it at once. kmock only.",
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
            "In-sync replicas a partition needs for acks=all (NOT_ENOUGH_REPLICAS below); "
            "always met by a single broker.",
            topic_name="min.insync.replicas",
            read_only=False,
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
    ]
}
SETTINGS.update({d["name"]: Setting(**d) for d in COORDINATOR_BROKER_SETTINGS})
SETTINGS.update({d["name"]: Setting(**d) for d in SECURITY_SETTINGS})
SETTINGS.update({d["name"]: Setting(**d) for d in CLUSTER_SETTINGS})


_INT_RANGES = {"int": (-(2**31), INT_MAX), "long": (-(2**63), LONG_MAX)}


def _convert(setting: Setting, value: Any) -> Any:
    if value is None or not isinstance(value, str):
        return _checked(setting, value)
    v = value.strip()
    try:
        if setting.type in ("int", "long"):
            return _checked(setting, int(v))
        if setting.type == "double":
            return _checked(setting, float(v))
        if setting.type == "boolean":
            if v.lower() not in ("true", "false"):
                raise ValueError(v)
            return v.lower() == "true"
    except ConfigError:
        raise
    except ValueError:
        raise ConfigError(f"{setting.name}: {value!r} is not a valid {setting.type}") from None
    if (
        setting.type == "string"
        and setting.choices
        and (v.lower() if setting.choices_ignore_case else v) not in setting.choices
    ):
        raise ConfigError(f"{setting.name}: {value!r} is not one of {', '.join(setting.choices)}")
    return v


def _checked(setting: Setting, number: Any) -> Any:
    """A number within its type's range and the setting's lower bound, as Kafka's ConfigDef
    parses INT/LONG and checks Range.atLeast at start-up ("Invalid value 10 for configuration
    fetch.max.bytes: Value must be at least 1024"); anything else as it is."""
    if isinstance(number, bool) or not isinstance(number, int | float):
        return number
    bounds = _INT_RANGES.get(setting.type)
    if bounds is not None and isinstance(number, int) and not bounds[0] <= number <= bounds[1]:
        raise ConfigError(f"{setting.name}: {number} is not a valid {setting.type}")
    why = below_minimum(setting, number)
    if why is not None:
        raise ConfigError(invalid_value(setting.name, number, why))
    return number


def invalid_value(name: str, value: object, why: str) -> str:
    """Kafka's ConfigException message for a value a setting refuses."""
    return f"Invalid value {value} for configuration {name}: {why}"


def below_minimum(setting: Setting, number: float) -> str | None:
    """Why `number` is under the setting's lower bound (Kafka's Range.atLeast), or None."""
    if setting.min_value is not None and number < setting.min_value:
        return f"Value must be at least {setting.min_value}"
    return None


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


# The variables apache/kafka's image does not turn into settings (KafkaDockerWrapper's
# ExcludeServerPropsEnv): they configure the JVM and log4j.
EXCLUDED_ENV = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HEAP_OPT",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JMX_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_JMX_HOSTNAME",
    }
)
# Other names for settings: Kafka's broker.id, and the KAFKA_CREATE_TOPICS of the common
# images (which the mapping below turns into create.topics).
ALIASES = {"broker.id": "node.id", "create.topics": "kmock.create.topics"}


def env_to_name(var: str) -> str | None:
    """KAFKA_LOG_DIRS -> log.dirs, exactly as apache/kafka's image maps its environment
    (KafkaDockerWrapper.getServerConfigsFromEnv): every "KAFKA_" removed, lower case, then
    `_` -> `.`, `...` -> `-`, `..` -> `_` (so `__` stands for `_` and `___` for `-`). None for
    other variables and for the image's JVM and log4j ones (EXCLUDED_ENV)."""
    if not var.startswith("KAFKA_") or var in EXCLUDED_ENV:
        return None
    return (
        var.replace("KAFKA_", "").lower().replace("_", ".").replace("...", "-").replace("..", "_")
    )


class Config:
    """The broker's settings by name, and which of them were given explicitly (file, env or
    flag), for DescribeConfigs' config_source. A plain class rather than a dataclass, which
    would take longer to make at every start than the settings it holds; nothing compares
    or copies a Config."""

    __slots__ = ("explicit", "values")

    def __init__(
        self, values: dict[str, Any] | None = None, explicit: set[str] | None = None
    ) -> None:
        self.values: dict[str, Any] = {} if values is None else values
        self.explicit: set[str] = set() if explicit is None else explicit

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

    @property
    def flush_ms(self) -> int:
        """log.flush.interval.ms, or log.flush.scheduler.interval.ms when unset (Kafka's
        KafkaConfig.logFlushIntervalMs)."""
        if self["log.flush.interval.ms"] is not None:
            return int(self["log.flush.interval.ms"])
        return int(self["log.flush.scheduler.interval.ms"])

    @property
    def max_connections_per_ip_overrides(self) -> dict[str, int]:
        """max.connections.per.ip.overrides, "host:count,ip:count" (Kafka's CSV map), as
        {host or address: count}.

        Raises:
          ConfigError: an entry is not host:count with a count >= 0.
        """
        out: dict[str, int] = {}
        for item in (
            s.strip() for s in (self["max.connections.per.ip.overrides"] or "").split(",")
        ):
            if not item:
                continue
            host, sep, count = item.rpartition(":")
            host = host.strip().strip("[]")
            if not sep or not host or not count.strip().isdigit():
                raise ConfigError(
                    f"max.connections.per.ip.overrides: {item!r} is not host:count "
                    "(a host name or address, and a count >= 0)"
                )
            out[host] = int(count)
        return out

    def topic_default(self, topic_name: str) -> Any:
        """The broker-wide default of a topic-level config (`retention.ms` -> 604800000)."""
        derived = {
            "retention.ms": self.retention_ms,
            "segment.ms": self.roll_ms,
            "flush.ms": self.flush_ms,
        }
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
        below the session timeout, or an unknown migration policy.
    """
    assignors = tuple(a.strip() for a in str(config["group.consumer.assignors"]).split(","))
    try:
        return ConsumerGroupConfig(
            session_timeout_ms=int(config["group.consumer.session.timeout.ms"]),
            heartbeat_interval_ms=int(config["group.consumer.heartbeat.interval.ms"]),
            max_size=int(config["group.consumer.max.size"]),
            assignors=tuple(a for a in assignors if a),
            migration_policy=ConsumerGroupMigrationPolicy.parse(
                str(config["group.consumer.migration.policy"])
            ),
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
            name = ALIASES.get(name, name)
            setting = SETTINGS.get(name) or listener_prefixed(name, SETTINGS)
            if setting is None:
                raise ConfigError(f"unknown setting {name!r}")
            cfg.values[name] = _convert(setting, value)
            cfg.explicit.add(name)
    _check_connection_limits(cfg)
    return cfg


def _check_connection_limits(cfg: Config) -> None:
    """Kafka's KafkaConfig checks: the overrides parse, and a per-IP limit of 0 comes with
    overrides that let some addresses in."""
    overrides = cfg.max_connections_per_ip_overrides
    if cfg["max.connections.per.ip"] == 0 and not overrides:
        raise ConfigError(
            "max.connections.per.ip can be set to zero only if "
            "max.connections.per.ip.overrides is set"
        )
