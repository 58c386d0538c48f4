"""OffsetCommit, OffsetFetch and offset retention."""

from __future__ import annotations

import pytest

from coordinator.classic.group import OffsetAndMetadata
from coordinator.classic.state import GroupState
from coordinator.offsets import CommittedOffset
from protocol.errors import ErrorCode
from tests.coordinator.builders import (
    GROUP,
    WALL,
    as_record,
    commit,
    commit_errors,
    coordinator,
    ctx,
    delete_groups,
    fetch,
    fetch_groups,
    join,
    joined_group,
    leave,
    new_member_id,
    raised,
    reload,
    reply,
    stable_group,
    subscription,
)

E = ErrorCode
DAY_MS = 24 * 3600 * 1000
RETENTION_MS = 7 * DAY_MS  # offsets.retention.minutes default


def test_member_commit_is_written_first_and_applied_once_durable() -> None:
    c, ids = stable_group(2)
    token, outcome = commit(
        c,
        100,
        {("t", 0): 42, ("t", 1): 7},
        member_id=ids[0],
        generation_id=1,
        metadata="m",
        leader_epoch=3,
    )
    assert commit_errors(outcome, token) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    assert [(r.key.topic, r.key.partition, r.value.offset) for r in outcome.records] == [
        ("t", 0, 42),
        ("t", 1, 7),
    ]
    record = outcome.records[0]
    assert (record.key.group, record.value_version) == (GROUP, 3)
    assert (record.value.metadata, record.value.leader_epoch) == ("m", 3)
    assert record.value.commit_timestamp == WALL + 100
    assert fetch(c, {"t": [0]}) == {("t", 0): (-1, "", E.NONE)}  # not durable yet
    c.on_appended(outcome, 101)
    assert fetch(c, {"t": [0, 1, 2]}) == {
        ("t", 0): (42, "m", E.NONE),
        ("t", 1): (7, "m", E.NONE),
        ("t", 2): (-1, "", E.NONE),
    }


def test_a_commit_in_flight_is_pending_and_fetches_show_the_durable_offset() -> None:
    # Kafka 4.x: no UNSTABLE_OFFSET_COMMIT for plain commits; a require_stable fetch waits
    # for them (the runtime waits on has_pending_commits) and then sees the new offset.
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    _, outcome = commit(c, 1, {("t", 0): 2})
    assert c.has_pending_commits([GROUP])
    assert not c.has_pending_commits(["other"])
    assert fetch(c, {"t": [0]}, require_stable=True) == {("t", 0): (1, "", E.NONE)}
    c.on_appended(outcome, 2)
    assert not c.has_pending_commits([GROUP])
    assert fetch(c, {"t": [0]}, require_stable=True) == {("t", 0): (2, "", E.NONE)}


def test_commits_apply_in_log_order_so_the_later_record_wins() -> None:
    c = coordinator()
    _, first = commit(c, 0, {("t", 0): 1})
    _, second = commit(c, 1, {("t", 0): 2})
    c.on_appended(first, 2)
    assert c.has_pending_commits([GROUP])
    assert fetch(c, {"t": [0]}) == {("t", 0): (1, "", E.NONE)}
    c.on_appended(second, 3)
    assert fetch(c, {"t": [0]}, require_stable=True) == {("t", 0): (2, "", E.NONE)}


def test_standalone_commit_creates_an_empty_group_without_protocol_type() -> None:
    c = coordinator()
    token, outcome = commit(c, 0, {("t", 0): 5}, metadata=None)
    assert commit_errors(outcome, token) == {("t", 0): E.NONE}
    assert outcome.records[0].value.metadata == ""
    group = c.group(GROUP)
    assert (group.state, group.protocol_type, group.generation_id) == (GroupState.EMPTY, None, 0)


def test_standalone_commit_to_an_emptied_consumer_group_is_accepted() -> None:
    c, ids = stable_group(1)
    leave(c, 1, (ids[0], None))
    assert c.group(GROUP).state is GroupState.EMPTY
    token, outcome = commit(c, 2, {("t", 0): 5})
    assert commit_errors(outcome, token) == {("t", 0): E.NONE}


def test_commit_without_member_id_to_a_group_with_members_returns_unknown_member_id() -> None:
    c, _ = stable_group(1)
    assert raised(commit, c, 1, {("t", 0): 5}) == E.UNKNOWN_MEMBER_ID


@pytest.mark.parametrize(
    ("version", "error"), [(8, E.ILLEGAL_GENERATION), (9, E.GROUP_ID_NOT_FOUND)]
)
def test_commit_with_generation_to_an_unknown_group(version: int, error: ErrorCode) -> None:
    c = coordinator()
    assert raised(commit, c, 0, {("t", 0): 5}, member_id="m", generation_id=1, version=version) == (
        error
    )
    assert c.group(GROUP) is None


@pytest.mark.parametrize(
    ("member", "generation_id", "instance_id", "error"),
    [
        ("stranger", 1, None, E.UNKNOWN_MEMBER_ID),
        (0, 2, None, E.ILLEGAL_GENERATION),
        (0, -1, None, E.ILLEGAL_GENERATION),
        (0, 1, "instance-9", E.UNKNOWN_MEMBER_ID),
    ],
)
def test_member_commit_refused_as_a_whole(
    member: int | str, generation_id: int, instance_id: str | None, error: ErrorCode
) -> None:
    c, ids = stable_group(1)
    member_id = ids[member] if isinstance(member, int) else member
    assert (
        raised(
            commit,
            c,
            1,
            {("t", 0): 5},
            member_id=member_id,
            generation_id=generation_id,
            instance_id=instance_id,
        )
        == error
    )


def test_commit_by_a_fenced_static_member_returns_fenced_instance_id() -> None:
    c, ids = stable_group(2, static=True)
    assert (
        raised(
            commit, c, 1, {("t", 0): 5}, member_id=ids[0], generation_id=1, instance_id="instance-1"
        )
        == E.FENCED_INSTANCE_ID
    )


def test_commit_during_completing_rebalance_returns_rebalance_in_progress() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    assert raised(commit, c, 1, {("t", 0): 5}, member_id=ids[0], generation_id=1) == (
        E.REBALANCE_IN_PROGRESS
    )


def test_commit_during_preparing_rebalance_is_accepted() -> None:
    c, ids = stable_group(2)
    join(c, 1, ids[0])
    token, outcome = commit(c, 2, {("t", 0): 5}, member_id=ids[1], generation_id=1)
    assert commit_errors(outcome, token) == {("t", 0): E.NONE}


def test_commit_to_a_dead_group_returns_coordinator_not_available() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    delete_groups(c, 1, GROUP)
    assert raised(commit, c, 2, {("t", 0): 5}) == E.COORDINATOR_NOT_AVAILABLE


def test_metadata_longer_than_the_limit_fails_that_partition_only() -> None:
    c = coordinator(offset_metadata_max_bytes=4)
    token, outcome = commit(c, 0, {("t", 0): 1}, metadata="abcd")
    assert commit_errors(outcome, token) == {("t", 0): E.NONE}
    # Java's String.length counts UTF-16 units: one emoji is two.
    token, outcome = commit(c, 0, {("t", 0): 1, ("u", 0): 2}, metadata="abc\U0001f600")
    assert commit_errors(outcome, token) == {
        ("t", 0): E.OFFSET_METADATA_TOO_LARGE,
        ("u", 0): E.OFFSET_METADATA_TOO_LARGE,
    }
    assert outcome.records == ()


def test_commit_v2_with_a_retention_time_writes_an_expire_timestamp_in_value_v1() -> None:
    c = coordinator()
    _, outcome = commit(c, 100, {("t", 0): 1}, retention_time_ms=5_000, version=2)
    (record,) = outcome.records
    assert (record.value_version, record.value.expire_timestamp) == (1, WALL + 100 + 5_000)
    _, outcome = commit(c, 100, {("t", 0): 1}, retention_time_ms=5_000, version=5)
    assert (outcome.records[0].value_version, outcome.records[0].value.expire_timestamp) == (3, -1)


def test_commit_v1_may_name_its_commit_time() -> None:
    c = coordinator()
    _, outcome = commit(c, 5, {("t", 0): 1}, commit_timestamp=WALL - 1_000, version=1)
    assert outcome.records[0].value.commit_timestamp == WALL - 1_000
    _, outcome = commit(c, 5, {("t", 0): 1}, version=1)
    assert outcome.records[0].value.commit_timestamp == WALL + 5
    # Later versions have no such field; whatever the dataclass holds is not used.
    _, outcome = commit(c, 5, {("t", 0): 1}, commit_timestamp=WALL - 1_000, version=2)
    assert outcome.records[0].value.commit_timestamp == WALL + 5


@pytest.mark.parametrize(
    ("storage_error", "answer"),
    [
        (E.KAFKA_STORAGE_ERROR, E.KAFKA_STORAGE_ERROR),  # Kafka: NOT_COORDINATOR
        (E.NOT_ENOUGH_REPLICAS_AFTER_APPEND, E.COORDINATOR_NOT_AVAILABLE),
        (E.RECORD_LIST_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE),
    ],
)
def test_failed_commit_write_fails_every_written_partition(
    storage_error: ErrorCode, answer: ErrorCode
) -> None:
    c = coordinator(offset_metadata_max_bytes=1)
    token, outcome = commit(c, 0, {("t", 0): 1})
    big_token, big = commit(c, 0, {("t", 1): 1, ("t", 2): 2}, metadata="too long")
    failed = c.on_append_failed(outcome, storage_error, 1)
    assert commit_errors(failed, token) == {("t", 0): answer}
    assert fetch(c, {"t": [0]}, require_stable=True) == {("t", 0): (-1, "", E.NONE)}
    assert commit_errors(big, big_token) == {
        ("t", 1): E.OFFSET_METADATA_TOO_LARGE,
        ("t", 2): E.OFFSET_METADATA_TOO_LARGE,
    }


def test_failed_write_of_an_empty_generation_keeps_the_replies() -> None:
    c, ids = stable_group(1)
    _token, outcome = leave(c, 1, (ids[0], None))  # the group is Empty: its record is written
    assert len(outcome.records) == 1
    # Kafka only warns when that write fails: the LeaveGroup answer stands.
    assert c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 2).replies == outcome.replies
    assert c.group(GROUP).state is GroupState.EMPTY


def test_fetch_of_all_topics_returns_every_committed_partition_in_order() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("u", 1): 3, ("t", 2): 2, ("t", 0): 1})[1], 0)
    assert list(fetch(c, None)) == [("t", 0), ("t", 2), ("u", 1)]
    assert fetch(c, None, group_id="unknown") == {}


def test_fetch_of_an_unknown_group_returns_no_offsets() -> None:
    c = coordinator()
    assert fetch(c, {"t": [0]}, group_id="unknown", version=1) == {("t", 0): (-1, "", E.NONE)}


def test_fetch_v8_answers_many_groups() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1}, group_id="a")[1], 0)
    c.on_appended(commit(c, 0, {("t", 0): 2}, group_id="b")[1], 0)
    _, _pending = commit(c, 1, {("t", 1): 3}, group_id="b")
    assert fetch_groups(c, {"a": {"t": [0]}, "b": None, "c": {"t": [0]}}, require_stable=True) == {
        "a": {("t", 0): (1, "", E.NONE)},
        "b": {("t", 0): (2, "", E.NONE)},
        "c": {("t", 0): (-1, "", E.NONE)},
    }
    assert fetch_groups(c, {"b": {"t": [1]}}, require_stable=True) == {
        "b": {("t", 1): (-1, "", E.NONE)},
    }


# --- retention -------------------------------------------------------------------------------


def test_standalone_offsets_expire_from_their_commit_time() -> None:
    c = coordinator()
    c.finish_load(0)
    c.expire(0, WALL)  # the first retention check is due at once
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    c.on_appended(commit(c, DAY_MS, {("t", 1): 1})[1], DAY_MS)
    outcome = c.expire(RETENTION_MS, WALL + RETENTION_MS)
    assert [(r.key.topic, r.key.partition, r.value) for r in outcome.records] == [("t", 0, None)]
    assert list(c.group(GROUP).offsets) == [("t", 1)]
    assert c.next_deadline_ms() == RETENTION_MS + 600_000


def test_empty_group_offsets_expire_from_the_time_it_became_empty() -> None:
    c = coordinator()
    c.finish_load(0)
    c, ids = stable_group(1, c=c)
    c.on_appended(commit(c, 0, {("t", 0): 1}, member_id=ids[0], generation_id=1)[1], 0)
    _, outcome = leave(c, DAY_MS, (ids[0], None))
    (record,) = outcome.records  # the empty generation, with the time it became Empty
    assert record.value.current_state_timestamp == WALL + DAY_MS
    assert c.expire(RETENTION_MS, WALL + RETENTION_MS).records == ()
    outcome = c.expire(DAY_MS + RETENTION_MS, WALL + DAY_MS + RETENTION_MS)
    # No offsets left in an Empty group: it is Dead, and its record goes too.
    assert [(type(r.key).__name__, r.value) for r in outcome.records] == [
        ("OffsetCommitKey", None),
        ("GroupMetadataKey", None),
    ]
    assert outcome.dead_groups == (GROUP,)
    assert c.group(GROUP).state is GroupState.DEAD
    c.on_appended(outcome, 0)
    assert c.group(GROUP) is None


# Groups with members live through a retention period only with heartbeats; these tests
# shorten the retention to a minute instead.
SHORT = {"offsets_retention_minutes": 1, "offsets_retention_check_interval_ms": 1_000}
ALIVE = {"session_timeout_ms": 120_000, "rebalance_timeout_ms": 300_000}


def test_stable_consumer_group_loses_only_offsets_of_topics_it_no_longer_subscribes_to() -> None:
    c = coordinator(**SHORT)
    c.finish_load(0)
    c, ids = stable_group(1, c=c, **ALIVE)  # subscribes to "t"
    offsets = {("t", 0): 1, ("old", 0): 2}
    c.on_appended(commit(c, 0, offsets, member_id=ids[0], generation_id=1)[1], 0)
    outcome = c.expire(60_000, WALL + 60_000)
    assert [(r.key.topic, r.value) for r in outcome.records] == [("old", None)]
    assert list(c.group(GROUP).offsets) == [("t", 0)]


def test_stable_group_of_another_protocol_type_keeps_its_offsets() -> None:
    c = coordinator(**SHORT)
    c.finish_load(0)
    protocols = (("sessioned", b""),)
    c, ids = stable_group(1, c=c, protocol_type="connect", protocols=protocols, **ALIVE)
    c.on_appended(commit(c, 0, {("old", 0): 1}, member_id=ids[0], generation_id=1)[1], 0)
    assert c.expire(60_000, WALL + 60_000).records == ()


def test_rebalancing_consumer_group_keeps_its_offsets() -> None:
    c = coordinator(**SHORT)
    c.finish_load(0)
    c, ids = stable_group(2, c=c, **ALIVE)
    c.on_appended(commit(c, 0, {("old", 0): 1}, member_id=ids[0], generation_id=1)[1], 0)
    join(c, 1, ids[0])
    assert c.expire(60_000, WALL + 60_000).records == ()
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE


def test_consumer_group_with_unreadable_subscriptions_keeps_its_offsets() -> None:
    c = coordinator(**SHORT)
    c.finish_load(0)
    c, ids = stable_group(1, c=c, protocols=(("range", b"\x00\x00garbage"),), **ALIVE)
    assert c.group(GROUP).subscribed_topics is None
    c.on_appended(commit(c, 0, {("old", 0): 1}, member_id=ids[0], generation_id=1)[1], 0)
    assert c.expire(60_000, WALL + 60_000).records == ()


def test_offset_with_its_own_expire_timestamp_expires_then() -> None:
    c = coordinator()
    c.finish_load(0)
    c.on_appended(commit(c, 0, {("t", 0): 1}, retention_time_ms=1_000, version=2)[1], 0)
    c.on_appended(commit(c, 0, {("t", 1): 1})[1], 0)
    outcome = c.expire(600_000, WALL + 600_000)
    assert [(r.key.partition, r.value) for r in outcome.records] == [(0, None)]


def test_offset_with_a_commit_in_flight_does_not_expire() -> None:
    c = coordinator()
    c.finish_load(0)
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    _, pending = commit(c, RETENTION_MS - 1, {("t", 0): 2})
    assert c.expire(RETENTION_MS, WALL + RETENTION_MS).records == ()
    c.on_appended(pending, RETENTION_MS)
    assert c.group(GROUP).offsets[("t", 0)].offset == 2


def test_empty_group_without_offsets_is_dead_at_the_next_check() -> None:
    c = coordinator()
    c.finish_load(0)
    new_member_id(c, 0)  # creates the group (generation 0): nothing to write
    outcome = c.expire(0, WALL)
    assert outcome.records == ()
    assert c.group(GROUP) is None


def test_group_state_time_is_written_as_unknown_before_a_wall_clock_was_seen() -> None:
    c, ids = stable_group(1)
    c = reload([as_record(c)])  # a coordinator that has not seen the wall clock yet
    _, outcome = leave(c, 5, (ids[0], None))
    assert outcome.records[0].value.current_state_timestamp == -1


def test_empty_group_of_unknown_empty_time_expires_offsets_from_their_commit_time() -> None:
    c, ids = stable_group(1)
    records = [as_record(c)]
    c = reload(records)
    _, emptied = leave(c, 5, (ids[0], None))  # written with current_state_timestamp -1
    _, committed = commit(c, 6, {("t", 0): 1})
    c = reload([*records, *emptied.records, *committed.records])
    assert c.group(GROUP).logged_state_wall_ms is None
    assert c.expire(0, WALL + 6 + RETENTION_MS - 1).records == ()
    c.expire(600_000, WALL + 6 + RETENTION_MS)
    assert c.group(GROUP).state is GroupState.DEAD


def test_offsets_kept_in_memory_match_what_commit_wrote() -> None:
    c = coordinator()
    c.on_appended(commit(c, 7, {("t", 0): 1}, metadata="x", leader_epoch=2)[1], 7)
    assert c.group(GROUP).offsets == {
        ("t", 0): OffsetAndMetadata(1, 2, "x", WALL + 7, None),
    }


def test_subscribed_topics_come_from_every_members_subscription() -> None:
    c = coordinator()
    a = new_member_id(c, 0)
    join(c, 0, a, protocols=(("range", subscription("t", "u")),))
    b = new_member_id(c, 0)
    join(c, 0, b, protocols=(("range", subscription("v")),))
    c.expire(0, WALL)
    assert c.group(GROUP).subscribed_topics == {"t", "u", "v"}


def test_committed_offsets_lists_durable_offsets_of_live_groups_only() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 1): 7, ("t", 0): 5})[1], 0)
    c.on_appended(commit(c, 0, {("u", 0): 3}, group_id="other")[1], 0)
    commit(c, 1, {("t", 2): 9})  # not durable yet
    assert c.committed_offsets() == [
        CommittedOffset(GROUP, "t", 0, 5),
        CommittedOffset(GROUP, "t", 1, 7),
        CommittedOffset("other", "u", 0, 3),
    ]
    delete_groups(c, 2, "other")  # Dead until its tombstones are written
    assert [o.group_id for o in c.committed_offsets()] == [GROUP, GROUP]


def test_a_one_partition_commit_shares_one_answer_equal_to_the_general_one() -> None:
    from coordinator.offsets import _answer_topics
    from protocol.messages.offset_commit import (
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
        OffsetCommitResponse,
    )

    c = coordinator(offset_metadata_max_bytes=2)
    token, outcome = commit(c, 0, {("t", 4): 1})
    again_token, again = commit(c, 1, {("t", 4): 2})
    answer = reply(outcome, token)
    assert reply(again, again_token) is answer  # one object per partition
    request_topic = OffsetCommitRequestTopic(
        name="t",
        partitions=[OffsetCommitRequestPartition(partition_index=4, committed_offset=1)],
    )
    assert answer == OffsetCommitResponse(topics=_answer_topics([request_topic], None))
    # Not that object: another partition, two partitions, a partition refused.
    token, outcome = commit(c, 2, {("t", 5): 1})
    assert reply(outcome, token) is not answer
    assert commit_errors(outcome, token) == {("t", 5): E.NONE}
    token, outcome = commit(c, 2, {("t", 4): 1, ("u", 4): 1})
    assert reply(outcome, token) is not answer
    assert commit_errors(outcome, token) == {("t", 4): E.NONE, ("u", 4): E.NONE}
    token, outcome = commit(c, 2, {("t", 4): 1}, metadata="long")
    assert commit_errors(outcome, token) == {("t", 4): E.OFFSET_METADATA_TOO_LARGE}
    assert outcome.records == ()


def test_a_partition_named_twice_is_answered_per_entry() -> None:
    from protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    c = coordinator(offset_metadata_max_bytes=2)
    entries = [
        OffsetCommitRequestPartition(partition_index=0, committed_offset=1, committed_metadata=m)
        for m in ("long", "ok")
    ]
    request = OffsetCommitRequest(
        group_id=GROUP,
        generation_id_or_member_epoch=-1,
        member_id="",
        topics=[OffsetCommitRequestTopic(name="t", partitions=entries)],
    )
    outcome = c.commit_offsets(ctx(9), request, 77, 0, WALL)
    codes = [p.error_code for p in reply(outcome, 77).topics[0].partitions]
    assert codes == [E.OFFSET_METADATA_TOO_LARGE, E.NONE]
    assert [r.value.metadata for r in outcome.records] == ["ok"]
