"""DeleteGroups and OffsetDelete: tombstones, and a Dead group until they are written."""

from __future__ import annotations

from coordinator.classic.state import GroupState
from coordinator.coordinator import GroupCoordinator
from coordinator.outcome import Outcome
from protocol.errors import ErrorCode
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
)
from tests.coordinator.builders import (
    GROUP,
    WALL,
    commit,
    coordinator,
    ctx,
    delete_groups,
    fetch,
    join,
    joined_group,
    leave,
    new_member_id,
    next_token,
    raised,
    reply,
    stable_group,
    subscription,
)

E = ErrorCode


def delete_offsets(
    c: GroupCoordinator, now_ms: int, partitions: dict[str, list[int]], group_id: str = GROUP
) -> tuple[int, Outcome]:
    token = next_token()
    request = OffsetDeleteRequest(
        group_id=group_id,
        topics=[
            OffsetDeleteRequestTopic(
                name=t, partitions=[OffsetDeleteRequestPartition(partition_index=p) for p in ps]
            )
            for t, ps in partitions.items()
        ],
    )
    return token, c.delete_offsets(ctx(0), request, token, now_ms)


def results(outcome: Outcome, token: int) -> dict[str, ErrorCode]:
    return {r.group_id: ErrorCode(r.error_code) for r in reply(outcome, token).results}


def offset_errors(outcome: Outcome, token: int) -> dict[tuple[str, int], ErrorCode]:
    response = reply(outcome, token)
    assert response.error_code == E.NONE
    return {
        (t.name, p.partition_index): ErrorCode(p.error_code)
        for t in response.topics
        for p in t.partitions
    }


def emptied_group(c: GroupCoordinator, group_id: str = GROUP) -> None:
    """A consumer group with offsets whose last member left (generation 2, Empty)."""
    c, ids = stable_group(1, c=c, group_id=group_id)
    c.on_appended(
        commit(
            c, 0, {("t", 0): 1, ("t", 1): 2}, member_id=ids[0], generation_id=1, group_id=group_id
        )[1],
        0,
    )
    _, outcome = leave(c, 1, (ids[0], None), group_id=group_id)
    c.on_appended(outcome, 1)


def test_delete_of_an_empty_group_writes_tombstones_and_forgets_it_once_durable() -> None:
    c = coordinator()
    emptied_group(c)
    token, outcome = delete_groups(c, 2, GROUP)
    assert results(outcome, token) == {GROUP: E.NONE}
    assert [
        (type(r.key).__name__, getattr(r.key, "partition", None), r.value) for r in outcome.records
    ] == [
        ("OffsetCommitKey", 0, None),
        ("OffsetCommitKey", 1, None),
        ("GroupMetadataKey", None, None),
    ]
    assert all(r.group_id == GROUP and r.value_bytes() is None for r in outcome.records)
    assert c.group(GROUP).state is GroupState.DEAD
    assert c.group_ids() == []
    c.on_appended(outcome, 3)
    assert c.group(GROUP) is None
    assert fetch(c, {"t": [0]}) == {("t", 0): (-1, "", E.NONE)}


def test_delete_of_a_group_that_only_stored_offsets_writes_no_group_tombstone() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    _, outcome = delete_groups(c, 1, GROUP)
    assert [type(r.key).__name__ for r in outcome.records] == ["OffsetCommitKey"]


def test_delete_of_a_group_with_nothing_to_write_is_immediate() -> None:
    c = coordinator()
    new_member_id(c, 0)  # an Empty group at generation 0, without offsets
    token, outcome = delete_groups(c, 1, GROUP)
    assert results(outcome, token) == {GROUP: E.NONE}
    assert outcome.records == ()
    assert c.group(GROUP) is None


def test_delete_of_groups_with_members_returns_non_empty_group() -> None:
    c, _ = stable_group(1, group_id="stable")
    joined_group(c, 1, group_id="completing")
    stable_group(2, c=c, group_id="preparing")
    join(c, 1, c.group("preparing").leader_id, group_id="preparing")
    token, outcome = delete_groups(c, 2, "stable", "completing", "preparing")
    assert results(outcome, token) == dict.fromkeys(
        ["stable", "completing", "preparing"], E.NON_EMPTY_GROUP
    )
    assert outcome.records == ()


def test_delete_of_unknown_or_dead_groups_returns_group_id_not_found() -> None:
    c = coordinator()
    emptied_group(c)
    token, outcome = delete_groups(c, 2, GROUP, GROUP, "unknown")
    assert results(outcome, token) == {GROUP: E.NONE, "unknown": E.GROUP_ID_NOT_FOUND}
    assert len(reply(outcome, token).results) == 2  # one result per group named
    token, again = delete_groups(c, 3, GROUP)  # Dead, its tombstones not written yet
    assert results(again, token) == {GROUP: E.GROUP_ID_NOT_FOUND}
    assert (outcome.dead_groups, again.dead_groups) == ((GROUP,), ())


def test_failed_tombstone_write_fails_the_delete_but_the_group_stays_deleted() -> None:
    c = coordinator()
    emptied_group(c)
    token, outcome = delete_groups(c, 2, GROUP, "unknown")
    failed = c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 3)
    assert results(failed, token) == {GROUP: E.NOT_COORDINATOR, "unknown": E.GROUP_ID_NOT_FOUND}
    assert c.group(GROUP) is None


def test_commit_in_flight_when_its_group_is_deleted_does_not_come_back() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    _, in_flight = commit(c, 1, {("t", 5): 2})
    _, deleted = delete_groups(c, 2, GROUP)
    # The deletion covers the partition whose commit is still on its way.
    assert sorted(r.key.partition for r in deleted.records) == [0, 5]
    c.on_appended(in_flight, 3)
    c.on_appended(deleted, 4)
    assert c.group(GROUP) is None
    # A new group of the same name starts afresh.
    c.on_appended(commit(c, 5, {("t", 0): 9})[1], 5)
    assert fetch(c, {"t": [0, 5]}) == {("t", 0): (9, "", E.NONE), ("t", 5): (-1, "", E.NONE)}


def test_failed_write_of_a_cancelled_commit_still_fails_its_reply() -> None:
    c = coordinator()
    token, in_flight = commit(c, 1, {("t", 0): 2})
    delete_groups(c, 2, GROUP)
    failed = c.on_append_failed(in_flight, E.KAFKA_STORAGE_ERROR, 3)
    assert reply(failed, token).topics[0].partitions[0].error_code == E.KAFKA_STORAGE_ERROR


# --- OffsetDelete ----------------------------------------------------------------------------


def test_offset_delete_of_an_empty_group_writes_tombstones() -> None:
    c = coordinator()
    emptied_group(c)
    c.on_appended(commit(c, 2, {("u", 0): 3})[1], 2)
    token, outcome = delete_offsets(c, 3, {"t": [0, 7], "u": [0]})
    assert offset_errors(outcome, token) == {("t", 0): E.NONE, ("t", 7): E.NONE, ("u", 0): E.NONE}
    assert [(r.key.topic, r.key.partition, r.value) for r in outcome.records] == [
        ("t", 0, None),
        ("u", 0, None),
    ]
    c.on_appended(outcome, 4)
    assert list(c.group(GROUP).offsets) == [("t", 1)]
    assert c.group(GROUP).state is GroupState.EMPTY


def test_offset_delete_of_the_last_offsets_of_an_empty_group_deletes_it() -> None:
    c = coordinator()
    emptied_group(c)
    token, outcome = delete_offsets(c, 3, {"t": [0, 1]})
    assert [type(r.key).__name__ for r in outcome.records] == [
        "OffsetCommitKey",
        "OffsetCommitKey",
        "GroupMetadataKey",
    ]
    assert c.group(GROUP).state is GroupState.DEAD
    failed = c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 4)
    assert reply(failed, token).error_code == E.NOT_COORDINATOR
    assert reply(failed, token).topics == []
    assert c.group(GROUP) is None


def test_offset_delete_of_a_consumer_group_spares_the_topics_it_subscribes_to() -> None:
    c, ids = stable_group(1)  # subscribes to "t"
    offsets = {("t", 0): 1, ("old", 0): 2}
    c.on_appended(commit(c, 0, offsets, member_id=ids[0], generation_id=1)[1], 0)
    token, outcome = delete_offsets(c, 1, {"t": [0], "old": [0]})
    assert offset_errors(outcome, token) == {
        ("t", 0): E.GROUP_SUBSCRIBED_TO_TOPIC,
        ("old", 0): E.NONE,
    }
    assert [r.key.topic for r in outcome.records] == ["old"]
    c.on_appended(outcome, 2)
    assert list(c.group(GROUP).offsets) == [("t", 0)]


def test_offset_delete_cancels_a_commit_in_flight_for_that_partition() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1, ("t", 1): 1})[1], 0)
    _, in_flight = commit(c, 1, {("t", 0): 2})
    _, outcome = delete_offsets(c, 2, {"t": [0]})
    c.on_appended(in_flight, 3)
    c.on_appended(outcome, 4)
    assert fetch(c, {"t": [0]}, require_stable=True) == {("t", 0): (-1, "", E.NONE)}


def test_offset_delete_refused_as_a_whole() -> None:
    c, _ = stable_group(1, protocol_type="connect", protocols=(("s", b""),), group_id="connect")
    assert raised(delete_offsets, c, 1, {"t": [0]}, group_id="connect") == E.NON_EMPTY_GROUP
    assert raised(delete_offsets, c, 1, {"t": [0]}, group_id="unknown") == E.GROUP_ID_NOT_FOUND
    assert raised(delete_offsets, c, 1, {"t": [0]}, group_id="") == E.INVALID_GROUP_ID
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    delete_groups(c, 2, GROUP)
    assert raised(delete_offsets, c, 3, {"t": [0]}) == E.GROUP_ID_NOT_FOUND


def test_offset_delete_of_a_consumer_group_needs_no_subscription_for_other_topics() -> None:
    c, _ids = stable_group(1, protocols=(("range", subscription("t")),))
    token, outcome = delete_offsets(c, 1, {"never-committed": [0]})
    assert offset_errors(outcome, token) == {("never-committed", 0): E.NONE}
    assert outcome.records == ()


def test_retention_check_passes_over_a_group_whose_tombstones_are_on_their_way() -> None:
    c = coordinator()
    c.finish_load(0)
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    delete_groups(c, 1, GROUP)
    assert c.expire(1, WALL + 8 * 24 * 3600 * 1000).records == ()
    assert c.group(GROUP).state is GroupState.DEAD
