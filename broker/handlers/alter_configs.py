"""AlterConfigs: replace the whole set of a topic's config overrides (the legacy API;
IncrementalAlterConfigs changes single keys).

Per resource, with Kafka's checks, order and messages:
  * a resource named more than once is refused for every copy (INVALID_REQUEST "Each
    resource must appear at most once.");
  * a resource type other than TOPIC (2) or BROKER (4) is INVALID_REQUEST; a BROKER name
    must be this broker's node id (INVALID_REQUEST);
  * a null value is INVALID_REQUEST;
  * a topic needs a legal name (INVALID_REQUEST "Illegal topic name.") and must exist
    (UNKNOWN_TOPIC_OR_PARTITION);
  * the new set is validated as a whole (INVALID_CONFIG) and, unless validate_only, becomes
    the topic's overrides: configs not named go back to their broker defaults, which is
    what AlterConfigs means.
Altered configs apply to the topic's logs at once (TopicRegistry.set_configs) and are kept
in topics.json across restarts.

Difference from Kafka: BROKER resources that pass the checks are refused with
INVALID_REQUEST "kmock does not support dynamic broker configs". kmock's settings are fixed
when it starts (file, environment, flags); Kafka would accept its dynamic ones
(message.max.bytes, log.retention.ms, ...) and persist them in its metadata log.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from broker.handlers.describe_configs import BROKER, TOPIC
from broker.topics import Topic, validate_topic_configs, validate_topic_name
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)


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


def check_broker_name(ctx: Any, name: str) -> None:
    """Kafka's validateResourceNameIsCurrentNodeId."""
    node_id = ctx.broker.node_id
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


def existing_topic(ctx: Any, name: str) -> Topic:
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


def _alter(ctx: Any, resource: Any, validate_only: bool) -> None:
    if resource.resource_type not in (TOPIC, BROKER):
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}"
        )
    if resource.resource_type == BROKER:
        check_broker_name(ctx, resource.resource_name)
    nulls = [c.name for c in resource.configs if c.value is None]
    if nulls:
        raise null_values(nulls)
    if resource.resource_type == BROKER:
        raise no_dynamic_broker_configs()
    topic = existing_topic(ctx, resource.resource_name)
    configs = validate_topic_configs({c.name: c.value for c in resource.configs})
    if not validate_only:
        ctx.broker.topics.set_configs(topic.name, configs)


async def handle(ctx: Any, request: AlterConfigsRequest) -> AlterConfigsResponse:
    return AlterConfigsResponse(
        responses=alter_each(
            request.resources,
            lambda resource: _alter(ctx, resource, request.validate_only),
            AlterConfigsResourceResponse,
        )
    )
