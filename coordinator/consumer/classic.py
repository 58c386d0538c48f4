"""Classic members inside a consumer group: JoinGroup, SyncGroup and Heartbeat from a member
that speaks the classic protocol to a group that became a consumer group (online migration).

Kafka's GroupMetadataManager.classicGroupJoinToConsumerGroup, classicGroupSyncToConsumerGroup
and classicGroupHeartbeatToConsumerGroup. The member is a ConsumerGroupMember like any other,
with its classic metadata (session timeout, protocols) beside it; the server-side assignor
computes its target and reconciliation moves it there, revocation first:

  JoinGroup   the member's subscription (decoded from its ConsumerProtocol metadata) is its
              subscribed topics; a changed subscription bumps the group epoch and a new
              target assignment is computed; the member is reconciled, its owned partitions
              being those its subscription reports (none for an eager client, which gave
              everything up before rejoining). Answer: its member epoch as the generation,
              its first protocol, no leader and no members (it never runs an assignor).
  SyncGroup   its current assignment, in ConsumerProtocol bytes of its metadata's version;
              REBALANCE_IN_PROGRESS if the group epoch moved past it since its JoinGroup.
  Heartbeat   REBALANCE_IN_PROGRESS when it must rejoin: the group epoch is past its epoch,
              it has partitions to revoke, or the partitions it waited for are free.

Timers (ConsumerGroupCoordinator.join_deadlines, sync_deadlines, and the session deadline
from the member's own session timeout): a member asked to rejoin that does not JoinGroup
within its rebalance timeout is fenced, as is one that does not SyncGroup within it after
its JoinGroup.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping

from coordinator.consumer import records as r
from coordinator.consumer.coordinator import ConsumerGroupCoordinator
from coordinator.consumer.group import ConsumerGroup, TopicImage
from coordinator.consumer.member import (
    ClassicMemberMetadata,
    ConsumerGroupMember,
    MemberState,
)
from protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_subscription,
    encode_assignment,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.primitives import DecodeError

__all__ = [
    "assignment_bytes",
    "classic_heartbeat",
    "classic_join",
    "classic_sync",
    "validate_classic_member",
]

_E = ErrorCode
CONSUMER_PROTOCOL_TYPE = "consumer"


def decode_member_subscription(
    group_id: str, protocols: tuple[tuple[str, bytes], ...]
) -> ConsumerProtocolSubscription:
    """The subscription of a classic member (all its protocols carry the same one: Kafka
    reads the first). Kafka fails such a request with UNKNOWN_SERVER_ERROR (an
    IllegalStateException); kmock answers INCONSISTENT_GROUP_PROTOCOL, naming the cause."""
    try:
        return decode_subscription(protocols[0][1])
    except DecodeError as e:
        raise KafkaError(
            _E.INCONSISTENT_GROUP_PROTOCOL,
            f"group {group_id}: malformed embedded consumer protocol subscription: {e}",
        ) from None


def metadata_version(metadata: bytes) -> int:
    """The ConsumerProtocol version a member's metadata starts with, as the version its
    assignment is written in (Kafka's ConsumerProtocol.deserializeVersion), at most 3."""
    if len(metadata) < 2:
        return 0
    return max(0, min(int.from_bytes(metadata[:2], "big", signed=True), 3))


def assignment_bytes(group: ConsumerGroup, member: ConsumerGroupMember) -> bytes:
    """The member's assigned partitions as a ConsumerProtocol assignment (prepareAssignment)."""
    classic = member.classic_member_metadata
    assert classic is not None
    return encode_partitions(group, member.assigned_partitions, classic.supported_protocols[0][1])


def encode_partitions(
    group: ConsumerGroup, partitions: Mapping[uuid.UUID, frozenset[int]], metadata: bytes
) -> bytes:
    names = {t.topic_id: t.name for t in group.subscription_metadata.values()}
    assigned = [
        TopicPartition(topic=names[topic_id], partitions=sorted(ps))
        for topic_id, ps in sorted(partitions.items(), key=lambda kv: names.get(kv[0], ""))
        if ps and topic_id in names
    ]
    return encode_assignment(
        ConsumerProtocolAssignment(assigned_partitions=assigned, user_data=None),
        metadata_version(metadata),
    )


def validate_classic_member(
    group: ConsumerGroup, member_id: str, instance_id: str | None
) -> ConsumerGroupMember:
    """Kafka's validateConsumerGroupMember + throwIfMemberDoesNotUseClassicProtocol."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise KafkaError(
                _E.UNKNOWN_MEMBER_ID, f"member {member_id} is not in group {group.group_id}"
            )
    else:
        existing = group.static_members.get(instance_id)
        if existing is None:
            raise KafkaError(
                _E.UNKNOWN_MEMBER_ID,
                f"Member with instance id {instance_id} is not a member of group {group.group_id}.",
            )
        if existing != member_id:
            raise KafkaError(
                _E.FENCED_INSTANCE_ID,
                f"Static member {member_id} with instance id {instance_id} was fenced by "
                f"member {existing}.",
            )
        member = group.members[existing]
    if not member.use_classic_protocol:
        raise KafkaError(
            _E.UNKNOWN_MEMBER_ID, f"Member {member.member_id} does not use the classic protocol."
        )
    return member


def _check_generation(member: ConsumerGroupMember, generation_id: int) -> None:
    if generation_id != member.member_epoch:
        raise KafkaError(
            _E.ILLEGAL_GENERATION,
            f"The request generation id {generation_id} is not equal to the member epoch "
            f"{member.member_epoch} of member {member.member_id}.",
        )


def classic_join(
    c: ConsumerGroupCoordinator,
    group: ConsumerGroup,
    *,
    member_id: str,
    known_member_id: bool,
    instance_id: str | None,
    protocols: tuple[tuple[str, bytes], ...],
    session_timeout_ms: int,
    rebalance_timeout_ms: int,
    client_id: str,
    client_host: str,
    topics_metadata: Mapping[str, TopicImage],
    now_ms: int,
    describable: Callable[[str], bool] | None = None,
) -> tuple[ConsumerGroupMember, list[r.ConsumerGroupRecord]]:
    """A classic member joins (or rejoins) the consumer group; returns it, reconciled, and
    the records (already applied). The caller has checked the group size, the protocols
    and the member id rules (MEMBER_ID_REQUIRED).

    Raises:
      KafkaError: FENCED_INSTANCE_ID (its instance id is another member's),
        INCONSISTENT_GROUP_PROTOCOL (a subscription that does not parse).
    """
    group_id = group.group_id
    subscription = decode_member_subscription(group_id, protocols)
    out: list[r.ConsumerGroupRecord] = []
    member = group.members.get(member_id)
    if instance_id is not None:
        existing_id = group.static_members.get(instance_id)
        if existing_id is not None and existing_id != member_id:
            if known_member_id:
                raise KafkaError(
                    _E.FENCED_INSTANCE_ID,
                    f"Static member {member_id} with instance id {instance_id} was fenced by "
                    f"member {existing_id}.",
                )
            # A restarted static instance takes the old member's place and assignment.
            member = c.replace_static_member(group, group.members[existing_id], member_id, out)
    is_new = member is None
    if member is None:
        member = ConsumerGroupMember(member_id=member_id)
    updated = member.replace(
        instance_id=instance_id or member.instance_id,
        rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(
            member.rebalance_timeout_ms if rebalance_timeout_ms == -1 else rebalance_timeout_ms
        ),
        subscribed_topic_names=tuple(sorted(set(subscription.topics))),
        subscribed_topic_regex=None,  # a classic member cannot subscribe by regex
        client_id=client_id,
        client_host=client_host,
        classic_member_metadata=ClassicMemberMetadata(session_timeout_ms, protocols),
    )
    bump = updated.subscribed_topic_names != member.subscribed_topic_names or (
        member.subscribed_topic_regex is not None
    )
    if is_new or updated != member:
        c._write(out, r.member_subscription_record(group_id, updated))
    c.update_target(group, bump, topics_metadata, -1, out, describable)
    owned = [
        (topics_metadata[t.topic].topic_id, list(t.partitions))
        for t in subscription.owned_partitions
        if t.topic in topics_metadata
    ]
    reconciled = c.reconcile_member(group, member_id, topics_metadata, owned, now_ms, out)
    key = (group_id, member_id)
    c.join_deadlines.pop(key, None)
    c.sync_deadlines[key] = now_ms + max(updated.rebalance_timeout_ms, 0)
    return reconciled, out


def classic_sync(
    c: ConsumerGroupCoordinator,
    group: ConsumerGroup,
    *,
    member_id: str,
    instance_id: str | None,
    generation_id: int,
    protocol_type: str | None,
    protocol_name: str | None,
    now_ms: int,
) -> bytes:
    """A classic member's SyncGroup: its assignment in ConsumerProtocol bytes.

    Raises:
      KafkaError: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION,
        INCONSISTENT_GROUP_PROTOCOL, REBALANCE_IN_PROGRESS.
    """
    member = validate_classic_member(group, member_id, instance_id)
    _check_generation(member, generation_id)
    classic = member.classic_member_metadata
    assert classic is not None
    if protocol_type is not None and protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise KafkaError(
            _E.INCONSISTENT_GROUP_PROTOCOL,
            f"The protocol type {protocol_type} from member {member.member_id} request is "
            f"not equal to the group protocol type {CONSUMER_PROTOCOL_TYPE}.",
        )
    if protocol_name is not None and protocol_name != classic.protocol_name:
        raise KafkaError(
            _E.INCONSISTENT_GROUP_PROTOCOL,
            f"The protocol name {protocol_name} from member {member.member_id} request is "
            f"not equal to the protocol name {classic.protocol_name} returned in the join "
            "response.",
        )
    key = (group.group_id, member.member_id)
    if group.group_epoch > member.member_epoch and (
        member.state is not MemberState.UNREVOKED_PARTITIONS
    ):
        c.join_deadlines.setdefault(key, now_ms + max(member.rebalance_timeout_ms, 0))
        raise KafkaError(
            _E.REBALANCE_IN_PROGRESS,
            f"A new rebalance is triggered in group {group.group_id} and member "
            f"{member.member_id} should rejoin to catch up.",
        )
    c.sync_deadlines.pop(key, None)
    c.touch(group.group_id, member, now_ms)
    return assignment_bytes(group, member)


def classic_heartbeat(
    c: ConsumerGroupCoordinator,
    group: ConsumerGroup,
    *,
    member_id: str,
    instance_id: str | None,
    generation_id: int,
    now_ms: int,
) -> ErrorCode:
    """A classic member's Heartbeat: NONE, or REBALANCE_IN_PROGRESS when it must rejoin.

    Raises:
      KafkaError: UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID, ILLEGAL_GENERATION.
    """
    member = validate_classic_member(group, member_id, instance_id)
    _check_generation(member, generation_id)
    c.touch(group.group_id, member, now_ms)
    if (
        member.member_epoch < group.group_epoch
        or member.state is MemberState.UNREVOKED_PARTITIONS
        or (
            member.state is MemberState.UNRELEASED_PARTITIONS
            and not group.waiting_on_unreleased_partition(member)
        )
    ):
        key = (group.group_id, member.member_id)
        c.join_deadlines.setdefault(key, now_ms + max(member.rebalance_timeout_ms, 0))
        return _E.REBALANCE_IN_PROGRESS
    return _E.NONE
