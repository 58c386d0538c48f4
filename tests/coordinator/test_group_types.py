"""The facade with both group types: one group id names one group, classic or consumer.

KIP-848 consumer groups live beside classic groups in GroupCoordinator: type clashes are
answered as Kafka's GroupMetadataManager answers them (the conversions themselves are in
consumer/test_migration.py), offsets of consumer groups are checked against member epochs,
ListGroups/DescribeGroups/DeleteGroups see both types, timers and replay
cover consumer groups too. Time is passed as literals.
"""

from __future__ import annotations

import uuid

from coordinator.consumer import ConsumerGroupConfig, ConsumerGroupMigrationPolicy, TopicImage
from coordinator.coordinator import GroupCoordinator
from coordinator.outcome import Outcome
from protocol.errors import ErrorCode
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.consumer_group_heartbeat import (
    ConsumerGroupHeartbeatRequest,
    ConsumerGroupHeartbeatResponse,
)
from protocol.messages.describe_groups import DescribeGroupsRequest
from protocol.messages.list_groups import ListGroupsRequest
from protocol.messages.offset_fetch import OffsetFetchRequest, OffsetFetchRequestGroup
from tests.coordinator.builders import (
    GROUP,
    WALL,
    commit,
    commit_errors,
    coordinator,
    ctx,
    delete_groups,
    fetch,
    join,
    next_token,
    raised,
    reply,
    stable_group,
)

TOPIC_ID = uuid.UUID(int=7)
TOPICS = {"t": TopicImage(TOPIC_ID, "t", 3)}
SESSION_MS = 45_000


def consumer_heartbeat(
    c: GroupCoordinator,
    now_ms: int,
    member_id: str,
    member_epoch: int = 0,
    *,
    group_id: str = GROUP,
    topics: dict[str, TopicImage] = TOPICS,
    owned: list[int] | None = None,
) -> tuple[ConsumerGroupHeartbeatResponse, Outcome]:
    """A ConsumerGroupHeartbeat v1: epoch 0 joins subscribed to "t"."""
    from protocol.messages.consumer_group_heartbeat import TopicPartitions

    joining = member_epoch == 0
    request = ConsumerGroupHeartbeatRequest(
        group_id=group_id,
        member_id=member_id,
        member_epoch=member_epoch,
        rebalance_timeout_ms=30_000 if joining else -1,
        subscribed_topic_names=["t"] if joining else None,
        topic_partitions=[]
        if joining
        else None
        if owned is None
        else [TopicPartitions(topic_id=TOPIC_ID, partitions=owned)],
    )
    token = next_token()
    outcome = c.consumer_group_heartbeat(ctx(1), request, token, now_ms, WALL + now_ms, topics)
    return reply(outcome, token), outcome


def consumer_group(members: int = 1) -> tuple[GroupCoordinator, list[Outcome]]:
    """A consumer group of `members` members ("m0", ...), each joined once at time 0."""
    c = coordinator()
    outcomes = [consumer_heartbeat(c, 0, f"m{i}")[1] for i in range(members)]
    return c, outcomes


def replayed(outcomes: list[Outcome], now_ms: int = 0) -> GroupCoordinator:
    c = coordinator()
    for outcome in outcomes:
        for record in outcome.records:
            c.replay(record.key_bytes(), record.value_bytes())
    c.finish_load(now_ms)
    return c


def listed(c: GroupCoordinator, version: int = 5, **filters: list[str]) -> dict[str, tuple]:
    response = c.list_groups(ctx(version), ListGroupsRequest(**filters))
    return {g.group_id: (g.protocol_type, g.group_state, g.group_type) for g in response.groups}


# --- one id, one type ------------------------------------------------------------------


def test_a_member_joins_a_new_consumer_group_and_gets_every_partition():
    c = coordinator()
    response, outcome = consumer_heartbeat(c, 0, "m0")
    assert response.error_code == ErrorCode.NONE
    assert response.member_epoch == 1
    assert response.assignment.topic_partitions[0].partitions == [0, 1, 2]
    assert outcome.records, "the join is written to __consumer_offsets"
    assert c.group_type(GROUP) == "consumer"
    assert c.group(GROUP) is None, "no classic group is made for it"


def test_a_consumer_member_cannot_join_a_classic_group_with_members():
    c, _ = stable_group(2)
    c.consumer.config = ConsumerGroupConfig(migration_policy=ConsumerGroupMigrationPolicy.DISABLED)
    code = raised(consumer_heartbeat, c, 0, "m0")
    assert code == ErrorCode.GROUP_ID_NOT_FOUND
    assert c.group_type(GROUP) == "classic"
    assert len(c.group(GROUP).members) == 2


def test_an_empty_classic_group_becomes_a_consumer_group_and_keeps_its_offsets():
    c = coordinator()
    _, outcome = commit(c, 0, {("t", 0): 42})
    c.on_appended(outcome, 0)
    response, outcome = consumer_heartbeat(c, 10, "m0")
    assert response.error_code == ErrorCode.NONE
    assert c.group_type(GROUP) == "consumer"
    assert fetch(c, {"t": [0]})[("t", 0)][0] == 42
    assert listed(c)[GROUP][2] == "consumer"


def test_a_consumer_heartbeat_with_an_epoch_to_a_classic_group_is_group_id_not_found():
    c = coordinator()
    _, outcome = commit(c, 0, {("t", 0): 1})
    c.on_appended(outcome, 0)
    assert raised(consumer_heartbeat, c, 0, "m0", 3) == ErrorCode.GROUP_ID_NOT_FOUND


def test_a_classic_join_of_another_protocol_type_to_a_consumer_group_is_inconsistent():
    c, _ = consumer_group(1)
    token, outcome = join(c, 0, protocol_type="connect")
    assert reply(outcome, token).error_code == ErrorCode.INCONSISTENT_GROUP_PROTOCOL
    assert not outcome.records
    assert c.group_type(GROUP) == "consumer"


def test_a_classic_join_to_a_consumer_group_with_members_is_taken_in():
    """Kafka 4.x serves it inside the consumer group (classicGroupJoinToConsumerGroup):
    first MEMBER_ID_REQUIRED, as to a classic group."""
    c, _ = consumer_group(1)
    token, outcome = join(c, 0)
    assert reply(outcome, token).error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert c.group_type(GROUP) == "consumer"


def test_a_classic_join_to_an_empty_consumer_group_replaces_it():
    c, _ = consumer_group(1)
    consumer_heartbeat(c, 1, "m0", -1)  # leaves
    token, outcome = join(c, 2)
    assert reply(outcome, token).error_code == ErrorCode.MEMBER_ID_REQUIRED
    assert c.group_type(GROUP) == "classic"
    tombstones = [r for r in outcome.records if r.value_bytes() is None]
    assert tombstones, "the consumer group's records are tombstoned"
    assert replayed([outcome]).group_type(GROUP) is None


def test_classic_sync_and_heartbeat_from_a_consumer_member_are_unknown_member():
    """Kafka's throwIfMemberDoesNotUseClassicProtocol; a LeaveGroup fences any member
    (classicGroupLeaveToConsumerGroup), and answers UNKNOWN_MEMBER_ID for one it lacks."""
    from tests.coordinator.builders import heartbeat, leave, sync

    c, _ = consumer_group(1)
    assert raised(sync, c, 0, "m0", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    assert raised(heartbeat, c, 0, "m0", 1) == ErrorCode.UNKNOWN_MEMBER_ID
    token, outcome = leave(c, 0, ("nobody", None))
    assert [m.error_code for m in reply(outcome, token).members] == [ErrorCode.UNKNOWN_MEMBER_ID]
    token, outcome = leave(c, 0, ("m0", None))
    assert [m.error_code for m in reply(outcome, token).members] == [ErrorCode.NONE]
    assert c.consumer.groups[GROUP].members == {}


# --- offsets -----------------------------------------------------------------------------


def test_commits_are_checked_against_the_member_epoch():
    c, _ = consumer_group(1)
    code = raised(commit, c, 0, {("t", 0): 5}, member_id="m0", generation_id=0)
    assert code == ErrorCode.STALE_MEMBER_EPOCH
    code = raised(commit, c, 0, {("t", 0): 5}, member_id="nobody", generation_id=1)
    assert code == ErrorCode.UNKNOWN_MEMBER_ID
    code = raised(commit, c, 0, {("t", 0): 5}, member_id="m0", generation_id=1, version=8)
    assert code == ErrorCode.UNSUPPORTED_VERSION
    token, outcome = commit(c, 0, {("t", 0): 5}, member_id="m0", generation_id=1)
    assert commit_errors(outcome, token) == {("t", 0): ErrorCode.NONE}
    c.on_appended(outcome, 0)
    assert fetch(c, {"t": [0]})[("t", 0)][0] == 5
    assert GROUP not in {g for g, v in listed(c).items() if v[2] == "classic"}


def test_offset_fetch_v9_checks_the_member_epoch_per_group():
    c, _ = consumer_group(1)
    _, outcome = commit(c, 0, {("t", 0): 5}, member_id="m0", generation_id=1)
    c.on_appended(outcome, 0)

    def fetch_as(member_id: str | None, epoch: int) -> tuple[int, list]:
        request = OffsetFetchRequest(
            groups=[
                OffsetFetchRequestGroup(
                    group_id=GROUP, member_id=member_id, member_epoch=epoch, topics=None
                )
            ]
        )
        (group,) = c.fetch_offsets(ctx(9), request, 0).groups
        offsets = [p.committed_offset for t in group.topics for p in t.partitions]
        return group.error_code, offsets

    assert fetch_as("m0", 1) == (ErrorCode.NONE, [5])
    assert fetch_as(None, -1) == (ErrorCode.NONE, [5])  # the admin client
    assert fetch_as("m0", 0) == (ErrorCode.STALE_MEMBER_EPOCH, [])
    assert fetch_as("nobody", 1) == (ErrorCode.UNKNOWN_MEMBER_ID, [])


def test_offsets_of_subscribed_topics_do_not_expire_while_others_do():
    c, _ = consumer_group(1)
    _, outcome = commit(c, 0, {("t", 0): 5, ("old", 0): 9}, member_id="m0", generation_id=1)
    c.on_appended(outcome, 0)
    c.finish_load(0)  # schedules the first retention check, due at once
    week_ms = 7 * 24 * 3_600_000
    expired = c.expire(1000, WALL + week_ms)  # the member's session is still running
    c.on_appended(expired, 1000)
    assert c.consumer.groups[GROUP].members
    assert fetch(c, {"t": [0], "old": [0]}) == {
        ("t", 0): (5, "", ErrorCode.NONE),
        ("old", 0): (-1, "", ErrorCode.NONE),
    }


# --- ListGroups, DescribeGroups, ConsumerGroupDescribe, DeleteGroups ------------------------


def test_list_groups_shows_both_types_and_filters_by_type_and_state():
    c, _ = stable_group(1, group_id="classic")
    consumer_heartbeat(c, 0, "m0", group_id="modern")
    assert listed(c) == {
        "classic": ("consumer", "Stable", "classic"),
        "modern": ("consumer", "Stable", "consumer"),
    }
    assert set(listed(c, types_filter=["Consumer"])) == {"modern"}
    assert set(listed(c, types_filter=["classic"])) == {"classic"}
    assert set(listed(c, types_filter=["share"])) == set()
    assert set(listed(c, states_filter=["stable"], types_filter=["consumer"])) == {"modern"}
    assert set(listed(c, states_filter=["empty"])) == set()


def test_describe_groups_describes_a_consumer_group_as_not_classic():
    c, _ = consumer_group(1)
    (described,) = c.describe_groups(ctx(5), DescribeGroupsRequest(groups=[GROUP])).groups
    assert (described.error_code, described.group_state, described.members) == (0, "Dead", [])


def test_consumer_group_describe_answers_classic_groups_with_group_id_not_found():
    c, _ = stable_group(1, group_id="classic")
    consumer_heartbeat(c, 0, "m0", group_id="modern")
    request = ConsumerGroupDescribeRequest(
        group_ids=["modern", "classic", "none"], include_authorized_operations=True
    )
    modern, classic, none = c.consumer_group_describe(ctx(0), request, TOPICS).groups
    assert (modern.error_code, modern.group_state, len(modern.members)) == (0, "Stable", 1)
    assert modern.members[0].assignment.topic_partitions[0].topic_name == "t"
    assert modern.authorized_operations > 0
    assert classic.error_code == ErrorCode.GROUP_ID_NOT_FOUND
    assert classic.error_message == "Group classic is not a consumer group."
    assert none.error_code == ErrorCode.GROUP_ID_NOT_FOUND


def test_delete_groups_refuses_a_consumer_group_with_members_and_deletes_an_empty_one():
    c, _ = consumer_group(1)
    _, outcome = commit(c, 0, {("t", 0): 5}, member_id="m0", generation_id=1)
    c.on_appended(outcome, 0)
    token, outcome = delete_groups(c, 0, GROUP)
    assert reply(outcome, token).results[0].error_code == ErrorCode.NON_EMPTY_GROUP
    consumer_heartbeat(c, 1, "m0", -1)
    token, outcome = delete_groups(c, 2, GROUP)
    assert reply(outcome, token).results[0].error_code == ErrorCode.NONE
    c.on_appended(outcome, 2)
    assert c.group_type(GROUP) is None
    assert fetch(c, {"t": [0]})[("t", 0)][0] == -1
    assert all(r.value_bytes() is None for r in outcome.records)


# --- timers, replay, failed writes --------------------------------------------------------


def test_a_silent_member_is_fenced_when_its_session_times_out():
    c, _ = consumer_group(1)
    assert c.next_deadline_ms() == SESSION_MS
    assert not c.expire(SESSION_MS - 1, WALL).records
    outcome = c.expire(SESSION_MS, WALL + SESSION_MS)
    assert outcome.records, "the member's tombstones"
    assert listed(c)[GROUP][1] == "Empty"
    assert raised(consumer_heartbeat, c, SESSION_MS, "m0", 1) == ErrorCode.UNKNOWN_MEMBER_ID


def test_replay_rebuilds_consumer_groups_beside_classic_ones():
    c, outcomes = consumer_group(2)
    _, outcome = consumer_heartbeat(c, 5, "m0", 1, owned=[0, 1, 2])
    outcomes.append(outcome)
    _, commit_outcome = commit(c, 6, {("t", 0): 5}, member_id="m0", generation_id=1)
    outcomes.append(commit_outcome)
    c.on_appended(commit_outcome, 6)
    loaded = replayed(outcomes, now_ms=100)
    assert vars(loaded.consumer.groups[GROUP]) == vars(c.consumer.groups[GROUP])
    assert fetch(loaded, {"t": [0]})[("t", 0)][0] == 5
    assert listed(loaded) == listed(c)
    loaded.expire(100, WALL + 100)  # the first retention check, due at once
    # m0 still has partitions to give m1: its rebalance timeout runs from the load.
    assert loaded.next_deadline_ms() == 100 + 30_000


def test_a_heartbeat_whose_records_are_not_written_gets_the_error():
    c = coordinator()
    _, outcome = consumer_heartbeat(c, 0, "m0")
    failed = c.on_append_failed(outcome, ErrorCode.KAFKA_STORAGE_ERROR, 0)
    (response,) = [r.response for r in failed.replies]
    assert response.error_code != ErrorCode.NONE


def test_the_consumer_group_settings_reach_the_consumer_coordinator():
    from coordinator.config import CoordinatorConfig

    config = ConsumerGroupConfig(session_timeout_ms=3000, heartbeat_interval_ms=100)
    c = GroupCoordinator(CoordinatorConfig(), config)
    response, _ = consumer_heartbeat(c, 0, "m0")
    assert response.heartbeat_interval_ms == 100
    assert c.next_deadline_ms() == 3000


def test_groups_by_state_counts_each_type_apart():
    c, _ = stable_group(1, group_id="classic")
    consumer_heartbeat(c, 0, "m0", group_id="modern")
    _, outcome = commit(c, 0, {("t", 0): 1}, member_id="m0", generation_id=1, group_id="modern")
    c.on_appended(outcome, 0)  # the consumer group's offsets-only Group is not counted
    counts = {k: n for k, n in c.groups_by_state().items() if n}
    assert counts == {("classic", "Stable"): 1, ("consumer", "Stable"): 1}


def test_offset_delete_refuses_the_topics_a_consumer_group_subscribes_to():
    from protocol.messages.offset_delete import (
        OffsetDeleteRequest,
        OffsetDeleteRequestPartition,
        OffsetDeleteRequestTopic,
    )

    c, _ = consumer_group(1)
    _, outcome = commit(c, 0, {("t", 0): 5, ("old", 0): 9}, member_id="m0", generation_id=1)
    c.on_appended(outcome, 0)
    token = next_token()
    request = OffsetDeleteRequest(
        group_id=GROUP,
        topics=[
            OffsetDeleteRequestTopic(
                name=name, partitions=[OffsetDeleteRequestPartition(partition_index=0)]
            )
            for name in ("t", "old")
        ],
    )
    outcome = c.delete_offsets(ctx(0), request, token, 0)
    codes = {t.name: t.partitions[0].error_code for t in reply(outcome, token).topics}
    assert codes == {"t": ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, "old": ErrorCode.NONE}
    c.on_appended(outcome, 0)
    assert fetch(c, {"t": [0], "old": [0]}) == {
        ("t", 0): (5, "", ErrorCode.NONE),
        ("old", 0): (-1, "", ErrorCode.NONE),
    }


def test_an_empty_consumer_group_without_offsets_goes_at_the_retention_check():
    c, outcomes = consumer_group(1)
    _, outcome = commit(c, 0, {("old", 0): 9}, member_id="m0", generation_id=1)
    c.on_appended(outcome, 0)
    outcomes.append(outcome)
    outcomes.append(consumer_heartbeat(c, 1, "m0", -1)[1])  # the last member leaves
    assert replayed(outcomes).group_type(GROUP) == "consumer"
    c.finish_load(2)  # schedules the retention check, due at once
    kept = c.expire(2, WALL + 2)
    assert c.group_type(GROUP) == "consumer", "it still has an offset"
    assert GROUP not in kept.dead_groups
    week_ms = 7 * 24 * 3_600_000
    check_ms = 2 + 600_000
    expired = c.expire(check_ms, WALL + week_ms)
    c.on_appended(expired, check_ms)
    assert GROUP in expired.dead_groups
    assert c.group_type(GROUP) is None
    assert replayed([*outcomes, expired]).group_type(GROUP) is None
