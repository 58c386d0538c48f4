"""Config resources: the topic-configuration model and the checks AlterConfigs and
IncrementalAlterConfigs share.

The model is Kafka's ConfigHelper's (see broker.handlers.describe_configs for how
DescribeConfigs reports it): a topic config's value is the topic's override, else the broker
setting behind it; its synonyms are that override (DYNAMIC_TOPIC_CONFIG), then the broker
settings it falls back to, configured (STATIC_BROKER_CONFIG) or default (DEFAULT_CONFIG).
CreateTopics reports a created topic's configs with the same values and sources.

The resource type and config source codes are stated here once, under Kafka's names.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from enum import IntEnum
from typing import Any

from broker.config import SETTINGS, TOPIC_CONFIGS, Config, Setting
from broker.context import RequestContext
from broker.topics import Topic, validate_topic_name
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.describe_configs import DescribeConfigsSynonym


class ConfigResourceType(IntEnum):
    """Kafka's ConfigResource.Type: a config resource's `resource_type`."""

    UNKNOWN = 0
    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8
    CLIENT_METRICS = 16
    GROUP = 32


TOPIC, BROKER = ConfigResourceType.TOPIC, ConfigResourceType.BROKER
RESOURCE_TYPES = {t.value: t.name for t in ConfigResourceType}


class ConfigSource(IntEnum):
    """Kafka's DescribeConfigsResponse.ConfigSource: a config's or a synonym's source."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


DYNAMIC_TOPIC_CONFIG = ConfigSource.DYNAMIC_TOPIC_CONFIG
STATIC_BROKER_CONFIG = ConfigSource.STATIC_BROKER_CONFIG
DEFAULT_CONFIG = ConfigSource.DEFAULT_CONFIG

# DescribeConfigsResponse.ConfigType, by Setting.type
CONFIG_TYPES = {"boolean": 1, "string": 2, "int": 3, "long": 5, "double": 6, "list": 7, "class": 8}

# Broker settings that stand for one another, most specific first (Kafka's
# DynamicBrokerConfig.brokerConfigSynonyms); every other setting stands alone.
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)


def render(setting: Setting, value: Any) -> str | None:
    """A value as Kafka's ConfigDef.convertToString writes it."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if setting.type in ("int", "long"):
        return str(int(value))
    if setting.type == "list":
        return ",".join(item.strip() for item in str(value).split(","))
    return str(value)


def _synonym_group(name: str) -> tuple[str, ...]:
    return next((group for group in _SYNONYM_GROUPS if name in group), (name,))


def broker_synonyms(config: Config, name: str) -> list[DescribeConfigsSynonym]:
    """Where broker setting `name` gets its value from, Kafka's configSynonyms."""
    group = _synonym_group(name)
    found = [
        DescribeConfigsSynonym(
            name=n, value=render(SETTINGS[n], config[n]), source=STATIC_BROKER_CONFIG
        )
        for n in group
        if n in config.explicit
    ] + [
        DescribeConfigsSynonym(
            name=n, value=render(SETTINGS[n], SETTINGS[n].default), source=DEFAULT_CONFIG
        )
        for n in group
        if SETTINGS[n].default is not None
    ]
    while found and found[0].name != name:
        found.pop(0)
    return found


def topic_value(config: Config, overrides: dict[str, str], name: str) -> str | None:
    """The effective value of topic config `name`: the override, else the broker default."""
    setting = TOPIC_CONFIGS[name]
    if name in overrides:
        return render(setting, overrides[name])
    return render(setting, config.topic_default(name))


def topic_synonyms(
    config: Config, overrides: dict[str, str], name: str
) -> list[DescribeConfigsSynonym]:
    own = (
        [
            DescribeConfigsSynonym(
                name=name, value=topic_value(config, overrides, name), source=DYNAMIC_TOPIC_CONFIG
            )
        ]
        if name in overrides
        else []
    )
    return own + broker_synonyms(config, TOPIC_CONFIGS[name].name)


def effective_topic_source(config: Config, overrides: dict[str, str], name: str) -> int:
    """The source CreateTopics reports (the controller's computeEffectiveTopicConfigs, which,
    unlike DescribeConfigs, counts every configured broker synonym)."""
    if name in overrides:
        return DYNAMIC_TOPIC_CONFIG
    if any(n in config.explicit for n in _synonym_group(TOPIC_CONFIGS[name].name)):
        return STATIC_BROKER_CONFIG
    return DEFAULT_CONFIG


# --- altering a config resource (AlterConfigs, IncrementalAlterConfigs) ---------------


def alter_each(
    resources: list[Any],
    alter: Callable[[Any], None],
    resource_response: Callable[..., Any],
) -> list[Any]:
    """Apply `alter` to each resource on its own, one response per resource in request
    order: its KafkaError becomes that resource's error code and message. A resource named
    more than once in the request is refused for every copy (INVALID_REQUEST), as Kafka
    does, and not altered."""
    copies = Counter((r.resource_type, r.resource_name) for r in resources)
    responses = []
    for resource in resources:
        code, message = ErrorCode.NONE, None
        try:
            if copies[resource.resource_type, resource.resource_name] > 1:
                raise KafkaError(
                    ErrorCode.INVALID_REQUEST, "Each resource must appear at most once."
                )
            alter(resource)
        except KafkaError as e:
            code, message = e.code, e.detail or None
        responses.append(
            resource_response(
                error_code=code,
                error_message=message,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        )
    return responses


def check_broker_name(ctx: RequestContext, name: str) -> None:
    """Kafka's validateResourceNameIsCurrentNodeId."""
    node_id = ctx.node_id  # the broker the request came to
    try:
        wanted = int(name)
    except ValueError:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Node id must be an integer, but it is: {name}"
        ) from None
    if wanted != node_id:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {node_id}, but received {name}",
        )


def no_dynamic_broker_configs() -> KafkaError:
    return KafkaError(ErrorCode.INVALID_REQUEST, "kmock does not support dynamic broker configs")


def null_values(names: list[str]) -> KafkaError:
    return KafkaError(
        ErrorCode.INVALID_REQUEST, "Null value not supported for : " + ", ".join(names)
    )


def existing_topic(ctx: RequestContext, name: str) -> Topic:
    try:
        validate_topic_name(name)
    except KafkaError:
        raise KafkaError(ErrorCode.INVALID_REQUEST, "Illegal topic name.") from None
    topic = ctx.broker.topics.get(name)
    if topic is None:
        raise KafkaError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        )
    return topic
