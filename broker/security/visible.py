"""What the principal may see of the cluster (broker.security.enforce): Metadata,
DescribeCluster and DescribeTopicPartitions as Kafka's KafkaApis and
DescribeTopicPartitionsRequestHandler answer them with an authorizer, the authorized-
operations fields computed from the ACLs (AuthHelper.authorizedOperations).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from broker.security.checks import (
    CLUSTER,
    INTERNAL_TOPICS,
    TOPIC_FAILED,
    ZERO_UUID,
    C,
    Call,
    Op,
    T,
)
from protocol.errors import ErrorCode
from protocol.messages.metadata import MetadataResponseTopic

__all__ = ["describe_cluster", "describe_topic_partitions", "metadata"]


def _denied_topic(name: str | None, topic_id: Any = ZERO_UUID, is_internal: bool = False) -> Any:
    return MetadataResponseTopic(
        error_code=TOPIC_FAILED,
        name=name,
        topic_id=topic_id,
        is_internal=is_internal,
        partitions=[],
    )


async def metadata(c: Call) -> Any:
    # KafkaApis.handleTopicMetadataRequest: topics the principal may not DESCRIBE are left
    # out of an answer for every topic and answered TOPIC_AUTHORIZATION_FAILED when named
    # (asked by id: with the id and no name, "topic IDs are not considered sensitive"); a
    # named topic that does not exist is auto-created only with CREATE on the cluster or on
    # the topic (else TOPIC_AUTHORIZATION_FAILED, nothing created). The refused come last,
    # as in Kafka. Authorized operations are computed when asked (the cluster's only with
    # DESCRIBE on it, else 0).
    r, v = c.request, c.version
    broker = c.ctx.broker
    every = r.topics is None or (v == 0 and not r.topics)
    not_created: list[Any] = []
    not_described: list[Any] = []
    if every:
        response = await c.serve()
        topics = [t for t in response.topics if t.name is None or c.may(Op.DESCRIBE, T, t.name)]
    else:
        create = broker.config["auto.create.topics.enable"] and (
            v < 4 or r.allow_auto_topic_creation
        )
        cluster_create = create and c.may(Op.CREATE, C, CLUSTER)
        allowed = []
        for t in r.topics:
            name = t.name or c.state.topic_names(t.topic_id)
            if name is None:
                allowed.append(t)  # an unknown id: UNKNOWN_TOPIC_ID from the handler
            elif not c.may(Op.DESCRIBE, T, name):
                by_id = t.name is None
                not_described.append(
                    _denied_topic(None, t.topic_id) if by_id else _denied_topic(name)
                )
            elif (
                create
                and not cluster_create
                and broker.topics.get(name) is None
                and not c.may(Op.CREATE, T, name)
            ):
                not_created.append(_denied_topic(name, is_internal=name in INTERNAL_TOPICS))
            else:
                allowed.append(t)
        response = await c.serve(dataclasses.replace(r, topics=allowed))
        topics = response.topics if allowed else []
    if r.include_topic_authorized_operations:
        topics = [
            t
            if t.name is None
            else dataclasses.replace(t, topic_authorized_operations=c.operations(T, t.name))
            for t in topics
        ]
    response = dataclasses.replace(response, topics=[*topics, *not_created, *not_described])
    if 8 <= v <= 10 and r.include_cluster_authorized_operations:
        ops = c.operations(C, CLUSTER) if c.may(Op.DESCRIBE, C, CLUSTER) else 0
        response = dataclasses.replace(response, cluster_authorized_operations=ops)
    return response


async def describe_cluster(c: Call) -> Any:
    # AuthHelper.computeDescribeClusterResponse: the cluster's operations when asked, 0
    # without DESCRIBE on it.
    response = await c.serve()
    if not c.request.include_cluster_authorized_operations:
        return response
    ops = c.operations(C, CLUSTER) if c.may(Op.DESCRIBE, C, CLUSTER) else 0
    return dataclasses.replace(response, cluster_authorized_operations=ops)


async def describe_topic_partitions(c: Call) -> Any:
    # DescribeTopicPartitionsRequestHandler: the topics the principal may DESCRIBE (for every
    # topic, the others left out), each with its authorized operations; the refused named
    # topics follow them, TOPIC_AUTHORIZATION_FAILED with no id.
    r = c.request
    refused: list[Any] = []
    if not r.topics:
        response = await c.serve()
        topics = [t for t in response.topics if c.may(Op.DESCRIBE, T, t.name)]
    else:
        allowed = [t for t in r.topics if c.may(Op.DESCRIBE, T, t.name)]
        denied = [t for t in r.topics if not c.may(Op.DESCRIBE, T, t.name)]
        refused = c.refusal(dataclasses.replace(r, topics=denied), TOPIC_FAILED).topics
        if allowed:
            response = await c.serve(dataclasses.replace(r, topics=allowed))
            topics = response.topics
        else:
            response, topics = c.refusal(dataclasses.replace(r, topics=[]), ErrorCode.NONE), []
    topics = [
        t
        if t.name is None
        else dataclasses.replace(t, topic_authorized_operations=c.operations(T, t.name))
        for t in topics
    ]
    return dataclasses.replace(response, topics=[*topics, *refused])
