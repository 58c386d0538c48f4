"""CreatePartitions: raise the partition count of existing topics.

A timeout_ms <= 0 is a deadline that has already passed: REQUEST_TIMED_OUT for every topic,
nothing added (Kafka's controller behaves so). A topic named more than once is refused once,
INVALID_REQUEST "Duplicate topic name.". Otherwise, per topic, with the checks and messages
of Kafka's controller: an unknown topic is UNKNOWN_TOPIC_OR_PARTITION; a count that is not
above the current one is INVALID_PARTITIONS; assignments, when given, must be one per added
partition, each naming registered brokers once, as many as the topic's replication factor,
and at least one of them running (INVALID_REPLICA_ASSIGNMENT); the new partitions get those
replicas, the first running one leading. validate_only runs every
check and adds nothing. New partitions start empty at offset 0; producers and consumers
find them through Metadata. The new logs are opened in a worker thread
(TopicRegistry.add_partitions); a request for a topic that another one is still growing
waits for it and is then checked against the new count.

Difference from Kafka: Kafka lets __consumer_offsets grow (and thereby moves groups to other
coordinators); kmock refuses it with INVALID_TOPIC_EXCEPTION, because a group's partition is
fixed by offsets.topic.num.partitions for as long as the broker runs.
"""

from __future__ import annotations

from collections import Counter

from broker.cluster import check_replicas
from broker.context import RequestContext
from broker.topics import check_partition_count
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.create_partitions import (
    CreatePartitionsRequest,
    CreatePartitionsResponse,
    CreatePartitionsTopic,
    CreatePartitionsTopicResult,
)


async def _add(ctx: RequestContext, request: CreatePartitionsTopic, validate_only: bool) -> None:
    broker = ctx.broker
    # One change of a topic at a time, as Kafka's controller: this request is checked
    # against the partitions an earlier one is still adding. No checkpoint from here to
    # add_partitions.
    await broker.topics.wait_settled(request.name)
    topic = broker.topics.get(request.name)
    if topic is None:
        raise KafkaError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "This server does not host this topic-partition."
        )
    if topic.is_internal:
        raise KafkaError(
            ErrorCode.INVALID_TOPIC_EXCEPTION,
            f"kmock does not add partitions to the internal topic {topic.name}",
        )
    current = len(topic.partitions)
    if request.count == current:
        raise KafkaError(ErrorCode.INVALID_PARTITIONS, f"Topic already has {current} partition(s).")
    if request.count < current:
        raise KafkaError(
            ErrorCode.INVALID_PARTITIONS,
            f"The topic {topic.name} currently has {current} partition(s); "
            f"{request.count} would not be an increase.",
        )
    check_partition_count(request.count - current)
    if request.assignments is not None:
        added = request.count - current
        if len(request.assignments) != added:
            raise KafkaError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Attempted to add {added} additional partition(s), but only "
                f"{len(request.assignments)} assignment(s) were specified.",
            )
        # Kafka's ReplicationControlManager.createPartitions.
        replication_factor = len(topic.partitions[0].replicas)
        for i, assignment in enumerate(request.assignments):
            ids = assignment.broker_ids
            check_replicas(ids, broker.cluster.node_ids)
            if len(ids) != replication_factor:
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"The manual partition assignment includes a partition with {len(ids)} "
                    "replica(s), but this is not consistent with previous partitions, which "
                    f"have {replication_factor} replica(s).",
                )
            if not any(b in broker.cluster.live for b in ids):
                raise KafkaError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    "All brokers specified in the manual partition assignment for partition "
                    f"{current + i} are fenced or in controlled shutdown.",
                )
    if not validate_only:
        await broker.topics.add_partitions(
            topic.name,
            request.count,
            now_wall_ms=broker.wall_ms(),
            assignments=(
                None
                if request.assignments is None
                else [list(a.broker_ids) for a in request.assignments]
            ),
        )


async def handle(ctx: RequestContext, request: CreatePartitionsRequest) -> CreatePartitionsResponse:
    if request.timeout_ms <= 0:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"timeout_ms={request.timeout_ms}")
    copies = Counter(topic.name for topic in request.topics)
    results = [
        CreatePartitionsTopicResult(
            name=name, error_code=ErrorCode.INVALID_REQUEST, error_message="Duplicate topic name."
        )
        for name, n in copies.items()
        if n > 1
    ]
    for topic in request.topics:
        if copies[topic.name] > 1:
            continue
        try:
            await _add(ctx, topic, request.validate_only)
        except KafkaError as e:
            results.append(
                CreatePartitionsTopicResult(
                    name=topic.name, error_code=e.code, error_message=e.detail or None
                )
            )
        else:
            results.append(CreatePartitionsTopicResult(name=topic.name, error_code=ErrorCode.NONE))
    return CreatePartitionsResponse(results=results)
