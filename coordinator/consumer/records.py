"""The consumer group's records in __consumer_offsets: built by the heartbeat, folded back
by `replay` (Kafka's GroupCoordinatorRecordHelpers and GroupMetadataManager.replay).

Every change to a group is made by building its records and replaying them, at once and
again at startup, so the state after a heartbeat is by construction the state the log
rebuilds. The byte formats are declared in `protocol.consumer_offsets`:

    record (key type)                       written when                        tombstone
    ConsumerGroupMetadata (3)               the group epoch is bumped            group deleted
    ConsumerGroupPartitionMetadata (4)      subscribed topics' metadata changes  group deleted
    ConsumerGroupMemberMetadata (5)         a member joins or its subscription   member left
                                            changes
    ConsumerGroupTargetAssignmentMember (7) a member's target changes            member left
    ConsumerGroupTargetAssignmentMetadata (6) a new target assignment is done    group deleted
    ConsumerGroupCurrentMemberAssignment (8) a member's epoch, state or          member left
                                            partitions change
    ConsumerGroupRegularExpression (16)     a regex resolves to other topics     no member uses it

A member leaves with three tombstones in Kafka's order: current assignment, target
assignment, member metadata. Kafka 4.1 replaced the PartitionMetadata record by a
metadata hash in ConsumerGroupMetadataValue (KIP-1101); we write the PartitionMetadata
record, which older Kafka and offset tools read, and leave the hash 0.
"""

from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass

from coordinator.consumer.group import (
    ConsumerGroup,
    ResolvedRegularExpression,
    TopicImage,
)
from coordinator.consumer.member import (
    Assignment,
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
)
from protocol.consumer_offsets import ClassicMemberMetadata as ClassicMemberMetadataRecord
from protocol.consumer_offsets import (
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRecordKey,
    ConsumerGroupRecordValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    TopicMetadata,
    TopicPartitions,
    encode_key,
    encode_value,
)

__all__ = [
    "ConsumerGroupRecord",
    "current_assignment_record",
    "current_assignment_tombstone",
    "from_topic_partitions",
    "group_epoch_record",
    "group_tombstones",
    "member_subscription_record",
    "member_subscription_tombstone",
    "regular_expression_record",
    "regular_expression_tombstone",
    "replay",
    "subscription_metadata_record",
    "target_assignment_epoch_record",
    "target_assignment_record",
    "target_assignment_tombstone",
    "to_topic_partitions",
]

VALUE_VERSION = 0  # every consumer-group value has one version so far


@dataclass(frozen=True, slots=True)
class ConsumerGroupRecord:
    """One record: a key and a value, or None for a tombstone. The same interface as the
    classic coordinator's CoordinatorRecord, so the broker appends both alike."""

    key: ConsumerGroupRecordKey
    value: ConsumerGroupRecordValue | None

    @property
    def group_id(self) -> str:
        return self.key.group_id

    @property
    def is_offset_commit(self) -> bool:
        return False

    def key_bytes(self) -> bytes:
        return encode_key(self.key)

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        return encode_value(self.value, VALUE_VERSION)


def to_topic_partitions(assignment: Assignment) -> list[TopicPartitions]:
    return [
        TopicPartitions(topic_id=topic_id, partitions=sorted(partitions))
        for topic_id, partitions in sorted(assignment.items(), key=lambda kv: str(kv[0]))
        if partitions
    ]


def from_topic_partitions(topics: list[TopicPartitions]) -> dict[uuid.UUID, frozenset[int]]:
    return {t.topic_id: frozenset(t.partitions) for t in topics if t.partitions}


def group_epoch_record(group_id: str, epoch: int) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupMetadataKey(group_id=group_id), ConsumerGroupMetadataValue(epoch=epoch)
    )


def subscription_metadata_record(
    group_id: str, metadata: dict[str, TopicImage]
) -> ConsumerGroupRecord:
    topics = [
        TopicMetadata(topic_id=t.topic_id, topic_name=t.name, num_partitions=t.num_partitions)
        for _, t in sorted(metadata.items())
    ]
    return ConsumerGroupRecord(
        ConsumerGroupPartitionMetadataKey(group_id=group_id),
        ConsumerGroupPartitionMetadataValue(topics=topics),
    )


def member_subscription_record(group_id: str, member: ConsumerGroupMember) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member.member_id),
        ConsumerGroupMemberMetadataValue(
            instance_id=member.instance_id,
            rack_id=member.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=list(member.subscribed_topic_names),
            subscribed_topic_regex=member.subscribed_topic_regex,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            server_assignor=member.server_assignor,
            classic_member_metadata=_classic_record(member.classic_member_metadata),
        ),
    )


def _classic_record(c: ClassicMemberMetadata | None) -> ClassicMemberMetadataRecord | None:
    if c is None:
        return None
    return ClassicMemberMetadataRecord(
        session_timeout_ms=c.session_timeout_ms,
        supported_protocols=[
            ClassicProtocol(name=name, metadata=metadata)
            for name, metadata in c.supported_protocols
        ],
    )


def _classic_metadata(c: ClassicMemberMetadataRecord | None) -> ClassicMemberMetadata | None:
    if c is None:
        return None
    return ClassicMemberMetadata(
        c.session_timeout_ms, tuple((p.name, bytes(p.metadata)) for p in c.supported_protocols)
    )


def member_subscription_tombstone(group_id: str, member_id: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=member_id), None
    )


def target_assignment_record(
    group_id: str, member_id: str, assignment: Assignment
) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id),
        ConsumerGroupTargetAssignmentMemberValue(topic_partitions=to_topic_partitions(assignment)),
    )


def target_assignment_tombstone(group_id: str, member_id: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=member_id), None
    )


def target_assignment_epoch_record(group_id: str, epoch: int) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch),
    )


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member.member_id),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=member.member_epoch,
            previous_member_epoch=member.previous_member_epoch,
            state=member.state.value,
            assigned_partitions=to_topic_partitions(member.assigned_partitions),
            partitions_pending_revocation=to_topic_partitions(member.partitions_pending_revocation),
        ),
    )


def current_assignment_tombstone(group_id: str, member_id: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=member_id), None
    )


def regular_expression_record(
    group_id: str, regex: str, resolved: ResolvedRegularExpression
) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex),
        ConsumerGroupRegularExpressionValue(
            topics=sorted(resolved.topics), version=resolved.version, timestamp=resolved.timestamp
        ),
    )


def regular_expression_tombstone(group_id: str, regex: str) -> ConsumerGroupRecord:
    return ConsumerGroupRecord(
        ConsumerGroupRegularExpressionKey(group_id=group_id, regular_expression=regex), None
    )


def group_tombstones(group: ConsumerGroup) -> list[ConsumerGroupRecord]:
    """What deleting a group writes (Kafka's ConsumerGroup.createGroupTombstoneRecords):
    its members' too, when a group with members is converted to a classic group."""
    gid = group.group_id
    records = [regular_expression_tombstone(gid, r) for r in group.resolved_regular_expressions]
    records += [current_assignment_tombstone(gid, m) for m in group.members]
    records += [target_assignment_tombstone(gid, m) for m in group.members]
    records.append(
        ConsumerGroupRecord(ConsumerGroupTargetAssignmentMetadataKey(group_id=gid), None)
    )
    records += [member_subscription_tombstone(gid, m) for m in group.members]
    records += [
        ConsumerGroupRecord(ConsumerGroupPartitionMetadataKey(group_id=gid), None),
        ConsumerGroupRecord(ConsumerGroupMetadataKey(group_id=gid), None),
    ]
    return records


def replay(groups: dict[str, ConsumerGroup], record: ConsumerGroupRecord) -> None:
    """Fold one record into `groups`. A value creates the group if needed; a tombstone for a
    group or member that is not there is ignored (Kafka's replay does the same)."""
    key, value = record.key, record.value
    group = groups.get(key.group_id)
    if group is None:
        if value is None:
            return
        group = groups[key.group_id] = ConsumerGroup(key.group_id)

    if isinstance(key, ConsumerGroupMetadataKey):
        if value is None:
            del groups[key.group_id]
        else:
            assert isinstance(value, ConsumerGroupMetadataValue)
            group.group_epoch = value.epoch
    elif isinstance(key, ConsumerGroupPartitionMetadataKey):
        if value is None:
            group.subscription_metadata = {}
        else:
            assert isinstance(value, ConsumerGroupPartitionMetadataValue)
            group.subscription_metadata = {
                t.topic_name: TopicImage(t.topic_id, t.topic_name, t.num_partitions)
                for t in value.topics
            }
    elif isinstance(key, ConsumerGroupMemberMetadataKey):
        if value is None:
            group.remove_member(key.member_id)
            return
        assert isinstance(value, ConsumerGroupMemberMetadataValue)
        old = group.members.get(key.member_id) or ConsumerGroupMember(member_id=key.member_id)
        group.put_member(
            old.replace(
                instance_id=value.instance_id,
                rack_id=value.rack_id,
                client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=tuple(value.subscribed_topic_names),
                subscribed_topic_regex=value.subscribed_topic_regex,
                rebalance_timeout_ms=value.rebalance_timeout_ms,
                server_assignor=value.server_assignor,
                classic_member_metadata=_classic_metadata(value.classic_member_metadata),
            )
        )
    elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
        if value is None:
            group.assignment_epoch = 0
        else:
            assert isinstance(value, ConsumerGroupTargetAssignmentMetadataValue)
            group.assignment_epoch = value.assignment_epoch
    elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
        if value is None:
            group.target_assignment.pop(key.member_id, None)
        else:
            assert isinstance(value, ConsumerGroupTargetAssignmentMemberValue)
            group.target_assignment[key.member_id] = from_topic_partitions(value.topic_partitions)
    elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
        current = group.members.get(key.member_id)
        # The state comes from the record: the one place besides transition_to that sets it.
        if value is None:
            if current is not None:
                # Kafka keeps the member, epoch -1 and nothing owned, until its metadata goes.
                group.put_member(
                    dataclasses.replace(
                        current,
                        member_epoch=-1,
                        previous_member_epoch=-1,
                        state=MemberState.STABLE,
                        assigned_partitions={},
                        partitions_pending_revocation={},
                    )
                )
            return
        assert isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
        group.put_member(
            dataclasses.replace(
                current or ConsumerGroupMember(member_id=key.member_id),
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=MemberState.from_value(value.state),
                assigned_partitions=from_topic_partitions(value.assigned_partitions),
                partitions_pending_revocation=from_topic_partitions(
                    value.partitions_pending_revocation
                ),
            )
        )
    elif isinstance(key, ConsumerGroupRegularExpressionKey):
        if value is None:
            group.resolved_regular_expressions.pop(key.regular_expression, None)
        else:
            assert isinstance(value, ConsumerGroupRegularExpressionValue)
            group.resolved_regular_expressions[key.regular_expression] = ResolvedRegularExpression(
                frozenset(value.topics), value.version, value.timestamp
            )
