"""DescribeConfigs: every topic-level config of a topic, or every setting of this broker.

A TOPIC resource (type 2) lists each topic-level config (broker.config.TOPIC_CONFIGS) with
its effective value: the topic's override, else the broker-wide default. A BROKER resource
(type 4) named after this broker's node id lists every setting in broker.config.SETTINGS
(a setting without a value has a null value, as in Kafka); an empty name asks for the
cluster-wide dynamic defaults, which kmock never has, so the list is empty, exactly as from
a Kafka cluster nobody ran `kafka-configs --entity-default` on. `configuration_keys` (null or
empty: all) filters by name; unknown names are ignored.

config_source and synonyms are computed as Kafka's ConfigHelper computes them:
  * a topic override is DYNAMIC_TOPIC_CONFIG (1) and is the first synonym;
  * then the broker settings the config falls back to (log.retention.ms, .minutes, .hours
    for retention.ms): STATIC_BROKER_CONFIG (4) for each one that was configured (properties
    file, environment or flag: Config.explicit), then DEFAULT_CONFIG (5) for each one with a
    default;
  * leading broker synonyms other than the config's primary setting are dropped (Kafka's
    `dropWhile`), so retention.ms reports no synonyms and DEFAULT_CONFIG even when
    log.retention.hours was configured - Kafka's own answer;
  * the entry's source is its first synonym's, DEFAULT_CONFIG when there is none.
Values are strings as Kafka's ConfigDef renders them ("true"/"false", lists joined by ",").
Passwords and keys are sensitive (no value, as Kafka reports them); topic configs are
never read-only; broker settings are read-only unless Kafka can change them at runtime
(Setting.read_only).

Differences from Kafka: kmock has only the topic configs it honours, and its own broker
settings (a few kmock-only, such as admin.port). BROKER_LOGGER resources (type 8) are
answered INVALID_REQUEST ("Unsupported resource type"), since kmock has no log4j loggers;
so are CLIENT_METRICS and GROUP resources.
"""

from __future__ import annotations

from broker.config import SETTINGS, TOPIC_CONFIGS, Setting
from broker.context import RequestContext
from broker.topic_configs import (
    BROKER,
    CONFIG_TYPES,
    DEFAULT_CONFIG,
    RESOURCE_TYPES,
    TOPIC,
    broker_synonyms,
    render,
    topic_synonyms,
    topic_value,
)
from broker.topics import validate_topic_name
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.describe_configs import (
    DescribeConfigsRequest,
    DescribeConfigsResource,
    DescribeConfigsResourceResult,
    DescribeConfigsResponse,
    DescribeConfigsResult,
    DescribeConfigsSynonym,
)


def _entry(
    setting: Setting,
    name: str,
    value: str | None,
    synonyms: list[DescribeConfigsSynonym],
    request: DescribeConfigsRequest,
    read_only: bool,
) -> DescribeConfigsResourceResult:
    source = synonyms[0].source if synonyms else DEFAULT_CONFIG
    if setting.sensitive:  # Kafka's PASSWORD type: reported without its value
        value = None
        synonyms = [
            DescribeConfigsSynonym(name=s.name, value=None, source=s.source) for s in synonyms
        ]
    return DescribeConfigsResourceResult(
        name=name,
        value=value,
        read_only=read_only,
        is_default=source == DEFAULT_CONFIG,  # v0's view of config_source
        config_source=source,
        is_sensitive=setting.sensitive,
        synonyms=synonyms if request.include_synonyms else [],
        config_type=CONFIG_TYPES[setting.type],
        documentation=setting.doc if request.include_documentation else None,
    )


def _topic_configs(
    ctx: RequestContext, resource: DescribeConfigsResource, request: DescribeConfigsRequest
) -> list[DescribeConfigsResourceResult]:
    validate_topic_name(resource.resource_name)
    topic = ctx.broker.topics.get(resource.resource_name)
    if topic is None:
        raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)  # Kafka sends no message here
    config = ctx.broker.config
    return [
        _entry(
            TOPIC_CONFIGS[name],
            name,
            topic_value(config, topic.configs, name),
            topic_synonyms(config, topic.configs, name),
            request,
            read_only=False,
        )
        for name in sorted(TOPIC_CONFIGS)
    ]


def _broker_configs(
    ctx: RequestContext, resource: DescribeConfigsResource, request: DescribeConfigsRequest
) -> list[DescribeConfigsResourceResult]:
    name, node_id = resource.resource_name, ctx.node_id
    if name == "":
        return []
    try:
        wanted = int(name)
    except ValueError:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        ) from None
    if wanted != node_id:
        raise KafkaError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {node_id} or empty string, but received {name}",
        )
    config = ctx.broker.config
    return [
        _entry(
            s,
            s.name,
            render(s, config[s.name]),
            broker_synonyms(config, s.name),
            request,
            read_only=s.read_only,
        )
        for s in SETTINGS.values()
    ]


def _describe(
    ctx: RequestContext, resource: DescribeConfigsResource, request: DescribeConfigsRequest
) -> DescribeConfigsResult:
    if resource.resource_type == TOPIC:
        configs = _topic_configs(ctx, resource, request)
    elif resource.resource_type == BROKER:
        configs = _broker_configs(ctx, resource, request)
    else:
        kind = RESOURCE_TYPES.get(resource.resource_type, "UNKNOWN")
        raise KafkaError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {kind}")
    if resource.configuration_keys:
        keys = set(resource.configuration_keys)
        configs = [c for c in configs if c.name in keys]
    return DescribeConfigsResult(
        error_code=ErrorCode.NONE,
        error_message=None,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
        configs=configs,
    )


async def handle(ctx: RequestContext, request: DescribeConfigsRequest) -> DescribeConfigsResponse:
    results = []
    for resource in request.resources:
        try:
            result = _describe(ctx, resource, request)
        except KafkaError as e:
            result = DescribeConfigsResult(
                error_code=e.code,
                error_message=e.detail or None,
                resource_type=resource.resource_type,
                resource_name=resource.resource_name,
            )
        results.append(result)
    return DescribeConfigsResponse(results=results)
