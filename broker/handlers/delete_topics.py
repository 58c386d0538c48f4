"""DeleteTopics: delete topics by name (v1-5 `topic_names`, v6 `topics`) or by id (v6).

With delete.topic.enable=false the whole request is refused: TOPIC_DELETION_DISABLED from
v3, INVALID_REQUEST below (the code did not exist yet), as Kafka does. A timeout_ms <= 0
is a deadline that has already passed: REQUEST_TIMED_OUT for every topic, nothing deleted
(Kafka's controller behaves so). Otherwise, per entry, as Kafka's ControllerApis answers:
  * neither name nor id, or both: INVALID_REQUEST;
  * a name or an id given more than once: INVALID_REQUEST ("Duplicate topic name." /
    "Duplicate topic id."), answered once, and that topic is not deleted;
  * an unknown name: UNKNOWN_TOPIC_OR_PARTITION; an unknown id: UNKNOWN_TOPIC_ID;
  * a name naming the topic an id in the same request names: INVALID_REQUEST, and neither
    entry deletes it.
A deleted topic's answer carries its name and id. Deleting closes the partitions' logs,
removes their directories and wakes fetches parked on them (TopicRegistry.delete). Every
group's committed offsets of a deleted topic are deleted with it (tombstones), and an Empty
group left without offsets is deleted too, as Kafka's group coordinator does on
onPartitionsDeleted: a topic created again under the name starts from auto.offset.reset.

Difference from Kafka: Kafka deletes __consumer_offsets when asked to (and loses every
group's offsets); kmock refuses it with INVALID_TOPIC_EXCEPTION, because its group
coordinator owns that log for as long as the broker runs.
"""

from __future__ import annotations

import uuid
from collections import Counter

from broker.context import RequestContext
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.delete_topics import (
    DeletableTopicResult,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)

ZERO_UUID = uuid.UUID(int=0)


def _result(
    name: str | None, topic_id: uuid.UUID, code: ErrorCode, message: str | None
) -> DeletableTopicResult:
    return DeletableTopicResult(
        name=name, topic_id=topic_id, error_code=code, error_message=message
    )


async def handle(ctx: RequestContext, request: DeleteTopicsRequest) -> DeleteTopicsResponse:
    broker = ctx.broker
    registry = broker.topics
    if not broker.config["delete.topic.enable"]:
        if ctx.api_version < 3:
            raise KafkaError(ErrorCode.INVALID_REQUEST, "Topic deletion is disabled.")
        raise KafkaError(ErrorCode.TOPIC_DELETION_DISABLED, "delete.topic.enable=false")
    if request.timeout_ms <= 0:
        raise KafkaError(ErrorCode.REQUEST_TIMED_OUT, f"timeout_ms={request.timeout_ms}")

    entries: list[tuple[str | None, uuid.UUID]] = [(n, ZERO_UUID) for n in request.topic_names]
    entries += [(t.name, t.topic_id) for t in request.topics]
    results: list[DeletableTopicResult] = []
    for name, topic_id in entries:
        if name is None and topic_id == ZERO_UUID:
            results.append(
                _result(
                    None,
                    ZERO_UUID,
                    ErrorCode.INVALID_REQUEST,
                    "Neither topic name nor id were specified.",
                )
            )
        elif name is not None and topic_id != ZERO_UUID:
            results.append(
                _result(
                    name,
                    topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "You may not specify both topic name and topic id.",
                )
            )
    names = Counter(
        name for name, topic_id in entries if name is not None and topic_id == ZERO_UUID
    )
    ids = Counter(topic_id for name, topic_id in entries if name is None and topic_id != ZERO_UUID)
    results += [
        _result(name, ZERO_UUID, ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
        for name, n in names.items()
        if n > 1
    ]
    results += [
        _result(None, topic_id, ErrorCode.INVALID_REQUEST, "Duplicate topic id.")
        for topic_id, n in ids.items()
        if n > 1
    ]

    doomed: dict[uuid.UUID, str] = {}  # topic id -> name
    for topic_id, n in ids.items():
        if n == 1:
            topic = registry.by_id.get(topic_id)
            if topic is None:
                results.append(
                    _result(
                        None,
                        topic_id,
                        ErrorCode.UNKNOWN_TOPIC_ID,
                        "This server does not host this topic ID.",
                    )
                )
            else:
                doomed[topic_id] = topic.name
    for name, n in names.items():
        if n > 1:
            continue
        topic = registry.get(name)
        if topic is None:
            results.append(
                _result(
                    name,
                    ZERO_UUID,
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
            )
        elif topic.topic_id in doomed or ids[topic.topic_id] > 1:
            doomed.pop(topic.topic_id, None)
            results.append(
                _result(
                    name,
                    topic.topic_id,
                    ErrorCode.INVALID_REQUEST,
                    "The provided topic name maps to an ID that was already supplied.",
                )
            )
        else:
            doomed[topic.topic_id] = name

    for topic_id, name in doomed.items():
        if registry.topics[name].is_internal:
            results.append(
                _result(
                    name,
                    topic_id,
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    f"kmock does not delete the internal topic {name}",
                )
            )
            continue
        registry.delete(name)
        results.append(_result(name, topic_id, ErrorCode.NONE, None))
    if doomed:
        deleted = {r.name for r in results if r.error_code == ErrorCode.NONE and r.name}
        await broker.coordinator.topics_deleted(deleted)
    return DeleteTopicsResponse(responses=results)
