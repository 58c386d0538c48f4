"""Online migration between classic and consumer groups (group.consumer.migration.policy), as
Kafka 4.1's GroupMetadataManager does it: the upgrade of a classic group when a
consumer-protocol member joins, classic members served inside the consumer group
(JoinGroup/SyncGroup/Heartbeat/LeaveGroup/OffsetCommit), revocation first, their timers,
the downgrade when the last consumer-protocol member goes, and replay. Time is literals.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupMigrationPolicy,
    MemberState,
    TopicImage,
)
from coordinator.coordinator import GroupCoordinator
from coordinator.outcome import Outcome
from coordinator.records import CoordinatorRecord
from protocol.consumer_offsets import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    GroupMetadataKey,
)
from protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    TopicPartitions,
)
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from tests.coordinator.builders import (
    GROUP,
    WALL,
    commit_errors,
    ctx,
    heartbeat,
    leave,
    next_token,
    reply,
    sync,
)

TOPIC_ID = uuid.UUID(int=11)
TOPICS = {"t": TopicImage(TOPIC_ID, "t", 6)}
SESSION_MS = 10_000
REBALANCE_MS = 30_000
P = ConsumerGroupMigrationPolicy


def coordinator(policy: P = P.BIDIRECTIONAL, **config: Any) -> GroupCoordinator:
    c = GroupCoordinator(CoordinatorConfig(**config), ConsumerGroupConfig(migration_policy=policy))
    c.migration.topic_images = lambda: TOPICS
    return c


def subscription(owned: list[int] | None = None, topics: tuple[str, ...] = ("t",)) -> bytes:
    """v0 (eager: nothing owned) or, with `owned`, v1 reporting owned partitions of "t"."""
    if owned is None:
        return encode_subscription(ConsumerProtocolSubscription(topics=list(topics)), 0)
    sub = ConsumerProtocolSubscription(
        topics=list(topics), owned_partitions=[TopicPartition(topic="t", partitions=owned)]
    )
    return encode_subscription(sub, 1)


def assignment(partitions: list[int]) -> bytes:
    tp = [TopicPartition(topic="t", partitions=partitions)] if partitions else []
    return encode_assignment(ConsumerProtocolAssignment(assigned_partitions=tp), 0)


def partitions_of(data: bytes) -> list[int]:
    return sorted(p for tp in decode_assignment(data).assigned_partitions for p in tp.partitions)


def join(
    c: GroupCoordinator,
    now_ms: int,
    member_id: str = "",
    *,
    owned: list[int] | None = None,
    protocol: str = "range",
    protocol_type: str = "consumer",
    version: int = 9,
    instance_id: str | None = None,
    topics: tuple[str, ...] = ("t",),
) -> tuple[int, Outcome]:
    token = next_token()
    request = JoinGroupRequest(
        group_id=GROUP,
        session_timeout_ms=SESSION_MS,
        rebalance_timeout_ms=REBALANCE_MS,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=protocol_type,
        protocols=[JoinGroupRequestProtocol(name=protocol, metadata=subscription(owned, topics))],
    )
    return token, c.join(ctx(version), request, token, now_ms)


def classic_group(
    c: GroupCoordinator, split: list[list[int]], *, cooperative: bool = False, static: bool = False
) -> list[str]:
    """A Stable classic group at generation 1: member i holds split[i] of topic "t".
    Its members are eager ("range", subscription v0), or cooperative ("cooperative-sticky",
    v1 reporting what they own); static ones have instance ids "i0", "i1"..."""
    kind: dict[str, Any] = (
        {"protocol": "cooperative-sticky", "owned": []} if cooperative else {"protocol": "range"}
    )
    instance_ids = [f"i{i}" if static else None for i in range(len(split))]
    ids = []
    if static:  # no MEMBER_ID_REQUIRED round: the joins wait for the initial delay
        joins = [join(c, 0, instance_id=i, **kind) for i in instance_ids]
        done = c.expire(0, WALL)
        ids = [reply(done, token).member_id for token, _ in joins]
    else:
        for _ in split:
            token, outcome = join(c, 0, **kind)
            ids.append(reply(outcome, token).member_id)
        for member_id in ids:
            join(c, 0, member_id, **kind)
        c.expire(0, WALL)
    generation = c.group(GROUP).generation_id
    leader = c.group(GROUP).leader_id
    sent = {m: assignment(ps) for m, ps in zip(ids, split, strict=True)}
    instance_of = dict(zip(ids, instance_ids, strict=True))
    _, outcome = sync(c, 0, leader, generation, sent, instance_id=instance_of[leader])
    c.on_appended(outcome, 0)
    for m in ids:
        if m != leader:
            sync(c, 0, m, generation, instance_id=instance_of[m])
    return ids


def cg_heartbeat(
    c: GroupCoordinator,
    now_ms: int,
    member_id: str,
    epoch: int = 0,
    owned: list[int] | None = None,
    *,
    instance_id: str | None = None,
) -> tuple[Any, Outcome]:
    joining = epoch == 0
    request = ConsumerGroupHeartbeatRequest(
        group_id=GROUP,
        member_id=member_id,
        instance_id=instance_id,
        member_epoch=epoch,
        rebalance_timeout_ms=REBALANCE_MS if joining else -1,
        subscribed_topic_names=["t"] if joining else None,
        topic_partitions=[]
        if joining
        else (None if owned is None else [TopicPartitions(topic_id=TOPIC_ID, partitions=owned)]),
    )
    token = next_token()
    outcome = c.consumer_group_heartbeat(ctx(1), request, token, now_ms, WALL + now_ms, TOPICS)
    return reply(outcome, token), outcome


def raised(fn: Any, *args: Any, **kwargs: Any) -> KafkaError:
    with pytest.raises(KafkaError) as e:
        fn(*args, **kwargs)
    return e.value


def owned_partitions(c: GroupCoordinator) -> dict[str, set[int]]:
    """Who may be consuming what (assigned or pending revocation); asserts no overlap."""
    group = c.consumer.groups[GROUP]
    seen: dict[int, str] = {}
    out = {}
    for m in group.members.values():
        mine = {p for _, p in m.owned_partitions()}
        for p in mine:
            assert p not in seen, f"partition {p} owned by {seen[p]} and {m.member_id}"
            seen[p] = m.member_id
        out[m.member_id] = mine
    return out


def upgraded() -> tuple[GroupCoordinator, list[str], Outcome]:
    """Two classic members holding 0-2 and 3-5, and consumer member "c0" joined."""
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    response, outcome = cg_heartbeat(c, 100, "c0")
    assert response.error_code == ErrorCode.NONE
    return c, ids, outcome


def replayed(*outcomes: Outcome, c: GroupCoordinator | None = None) -> GroupCoordinator:
    fresh = c or coordinator()
    for outcome in outcomes:
        for record in outcome.records:
            fresh.replay(record.key_bytes(), record.value_bytes())
    fresh.finish_load(0)
    return fresh


# --- the policy --------------------------------------------------------------------------


@pytest.mark.parametrize("policy", [P.DISABLED, P.DOWNGRADE])
def test_no_upgrade_without_the_policy(policy: P) -> None:
    c = coordinator(policy)
    classic_group(c, [[0, 1, 2], [3, 4, 5]])
    error = raised(cg_heartbeat, c, 100, "c0")
    assert (error.code, error.detail) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Cannot upgrade classic group {GROUP} to consumer group because online upgrade is "
        "disabled.",
    )
    assert c.group_type(GROUP) == "classic"
    assert c.group(GROUP).state.value == "Stable"


def test_no_upgrade_of_a_group_of_another_protocol_type() -> None:
    c = coordinator()
    token, outcome = join(c, 0, protocol_type="connect")
    member_id = reply(outcome, token).member_id
    join(c, 0, member_id, protocol_type="connect")
    error = raised(cg_heartbeat, c, 100, "c0")
    assert error.code == ErrorCode.GROUP_ID_NOT_FOUND
    assert "does not use the consumer embedded protocol" in error.detail


def test_no_upgrade_past_the_consumer_group_size() -> None:
    c = GroupCoordinator(CoordinatorConfig(), ConsumerGroupConfig(max_size=1))
    classic_group(c, [[0, 1, 2], [3, 4, 5]])
    error = raised(cg_heartbeat, c, 100, "c0")
    assert error.code == ErrorCode.GROUP_ID_NOT_FOUND
    assert "exceeds the consumer group maximum size" in error.detail


def test_no_upgrade_with_a_custom_assignors_user_data() -> None:
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    custom = ConsumerProtocolAssignment(
        assigned_partitions=[TopicPartition(topic="t", partitions=[0])], user_data=b"x"
    )
    c.group(GROUP).members[ids[0]].assignment = encode_assignment(custom, 0)
    error = raised(cg_heartbeat, c, 100, "c0")
    assert error.code == ErrorCode.GROUP_ID_NOT_FOUND
    assert "unsupported custom assignor" in error.detail
    assert c.group_type(GROUP) == "classic", "a refused upgrade changes nothing"
    assert GROUP not in c.consumer.groups


def test_a_heartbeat_with_an_epoch_to_a_classic_group_is_not_a_consumer_group() -> None:
    c = coordinator()
    classic_group(c, [[0, 1, 2], [3, 4, 5]])
    error = raised(cg_heartbeat, c, 100, "c0", 3)
    assert (error.code, error.detail) == (
        ErrorCode.GROUP_ID_NOT_FOUND,
        f"Group {GROUP} is not a consumer group.",
    )


# --- upgrade -----------------------------------------------------------------------------


def test_upgrade_writes_kafkas_records_and_keeps_the_assignment() -> None:
    c, ids, outcome = upgraded()
    assert c.group_type(GROUP) == "consumer"
    keys = [type(r.key) for r in outcome.records]
    assert keys[:9] == [
        GroupMetadataKey,  # the classic group's tombstone
        ConsumerGroupMemberMetadataKey,
        ConsumerGroupMemberMetadataKey,
        ConsumerGroupMetadataKey,  # epoch = the generation
        ConsumerGroupTargetAssignmentMemberKey,
        ConsumerGroupTargetAssignmentMemberKey,
        ConsumerGroupTargetAssignmentMetadataKey,
        ConsumerGroupCurrentMemberAssignmentKey,
        ConsumerGroupCurrentMemberAssignmentKey,
    ]
    assert isinstance(outcome.records[0], CoordinatorRecord)
    assert outcome.records[0].value is None
    group = c.consumer.groups[GROUP]
    assert group.group_epoch == 2, "the joining member bumped the generation's epoch"
    first, second = (group.members[m] for m in ids)
    assert first.use_classic_protocol
    assert second.use_classic_protocol
    assert first.member_epoch == 1
    assert first.classic_member_metadata.session_timeout_ms == SESSION_MS
    assert owned_partitions(c) == {ids[0]: {0, 1, 2}, ids[1]: {3, 4, 5}, "c0": set()}
    assert group.members["c0"].state is MemberState.UNRELEASED_PARTITIONS


def test_upgrade_answers_parked_requests_with_rebalance_in_progress() -> None:
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    token, outcome = join(c, 1, ids[0])  # the leader rejoins: a rebalance, parked
    assert reply(outcome, token) is None
    _, outcome = cg_heartbeat(c, 2, "c0")
    assert reply(outcome, token).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_classic_members_are_asked_to_rejoin_and_give_up_partitions_first() -> None:
    c, ids, _ = upgraded()
    assert heartbeat(c, 200, ids[0], 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    # An eager member rejoins owning nothing: what it loses is released at once.
    token, outcome = join(c, 300, ids[0])
    response = reply(outcome, token)
    assert (response.error_code, response.generation_id) == (ErrorCode.NONE, 2)
    assert (response.protocol_type, response.protocol_name, response.leader) == (
        "consumer",
        "range",
        "",
    )
    assert response.members == []
    sync_token, synced = sync(c, 310, ids[0], 2, protocol_type="consumer", protocol_name="range")
    mine = partitions_of(reply(synced, sync_token).assignment)
    assert set(mine) < {0, 1, 2}
    assert mine
    assert heartbeat(c, 320, ids[0], 2).error_code == ErrorCode.NONE
    # The consumer member now gets what was released.
    response, _ = cg_heartbeat(c, 400, "c0", 2, owned=[])
    got = {p for t in response.assignment.topic_partitions for p in t.partitions}
    assert got == {0, 1, 2} - set(mine)
    owned_partitions(c)


def test_a_cooperative_member_revokes_before_the_partitions_move() -> None:
    c, ids, _ = upgraded()
    # It rejoins still owning 3-5 (ConsumerProtocolSubscription v1 owned_partitions).
    token, outcome = join(c, 300, ids[1], owned=[3, 4, 5], protocol="cooperative-sticky")
    response = reply(outcome, token)
    assert response.error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL, (
        "its protocols must be ones every classic member supports"
    )
    token, outcome = join(c, 300, ids[1], owned=[3, 4, 5])
    response = reply(outcome, token)
    member = c.consumer.groups[GROUP].members[ids[1]]
    assert member.state is MemberState.UNREVOKED_PARTITIONS
    assert response.generation_id == 1, "it stays at its epoch until it revoked"
    token, synced = sync(c, 310, ids[1], 1)
    kept = partitions_of(reply(synced, token).assignment)
    assert set(kept) < {3, 4, 5}
    assert heartbeat(c, 320, ids[1], 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    token, outcome = join(c, 330, ids[1], owned=kept)
    assert reply(outcome, token).generation_id == 2
    assert c.consumer.groups[GROUP].members[ids[1]].state is MemberState.STABLE
    owned_partitions(c)


def test_upgrade_counts_what_a_cooperative_member_reports_owning() -> None:
    # kmock departs from ConsumerGroup.fromClassicGroup here (see migration
    # ._with_reported_partitions): a rebalance from CompletingRebalance cleared every
    # assignment (GroupMetadataManager.resetAndPropagateAssignmentWithError), but the
    # cooperative members still consume what their JoinGroups report owning.
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]], cooperative=True)
    coop = {"protocol": "cooperative-sticky"}
    join(c, 100, ids[0], owned=[0, 1, 2], **coop)  # a rebalance: both rejoin
    second, done = join(c, 100, ids[1], owned=[3, 4, 5], **coop)
    assert reply(done, second).generation_id == 2
    assert str(c.group(GROUP).state) == "CompletingRebalance"
    token, outcome = join(c, 200, **coop)  # a third member: the group rebalances again
    newcomer = reply(outcome, token).member_id
    join(c, 200, newcomer, owned=[], **coop)
    group = c.group(GROUP)
    assert str(group.state) == "PreparingRebalance"
    assert [group.members[m].assignment for m in ids] == [b"", b""], "as Kafka clears them"
    parked, _ = join(c, 210, ids[0], owned=[0, 1, 2], **coop)
    response, outcome = cg_heartbeat(c, 300, "c0")
    assert response.assignment.topic_partitions == [], "nothing is free yet"
    assert owned_partitions(c) == {
        ids[0]: {0, 1, 2},
        ids[1]: {3, 4, 5},
        newcomer: set(),
        "c0": set(),
    }
    assert reply(outcome, parked).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_a_stale_sync_is_rebalance_in_progress_and_a_wrong_generation_illegal() -> None:
    c, ids, _ = upgraded()
    assert raised(sync, c, 200, ids[0], 1).code == ErrorCode.REBALANCE_IN_PROGRESS
    assert raised(sync, c, 200, ids[0], 7).code == ErrorCode.ILLEGAL_GENERATION
    assert raised(heartbeat, c, 200, ids[0], 7).code == ErrorCode.ILLEGAL_GENERATION
    error = raised(sync, c, 200, ids[0], 1, protocol_name="roundrobin")
    assert error.code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert raised(heartbeat, c, 200, "c0", 2).code == ErrorCode.UNKNOWN_MEMBER_ID


def test_a_classic_member_that_does_not_rejoin_in_time_is_fenced() -> None:
    c, ids, _ = upgraded()
    assert heartbeat(c, 1_000, ids[0], 1).error_code == ErrorCode.REBALANCE_IN_PROGRESS
    for t in range(2_000, 1_000 + REBALANCE_MS, 5_000):  # it keeps heartbeating, never joins
        heartbeat(c, t, ids[1], 1)
        heartbeat(c, t, ids[0], 1)
        cg_heartbeat(c, t, "c0", c.consumer.groups[GROUP].members["c0"].member_epoch)
    c.expire(1_000 + REBALANCE_MS, WALL)
    assert ids[0] not in c.consumer.groups[GROUP].members


def test_a_new_classic_member_joins_the_consumer_group() -> None:
    c, _ids, _ = upgraded()
    token, outcome = join(c, 200)
    new_id = reply(outcome, token).member_id
    assert reply(outcome, token).error_code == ErrorCode.MEMBER_ID_REQUIRED
    token, outcome = join(c, 210, new_id)
    response = reply(outcome, token)
    assert response.error_code == ErrorCode.NONE
    assert response.generation_id == c.consumer.groups[GROUP].group_epoch == 3
    assert outcome.records, "its subscription and the new target assignment are written"


def test_commits_of_classic_members_are_checked_against_their_epoch() -> None:
    from tests.coordinator.builders import commit

    c, ids, _ = upgraded()
    token, outcome = commit(c, 200, {("t", 0): 5}, member_id=ids[0], generation_id=1)
    assert set(commit_errors(outcome, token).values()) == {ErrorCode.NONE}
    error = raised(commit, c, 200, {("t", 0): 5}, member_id=ids[0], generation_id=0)
    assert error.code == ErrorCode.ILLEGAL_GENERATION
    token, outcome = commit(c, 200, {("t", 0): 5}, member_id=ids[0], generation_id=1, version=2)
    assert set(commit_errors(outcome, token).values()) == {ErrorCode.NONE}, (
        "a classic member may commit below v9"
    )


def test_a_classic_leave_fences_the_member() -> None:
    c, ids, _ = upgraded()
    epoch = c.consumer.groups[GROUP].group_epoch
    token, outcome = leave(c, 200, (ids[0], None))
    assert [m.error_code for m in reply(outcome, token).members] == [ErrorCode.NONE]
    group = c.consumer.groups[GROUP]
    assert ids[0] not in group.members
    assert group.group_epoch == epoch + 1


# --- downgrade ---------------------------------------------------------------------------


def test_the_last_consumer_member_leaving_downgrades_the_group() -> None:
    c, ids, _ = upgraded()
    epoch = c.consumer.groups[GROUP].group_epoch
    owned = owned_partitions(c)
    response, outcome = cg_heartbeat(c, 200, "c0", -1)
    assert response.error_code == ErrorCode.NONE
    assert c.group_type(GROUP) == "classic"
    group = c.group(GROUP)
    assert str(group.state) == "PreparingRebalance"
    assert group.generation_id == epoch
    assert list(group.members) == ids
    for m in ids:
        # What each still owns (kmock; Kafka writes the target assignment).
        assert set(partitions_of(group.members[m].assignment)) == owned[m]
    last = outcome.records[-1]
    assert isinstance(last.key, GroupMetadataKey)
    assert last.value is not None
    assert all(r.value_bytes() is None for r in outcome.records[:-1])
    assert heartbeat(c, 210, ids[0], epoch).error_code == ErrorCode.REBALANCE_IN_PROGRESS


def test_no_downgrade_without_the_policy() -> None:
    c = coordinator(P.UPGRADE)
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    cg_heartbeat(c, 100, "c0")
    cg_heartbeat(c, 200, "c0", -1)
    assert c.group_type(GROUP) == "consumer"
    assert set(c.consumer.groups[GROUP].members) == set(ids)


def test_a_consumer_member_whose_session_ends_downgrades_the_group() -> None:
    c, ids, _ = upgraded()
    t = 100
    while t < 100 + 45_000:  # the classic members keep their sessions, c0 is silent
        t += 5_000
        for m in ids:
            heartbeat(c, t, m, 1)
    c.expire(100 + 45_000, WALL)
    assert c.group_type(GROUP) == "classic"


def test_the_downgraded_group_rebalances_and_keeps_its_offsets() -> None:
    from tests.coordinator.builders import commit, fetch

    c, ids, _ = upgraded()
    _token, outcome = commit(c, 150, {("t", 0): 7}, member_id=ids[0], generation_id=1)
    c.on_appended(outcome, 150)
    cg_heartbeat(c, 200, "c0", -1)
    generation = c.group(GROUP).generation_id
    first, _ = join(c, 300, ids[0])
    second, done = join(c, 300, ids[1])  # everyone rejoined: the next generation
    answers = [reply(done, t) for t in (first, second)]
    assert [a.generation_id for a in answers] == [generation + 1] * 2
    assert str(c.group(GROUP).state) == "CompletingRebalance"
    assert fetch(c, {"t": [0]})[("t", 0)][0] == 7


def test_classic_members_that_miss_the_downgrade_rebalance_are_gone_before_a_new_upgrade() -> None:
    # Kafka's GroupMetadataManager: convertToClassicGroup keeps the classic members (their
    # ids) at generation = the group epoch, reschedules their sessions and rebalances;
    # validateClassicGroupHeartbeat answers a stale generation ILLEGAL_GENERATION without
    # touching the session. An eager client so told revokes everything and rejoins; one
    # that does not is removed when its session ends, and an upgrade then starts afresh.
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    cg_heartbeat(c, 0, "c0")
    group = c.consumer.groups[GROUP]
    assert set(group.members) == {*ids, "c0"}
    assert group.group_epoch == 2
    assert [group.members[m].member_epoch for m in ids] == [1, 1]
    cg_heartbeat(c, 0, "c0", -1)  # before the classic members heard of the upgrade
    classic = c.group(GROUP)
    assert (str(classic.state), classic.generation_id, list(classic.members)) == (
        "PreparingRebalance",
        2,
        ids,
    )
    assert raised(heartbeat, c, 2_000, ids[0], 1).code == ErrorCode.ILLEGAL_GENERATION
    c.expire(SESSION_MS - 1, WALL)
    assert list(c.group(GROUP).members) == ids, "each keeps its session until it ends"
    c.expire(SESSION_MS, WALL)
    assert (str(c.group(GROUP).state), c.group(GROUP).generation_id) == ("Empty", 3)
    response, _ = cg_heartbeat(c, SESSION_MS, "c0")
    assert c.group_type(GROUP) == "consumer"
    assert set(c.consumer.groups[GROUP].members) == {"c0"}
    assert response.member_epoch == 1
    assert owned_partitions(c) == {"c0": set(range(6))}
    for m in ids:  # a client that kept heartbeating would now be told it is gone
        assert raised(heartbeat, c, SESSION_MS + 1, m, 1).code == ErrorCode.UNKNOWN_MEMBER_ID


def test_classic_members_that_rejoin_after_the_downgrade_keep_the_partitions_apart() -> None:
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    cg_heartbeat(c, 0, "c0")
    cg_heartbeat(c, 0, "c0", -1)
    first, _ = join(c, 2_000, ids[0])  # told ILLEGAL_GENERATION: revoke all, rejoin
    second, done = join(c, 2_000, ids[1])
    answers = {m: reply(done, t) for m, t in zip(ids, (first, second), strict=True)}
    assert {a.generation_id for a in answers.values()} == {3}
    leader = c.group(GROUP).leader_id
    follower = next(m for m in ids if m != leader)
    sent = {leader: assignment([0, 1, 2, 3, 4, 5]), follower: assignment([])}
    token, outcome = sync(c, 2_000, leader, 3, sent)
    c.on_appended(outcome, 2_000)
    assert partitions_of(reply(outcome, token).assignment) == [0, 1, 2, 3, 4, 5]
    token, outcome = sync(c, 2_000, follower, 3)
    assert partitions_of(reply(outcome, token).assignment) == []
    response, _ = cg_heartbeat(c, 3_000, "c0")  # upgraded again
    assert response.error_code == ErrorCode.NONE
    assert owned_partitions(c) == {leader: set(range(6)), follower: set(), "c0": set()}


def settled_with_static_consumer_member() -> tuple[GroupCoordinator, list[str]]:
    """An upgraded group whose classic members rejoined (eager) and whose one
    consumer-protocol member, "c0" with instance id "i0", owns what they released."""
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    cg_heartbeat(c, 100, "c0", instance_id="i0")
    for m in ids:
        join(c, 200, m)
    epoch = c.consumer.groups[GROUP].group_epoch
    for m in ids:
        sync(c, 210, m, epoch)
    response, _ = cg_heartbeat(c, 220, "c0", epoch, owned=[], instance_id="i0")
    assert response.assignment.topic_partitions, "c0 got its share"
    return c, ids


def test_a_static_classic_member_replacing_the_last_consumer_member_downgrades() -> None:
    """validateOnlineDowngradeWithReplacedMember: the classic instance takes "c0"'s place
    with the same subscription; the group becomes a Stable classic group at the group
    epoch, the new member holding what "c0" owned, without a rebalance."""
    c, ids = settled_with_static_consumer_member()
    group_epoch = c.consumer.groups[GROUP].group_epoch
    owned = owned_partitions(c)["c0"]
    token, outcome = join(c, 300, instance_id="i0")
    response = reply(outcome, token)
    assert response.error_code == ErrorCode.NONE
    assert c.group_type(GROUP) == "classic"
    group = c.group(GROUP)
    assert str(group.state) == "Stable"
    assert group.generation_id == group_epoch
    new_id = response.member_id
    assert set(group.members) == {*ids, new_id}
    assert group.members[new_id].group_instance_id == "i0"
    assert set(partitions_of(group.members[new_id].assignment)) == owned
    assert response.generation_id == group_epoch
    last = outcome.records[-1]
    assert isinstance(last.key, GroupMetadataKey)
    assert last.value is not None
    # The new member syncs in the classic group and gets "c0"'s partitions.
    sync_token, synced = sync(c, 310, new_id, group_epoch, instance_id="i0")
    assert set(partitions_of(reply(synced, sync_token).assignment)) == owned
    assert heartbeat(c, 320, ids[0], group_epoch).error_code == ErrorCode.NONE
    # Nothing of the consumer group's timers is left to fence anyone.
    assert GROUP not in c.consumer.groups
    assert c.consumer.next_deadline_ms() is None


def test_a_static_replacement_with_another_subscription_downgrades_and_rebalances() -> None:
    c, _ids = settled_with_static_consumer_member()
    token, outcome = join(c, 300, instance_id="i0", topics=("t", "u"))
    assert reply(outcome, token).error_code == ErrorCode.NONE
    assert c.group_type(GROUP) == "classic"
    assert str(c.group(GROUP).state) == "PreparingRebalance"


def test_a_static_replacement_before_the_partitions_moved_downgrades_and_rebalances() -> None:
    # "c0" waits for partitions the classic members have not released; the classic group
    # records what each member owns (not Kafka's targets), so it rebalances to hand out
    # the partitions still on their way, which no member holds.
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    cg_heartbeat(c, 100, "c0", instance_id="i0")
    assert owned_partitions(c)["c0"] == set()
    assert c.consumer.groups[GROUP].target_assignment["c0"], "partitions are to move to c0"
    token, outcome = join(c, 200, instance_id="i0")
    response = reply(outcome, token)
    assert response.error_code == ErrorCode.NONE
    assert c.group_type(GROUP) == "classic"
    group = c.group(GROUP)
    assert str(group.state) == "PreparingRebalance"
    assert partitions_of(group.members[response.member_id].assignment) == []
    assert [partitions_of(group.members[m].assignment) for m in ids] == [[0, 1, 2], [3, 4, 5]]


def test_no_downgrade_by_a_static_replacement_while_consumer_members_remain() -> None:
    c, _ids = settled_with_static_consumer_member()
    cg_heartbeat(c, 250, "c1")
    token, outcome = join(c, 300, instance_id="i0")
    assert reply(outcome, token).error_code == ErrorCode.NONE
    assert c.group_type(GROUP) == "consumer"
    assert "c0" not in c.consumer.groups[GROUP].members


@pytest.mark.parametrize("policy", [P.UPGRADE, P.DISABLED])
def test_no_downgrade_by_a_static_replacement_without_the_policy(policy: P) -> None:
    c, _ids = settled_with_static_consumer_member()
    c.consumer.config = ConsumerGroupConfig(migration_policy=policy)
    token, outcome = join(c, 300, instance_id="i0")
    assert reply(outcome, token).error_code == ErrorCode.NONE
    assert c.group_type(GROUP) == "consumer"


def test_no_downgrade_by_a_static_replacement_past_the_classic_group_size() -> None:
    c, _ids = settled_with_static_consumer_member()
    c.config = c.migration.config = CoordinatorConfig(group_max_size=2)
    token, outcome = join(c, 300, instance_id="i0")
    assert reply(outcome, token).error_code == ErrorCode.NONE
    assert c.group_type(GROUP) == "consumer"


# --- replay ------------------------------------------------------------------------------


def test_an_upgraded_group_survives_a_restart() -> None:
    c, ids, outcome = upgraded()
    before = c.consumer.groups[GROUP]
    after = replayed(outcome).consumer.groups[GROUP]
    assert after.group_epoch == before.group_epoch
    assert after.members == before.members
    assert after.target_assignment == before.target_assignment
    assert after.members[ids[0]].classic_member_metadata is not None


def test_a_downgraded_group_survives_a_restart() -> None:
    c, ids, upgrade = upgraded()
    _, downgrade = cg_heartbeat(c, 200, "c0", -1)
    reloaded = replayed(upgrade, downgrade)
    assert reloaded.group_type(GROUP) == "classic"
    group = reloaded.group(GROUP)
    assert list(group.members) == ids
    assert group.generation_id == c.group(GROUP).generation_id
    assert [m.assignment for m in group.members.values()] == [
        m.assignment for m in c.group(GROUP).members.values()
    ]


def test_describe_and_list_show_classic_members_inside_the_consumer_group() -> None:
    from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
    from protocol.messages.list_groups import ListGroupsRequest

    c, ids, _ = upgraded()
    request = ConsumerGroupDescribeRequest(group_ids=[GROUP], include_authorized_operations=False)
    (group,) = c.consumer_group_describe(ctx(1), request, TOPICS).groups
    assert {m.member_id: m.member_type for m in group.members} == {
        ids[0]: 0,
        ids[1]: 0,
        "c0": 1,
    }
    listed = c.list_groups(ctx(5), ListGroupsRequest()).groups
    assert [(g.group_id, g.group_type) for g in listed] == [(GROUP, "consumer")]
    cg_heartbeat(c, 200, "c0", -1)
    listed = c.list_groups(ctx(5), ListGroupsRequest()).groups
    assert [(g.group_id, g.group_type, g.protocol_type) for g in listed] == [
        (GROUP, "classic", "consumer")
    ]


def test_a_classic_join_whose_records_are_not_written_fails_and_is_retried() -> None:
    c, _, _ = upgraded()
    token, outcome = join(c, 200)
    new_id = reply(outcome, token).member_id
    token, outcome = join(c, 210, new_id)
    assert outcome.records
    failed = c.on_append_failed(outcome, ErrorCode.KAFKA_STORAGE_ERROR, 210)
    assert reply(failed, token).error_code == ErrorCode.NOT_COORDINATOR


def test_a_classic_member_times_out_on_its_own_session_timeout() -> None:
    c, ids, _ = upgraded()
    for t in (5_000, 10_000):  # c0 and the first classic member keep their sessions
        cg_heartbeat(c, t, "c0", c.consumer.groups[GROUP].members["c0"].member_epoch)
        heartbeat(c, t, ids[0], 1)
    c.expire(100 + SESSION_MS, WALL)  # the second classic member's session (10 s) is over
    assert set(c.consumer.groups[GROUP].members) == {ids[0], "c0"}


def test_a_classic_member_that_joins_but_never_syncs_is_fenced() -> None:
    c, ids, _ = upgraded()
    token, outcome = join(c, 1_000, ids[0])
    assert reply(outcome, token).error_code == ErrorCode.NONE
    assert c.next_deadline_ms() <= 1_000 + REBALANCE_MS
    for t in range(5_000, 1_000 + REBALANCE_MS, 5_000):  # alive, but no SyncGroup
        heartbeat(c, t, ids[0], c.consumer.groups[GROUP].members[ids[0]].member_epoch)
        heartbeat(c, t, ids[1], 1)
        cg_heartbeat(c, t, "c0", c.consumer.groups[GROUP].members["c0"].member_epoch)
    c.expire(1_000 + REBALANCE_MS, WALL)
    assert ids[0] not in c.consumer.groups[GROUP].members
