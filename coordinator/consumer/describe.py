"""ConsumerGroupDescribe's answer for consumer groups (Kafka's ConsumerGroup.asDescribedGroup
and ConsumerGroupMember.asConsumerGroupDescribeMember): state, epochs, the preferred
assignor, and per member its current and target assignment, topics by id and name, and
(v1) whether it speaks the classic or the consumer protocol."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping

from coordinator.consumer import records as r
from coordinator.consumer.group import ConsumerGroup, TopicImage
from protocol.errors import ErrorCode
from protocol.messages import consumer_group_describe as describe_msg

__all__ = ["describe_groups"]


def describe_groups(
    groups: Mapping[str, ConsumerGroup],
    default_assignor: str,
    group_ids: Iterable[str],
    topics_metadata: Mapping[str, TopicImage],
) -> list[describe_msg.DescribedGroup]:
    """The described groups; an unknown id gets GROUP_ID_NOT_FOUND."""
    names = {t.topic_id: t.name for t in topics_metadata.values()}
    described = []
    for group_id in group_ids:
        group = groups.get(group_id)
        if group is None:
            described.append(
                describe_msg.DescribedGroup(
                    error_code=ErrorCode.GROUP_ID_NOT_FOUND,
                    error_message=f"Group {group_id} not found.",
                    group_id=group_id,
                )
            )
            continue
        for t in group.subscription_metadata.values():
            names.setdefault(t.topic_id, t.name)

        def assignment(a: Mapping[uuid.UUID, frozenset[int]]) -> describe_msg.Assignment:
            return describe_msg.Assignment(
                topic_partitions=[
                    describe_msg.TopicPartitions(
                        topic_id=t.topic_id,
                        topic_name=names.get(t.topic_id, ""),
                        partitions=t.partitions,
                    )
                    for t in r.to_topic_partitions(a)
                ]
            )

        members = [
            describe_msg.Member(
                member_id=m.member_id,
                instance_id=m.instance_id,
                rack_id=m.rack_id,
                member_epoch=m.member_epoch,
                client_id=m.client_id,
                client_host=m.client_host,
                subscribed_topic_names=list(m.subscribed_topic_names),
                subscribed_topic_regex=m.subscribed_topic_regex,
                assignment=assignment(m.assigned_partitions),
                target_assignment=assignment(group.target_assignment.get(m.member_id, {})),
                member_type=(
                    describe_msg.CLASSIC_MEMBER_TYPE
                    if m.use_classic_protocol
                    else describe_msg.CONSUMER_MEMBER_TYPE
                ),
            )
            for m in sorted(group.members.values(), key=lambda m: m.member_id)
        ]
        described.append(
            describe_msg.DescribedGroup(
                group_id=group_id,
                group_state=str(group.state),
                group_epoch=group.group_epoch,
                assignment_epoch=group.assignment_epoch,
                assignor_name=group.preferred_server_assignor(default_assignor),
                members=members,
            )
        )
    return described
