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

from typing import Any

from broker.context import RequestContext
from broker.topic_configs import (
    BROKER,
    TOPIC,
    alter_each,
    check_broker_name,
    existing_topic,
    no_dynamic_broker_configs,
    null_values,
)
from broker.topics import validate_topic_configs
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.alter_configs import (
    AlterConfigsRequest,
    AlterConfigsResourceResponse,
    AlterConfigsResponse,
)


def _alter(ctx: RequestContext, resource: Any, validate_only: bool) -> None:
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


async def handle(ctx: RequestContext, request: AlterConfigsRequest) -> AlterConfigsResponse:
    return AlterConfigsResponse(
        responses=alter_each(
            request.resources,
            lambda resource: _alter(ctx, resource, request.validate_only),
            AlterConfigsResourceResponse,
        )
    )
