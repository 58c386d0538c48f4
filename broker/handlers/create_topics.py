"""CreateTopics: create topics, with the checks, order and messages of Kafka's controller.

A name given more than once in one request is refused once, INVALID_REQUEST "Duplicate
topic name.", and none of its copies is created. Every other topic is checked in turn:
  1. the name (INVALID_TOPIC_EXCEPTION), an existing topic (TOPIC_ALREADY_EXISTS), a name
     that collides with an existing one once '.' and '_' are treated alike
     (INVALID_TOPIC_EXCEPTION);
  2. the configs: a null value, an unknown name or a bad value is INVALID_CONFIG;
  3. a manual assignment needs num_partitions and replication_factor both -1
     (INVALID_REQUEST), partitions numbered 0..n-1 once each, and replicas that are
     registered brokers, each once (INVALID_REPLICA_ASSIGNMENT); otherwise num_partitions is -1
     (num.partitions) or >= 1 (INVALID_PARTITIONS) and replication_factor is -1
     (default.replication.factor) or >= 1 (INVALID_REPLICATION_FACTOR), and a replication
     factor above kmock.brokers is more than there are brokers (INVALID_REPLICATION_FACTOR).
validate_only runs every check and creates nothing. A timeout_ms <= 0 is a deadline that
has already passed: Kafka's controller then answers REQUEST_TIMED_OUT for every topic and
creates nothing, and so does kmock.

From v5 a created (or validated) topic's result carries its partition count, replication
factor and every topic-level config with its value and source (as the controller reports
them: DYNAMIC_TOPIC_CONFIG for the request's configs, STATIC_BROKER_CONFIG when a broker
setting behind the config was configured, DEFAULT_CONFIG otherwise); v7 adds the topic id
(the zero id on a refused topic; a fresh random one under validate_only, as from Kafka).

__consumer_offsets belongs to the group coordinator, which creates it on the first group
lookup, so asking for it is TOPIC_ALREADY_EXISTS even before that, as from a Kafka cluster
once any group was used.

The partitions' logs are opened in a worker thread (TopicRegistry.create_in_thread); the
topics of one request are created one after the other, as Kafka's controller does. A
create of a name whose creation is still in progress is TOPIC_ALREADY_EXISTS.
"""

from __future__ import annotations

import uuid
from collections import Counter
from typing import Any

from broker.cluster import check_replicas
from broker.config import TOPIC_CONFIGS
from broker.context import RequestContext
from broker.placement import check_replication_factor
from broker.topic_configs import effective_topic_source, topic_value
from broker.topics import check_partition_count, validate_topic_configs
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.create_topics import (
    CreatableReplicaAssignment,
    CreatableTopic,
    CreatableTopicConfigs,
    CreatableTopicResult,
    CreateTopicsRequest,
    CreateTopicsResponse,
)


def _assigned_partitions(assignments: list[CreatableReplicaAssignment], node_ids: list[int]) -> int:
    indexes: set[int] = set()
    for assignment in assignments:
        if assignment.partition_index in indexes:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                "Found multiple manual partition assignments for partition "
                f"{assignment.partition_index}",
            )
        check_replicas(assignment.broker_ids, node_ids)
        indexes.add(assignment.partition_index)
    if indexes != set(range(len(indexes))):
        raise KafkaError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            "partitions should be a consecutive 0-based integer sequence",
        )
    return len(indexes)


def _partitions(config: Any, topic: CreatableTopic, node_ids: list[int]) -> tuple[int, int]:
    """The partition count and replication factor to create (at most one replica per
    broker: broker.placement)."""
    if topic.assignments:
        if topic.replication_factor != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was "
                "specified, but replication factor was not set to -1.",
            )
        if topic.num_partitions != -1:
            raise KafkaError(
                ErrorCode.INVALID_REQUEST,
                "A manual partition assignment was specified, but numPartitions was not set to -1.",
            )
        count = _assigned_partitions(topic.assignments, node_ids)
        return count, len(topic.assignments[0].broker_ids)
    if topic.replication_factor == 0 or topic.replication_factor < -1:
        raise KafkaError(
            ErrorCode.INVALID_REPLICATION_FACTOR,
            "Replication factor must be larger than 0, or -1 to use the default value.",
        )
    if topic.num_partitions == 0 or topic.num_partitions < -1:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS,
            "Number of partitions was set to an invalid non-positive value.",
        )
    replication_factor = topic.replication_factor
    if replication_factor == -1:
        replication_factor = config["default.replication.factor"]
    check_replication_factor(replication_factor, len(node_ids))
    if topic.num_partitions == -1:
        return int(config["num.partitions"]), replication_factor
    return topic.num_partitions, replication_factor


async def _create(
    ctx: RequestContext, topic: CreatableTopic, validate_only: bool
) -> CreatableTopicResult:
    broker = ctx.broker
    config = broker.config
    broker.topics.check_new(topic.name)
    nulls = [c.name for c in topic.configs if c.value is None]
    if nulls:
        raise KafkaError(
            ErrorCode.INVALID_CONFIG,
            "Null value not supported for topic configs: " + ",".join(nulls),
        )
    overrides = validate_topic_configs({c.name: c.value for c in topic.configs})
    num_partitions, replication_factor = _partitions(config, topic, broker.cluster.node_ids)
    check_partition_count(num_partitions)
    if validate_only:
        topic_id = uuid.uuid4()
    else:
        assignments = None
        if topic.assignments:
            by_index = {a.partition_index: list(a.broker_ids) for a in topic.assignments}
            assignments = [by_index[i] for i in range(num_partitions)]
        created = await broker.topics.create_in_thread(
            topic.name,
            num_partitions,
            overrides,
            now_wall_ms=broker.wall_ms(),
            replication_factor=replication_factor,
            assignments=assignments,
        )
        topic_id = created.topic_id
    return CreatableTopicResult(
        name=topic.name,
        topic_id=topic_id,
        error_code=ErrorCode.NONE,
        error_message=None,
        num_partitions=num_partitions,
        replication_factor=replication_factor,
        configs=[
            CreatableTopicConfigs(
                name=name,
                value=topic_value(config, overrides, name),
                read_only=False,
                config_source=effective_topic_source(config, overrides, name),
                is_sensitive=False,
            )
            for name in sorted(TOPIC_CONFIGS)
        ],
    )


async def handle(ctx: RequestContext, request: CreateTopicsRequest) -> CreateTopicsResponse:
    if request.timeout_ms <= 0:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"timeout_ms={request.timeout_ms}")
    copies = Counter(topic.name for topic in request.topics)
    results: list[CreatableTopicResult] = []
    refused_duplicates: set[str] = set()
    for topic in request.topics:
        if copies[topic.name] > 1:
            if topic.name not in refused_duplicates:
                refused_duplicates.add(topic.name)
                results.append(
                    CreatableTopicResult(
                        name=topic.name,
                        error_code=ErrorCode.INVALID_REQUEST,
                        error_message="Duplicate topic name.",
                    )
                )
            continue
        try:
            results.append(await _create(ctx, topic, request.validate_only))
        except KafkaError as e:
            results.append(
                CreatableTopicResult(
                    name=topic.name, error_code=e.code, error_message=e.detail or None
                )
            )
    return CreateTopicsResponse(topics=results)
