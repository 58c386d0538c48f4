"""IncrementalAlterConfigs: change single topic configs (KIP-339).

Operations, applied in request order to the topic's current overrides:
  0 SET       set the override;
  1 DELETE    remove the override (the broker default applies again);
  2 APPEND    add values to a LIST config (cleanup.policy) that it does not hold yet, starting
              from the effective value when there is no override;
  3 SUBTRACT  remove values from a LIST config, likewise.
APPEND or SUBTRACT on a config that is not a LIST is INVALID_CONFIG ("Can't APPEND to key
retention.ms because its type is not LIST."); an unknown operation is INVALID_REQUEST.

Per resource, with Kafka's checks, order and messages: a resource named more than once is
refused for every copy (INVALID_REQUEST); a null value for any operation but DELETE is
INVALID_REQUEST; a resource type other than TOPIC (2) or BROKER (4) is INVALID_REQUEST; a
BROKER name must be empty or this broker's node id; a topic needs a legal name and must
exist; the resulting set is validated as a whole (INVALID_CONFIG) and, unless validate_only,
becomes the topic's overrides (applied to its logs at once, kept across restarts).

Differences from Kafka: BROKER resources that pass the checks are refused with
INVALID_REQUEST "kmock does not support dynamic broker configs" (kmock's settings are fixed
when it starts), and BROKER_LOGGER resources (type 8) with INVALID_REQUEST, since kmock has
no log4j loggers to set.
"""

from __future__ import annotations

from typing import Any

from broker.config import TOPIC_CONFIGS
from broker.context import RequestContext
from broker.topic_configs import (
    BROKER,
    RESOURCE_TYPES,
    TOPIC,
    alter_each,
    check_broker_name,
    existing_topic,
    no_dynamic_broker_configs,
    null_values,
    topic_value,
)
from broker.topics import validate_topic_configs
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.alter_configs import AlterConfigsResourceResponse
from protocol.messages.incremental_alter_configs import (
    AlterableConfig,
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
    IncrementalAlterConfigsResponse,
)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
OPERATIONS = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}


def _apply(config: Any, overrides: dict[str, str], op: AlterableConfig) -> None:
    if op.config_operation == DELETE:
        overrides.pop(op.name, None)
        return
    assert op.value is not None  # refused before any operation is applied
    if op.config_operation == SET:
        overrides[op.name] = op.value
    else:
        setting = TOPIC_CONFIGS.get(op.name)
        if setting is None or setting.type != "list":
            raise KafkaError(
                ErrorCode.INVALID_CONFIG,
                f"Can't {OPERATIONS[op.config_operation]} to key {op.name} "
                "because its type is not LIST.",
            )
        current = topic_value(config, overrides, op.name) or ""
        values = [v for v in current.split(",") if v]
        for value in op.value.split(","):
            if op.config_operation == APPEND and value not in values:
                values.append(value)
            elif op.config_operation == SUBTRACT and value in values:
                values.remove(value)
        overrides[op.name] = ",".join(values)


def _alter(ctx: RequestContext, resource: AlterConfigsResource, validate_only: bool) -> None:
    nulls = [c.name for c in resource.configs if c.config_operation != DELETE and c.value is None]
    if nulls:
        raise null_values(nulls)
    if resource.resource_type == BROKER:
        if resource.resource_name != "":
            check_broker_name(ctx, resource.resource_name)
        raise no_dynamic_broker_configs()
    if resource.resource_type != TOPIC:
        kind = RESOURCE_TYPES.get(resource.resource_type)
        if kind == "BROKER_LOGGER":
            raise KafkaError(ErrorCode.INVALID_REQUEST, "kmock has no broker loggers to alter")
        raise KafkaError(
            ErrorCode.INVALID_REQUEST, f"Unknown resource type {resource.resource_type}"
        )
    for op in resource.configs:
        if op.config_operation not in OPERATIONS:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST, f"Unknown operations type {op.config_operation}"
            )
    topic = existing_topic(ctx, resource.resource_name)
    overrides = dict(topic.configs)
    for op in resource.configs:
        _apply(ctx.broker.config, overrides, op)
    configs = validate_topic_configs(dict(overrides))
    if not validate_only:
        ctx.broker.topics.set_configs(topic.name, configs)


async def handle(
    ctx: RequestContext, request: IncrementalAlterConfigsRequest
) -> IncrementalAlterConfigsResponse:
    return IncrementalAlterConfigsResponse(
        responses=alter_each(
            request.resources,
            lambda resource: _alter(ctx, resource, request.validate_only),
            AlterConfigsResourceResponse,
        )
    )
