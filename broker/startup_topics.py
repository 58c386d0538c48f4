"""Topics created at start: `kmock.create.topics` (`kmock serve --create-topics`,
`KAFKA_CREATE_TOPICS` in a container, `topics=` in the pytest fixture).

    orders:3,events:1:1:cleanup.policy=compact,retention.ms=60000,audit:2

Grammar: topics separated by commas, each `name:partitions[:replication][:config=value,...]`.
A comma-separated item of the form `key=value` (no `:` before its `=`) continues the
configs of the topic before it. `-1` for partitions or replication means the broker's
default (num.partitions, default.replication.factor), as in CreateTopics. The fourth field
of the wurstmeister image's KAFKA_CREATE_TOPICS, a bare `compact` or `delete`, is read as
cleanup.policy.

The spec is checked whole when the settings are read (`startup_topics`), before anything is
written: a malformed one stops the start with one message naming the setting and the topic.
The topics are created by `create_startup_topics`, which `Broker.open` calls after the logs
are loaded and before the listeners are bound, so they exist the moment the port accepts
connections and long before /readyz says ready. A topic that exists already is kept as it
is, whatever its partitions and configs (logged when they differ).
"""

from __future__ import annotations

import logging
import re
from typing import TYPE_CHECKING, NamedTuple

from broker.config import Config, ConfigError
from broker.placement import check_replication_factor
from broker.topics import check_partition_count, validate_topic_configs, validate_topic_name
from protocol.errors import KafkaError
from storage.layout import OFFSETS_TOPIC

if TYPE_CHECKING:
    from broker.topics import TopicRegistry

log = logging.getLogger("broker.server")

__all__ = ["TopicSpec", "create_startup_topics", "parse_create_topics", "startup_topics"]

SETTING = "kmock.create.topics"
_CONFIG_ITEM = re.compile(r"^[^:=]+=")


class TopicSpec(NamedTuple):  # not a frozen dataclass: made in a fifth of the time
    name: str
    num_partitions: int
    configs: dict[str, str]
    replication_factor: int | None = None  # None: default.replication.factor


def _int(text: str, what: str, item: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise ConfigError(f"{SETTING}: {item!r}: {what} {text!r} is not a number") from None


def _configs(text: str, item: str) -> dict[str, str]:
    if text.strip() in ("compact", "delete"):  # wurstmeister's name:partitions:replicas:policy
        return {"cleanup.policy": text.strip()}
    out: dict[str, str] = {}
    for pair in text.split(","):
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{SETTING}: {item!r}: {pair!r} is not config=value")
        out[key.strip()] = value.strip()
    return out


def parse_create_topics(spec: str, config: Config) -> list[TopicSpec]:
    """The topics `spec` asks for, checked as CreateTopics checks them.

    Raises:
      ConfigError: one message naming kmock.create.topics and the topic at fault.
    """
    items: list[str] = []
    for raw in spec.split(","):
        part = raw.strip()
        if not part:
            continue
        if _CONFIG_ITEM.match(part) and items and "=" in items[-1]:
            items[-1] += "," + part  # one more config of the topic before
        else:
            items.append(part)
    out: list[TopicSpec] = []
    for item in items:
        fields = item.split(":")
        if len(fields) < 2:
            raise ConfigError(
                f"{SETTING}: {item!r} is not name:partitions[:replication][:config=value,...]"
            )
        name, partitions_text, rest = fields[0].strip(), fields[1], fields[2:]
        try:
            validate_topic_name(name)
        except KafkaError as e:
            raise ConfigError(f"{SETTING}: {item!r}: {e.detail}") from None
        if name == OFFSETS_TOPIC:
            raise ConfigError(f"{SETTING}: {OFFSETS_TOPIC} is internal; kmock creates it")
        if any(t.name == name for t in out):
            raise ConfigError(f"{SETTING}: topic {name} is listed twice")
        partitions = _int(partitions_text, "partitions", item)
        if partitions == -1:
            partitions = int(config["num.partitions"])
        if partitions < 1:
            raise ConfigError(f"{SETTING}: {item!r}: partitions must be at least 1 (or -1)")
        try:
            check_partition_count(partitions)
        except KafkaError as e:
            raise ConfigError(f"{SETTING}: {item!r}: {e.detail}") from None
        replication: int | None = None
        if rest and "=" not in rest[0] and rest[0].strip() not in ("compact", "delete"):
            replication = _int(rest.pop(0), "replication", item)
            if replication == -1:
                replication = int(config["default.replication.factor"])
            if replication < 1:
                raise ConfigError(f"{SETTING}: {item!r}: replication must be at least 1 (or -1)")
            try:  # CreateTopics' check (broker.placement)
                check_replication_factor(replication, int(config["kmock.brokers"]))
            except KafkaError as e:
                raise ConfigError(f"{SETTING}: {item!r}: {e.detail}") from None
        configs: dict[str, str] = {}
        if rest:
            try:
                configs = validate_topic_configs(dict(_configs(":".join(rest), item)))
            except KafkaError as e:
                raise ConfigError(f"{SETTING}: {item!r}: {e.detail}") from None
        out.append(TopicSpec(name, partitions, configs, replication))
    return out


def startup_topics(config: Config) -> list[TopicSpec]:
    """The checked `kmock.create.topics` of `config` (empty when unset).

    Raises:
      ConfigError: see `parse_create_topics`.
    """
    spec = config["kmock.create.topics"]
    return parse_create_topics(spec, config) if spec else []


def create_startup_topics(
    registry: TopicRegistry, specs: list[TopicSpec], now_wall_ms: int
) -> None:
    """Create the topics of `specs` that do not exist; keep the others as they are.

    Raises:
      KafkaError: a topic could not be created (a name that collides with an existing
        topic's, a storage error), with a message naming the setting.
    """
    for spec in specs:
        existing = registry.get(spec.name)
        if existing is not None:
            differs = len(existing.partitions) != spec.num_partitions or any(
                existing.configs.get(k) != v for k, v in spec.configs.items()
            )
            log.log(
                logging.WARNING if differs else logging.INFO,
                "%s: topic %s exists already (%d partitions, configs %s): kept as it is",
                SETTING,
                spec.name,
                len(existing.partitions),
                existing.configs,
            )
            continue
        try:
            registry.create(
                spec.name,
                spec.num_partitions,
                spec.configs,
                now_wall_ms=now_wall_ms,
                replication_factor=spec.replication_factor,
            )
        except KafkaError as e:
            raise KafkaError(e.code, f"{SETTING}: cannot create {spec.name}: {e.detail}") from e
        log.info(
            "%s: created topic %s (%d partition%s%s)",
            SETTING,
            spec.name,
            spec.num_partitions,
            "" if spec.num_partitions == 1 else "s",
            f", configs {spec.configs}" if spec.configs else "",
        )
