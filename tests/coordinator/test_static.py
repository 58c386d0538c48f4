"""Static members (group.instance.id): kept across restarts, old instances fenced."""

from __future__ import annotations

from coordinator.classic.state import GroupState
from protocol.errors import ErrorCode
from tests.coordinator.builders import (
    GROUP,
    WALL,
    coordinator,
    heartbeat,
    join,
    joined_group,
    leave,
    raised,
    reply,
    stable_group,
    subscription,
    sync,
)

E = ErrorCode
BOTH = (("range", subscription("t")), ("roundrobin", subscription("t")))


def test_static_member_joins_without_member_id_required() -> None:
    c = coordinator()
    token, outcome = join(c, 0, instance_id="instance-0", version=5)
    assert reply(outcome, token) is None
    response = reply(c.expire(0, WALL), token)
    assert response.error_code == E.NONE
    assert response.member_id.startswith("instance-0-")
    assert c.group(GROUP).static_members == {"instance-0": response.member_id}


def test_restarted_static_member_in_stable_group_keeps_its_assignment_without_rebalance() -> None:
    c, ids = stable_group(2, static=True)
    token, outcome = join(c, 100, instance_id="instance-1", version=8)
    response = reply(outcome, token)
    new_id = response.member_id
    assert response.error_code == E.NONE
    assert new_id.startswith("instance-1-")
    assert new_id != ids[1]
    assert (response.generation_id, response.leader, response.members) == (1, ids[0], [])
    group = c.group(GROUP)
    assert group.state is GroupState.STABLE
    assert group.generation_id == 1
    (record,) = outcome.records
    assert [(m.member_id, m.group_instance_id, m.assignment) for m in record.value.members] == [
        (ids[0], "instance-0", f"a-{ids[0]}".encode()),
        (new_id, "instance-1", f"a-{ids[1]}".encode()),
    ]
    c.on_appended(outcome, 100)
    sync_token, synced = sync(c, 101, new_id, 1, instance_id="instance-1")
    assert reply(synced, sync_token).assignment == f"a-{ids[1]}".encode()
    # The old instance, should it still run, is fenced.
    assert raised(heartbeat, c, 102, ids[1], 1, instance_id="instance-1") == E.FENCED_INSTANCE_ID
    assert raised(sync, c, 102, ids[1], 1, instance_id="instance-1") == E.FENCED_INSTANCE_ID


def test_restarted_static_leader_v9_learns_it_leads_but_skips_the_assignment() -> None:
    c, ids = stable_group(2, static=True)
    token, outcome = join(c, 100, instance_id="instance-0", version=9)
    response = reply(outcome, token)
    assert response.skip_assignment is True
    assert response.leader == response.member_id != ids[0]
    assert [m.member_id for m in response.members] == [ids[1], response.member_id]
    assert c.group(GROUP).leader_id == response.member_id


def test_restarted_static_leader_before_v9_is_sent_the_old_leader_id() -> None:
    c, ids = stable_group(2, static=True)
    token, outcome = join(c, 100, instance_id="instance-0", version=8)
    response = reply(outcome, token)
    assert (response.leader, response.skip_assignment, response.members) == (ids[0], False, [])
    assert c.group(GROUP).leader_id == response.member_id


def test_restarted_static_member_whose_protocols_change_the_selection_rebalances() -> None:
    c, _ids = stable_group(1, static=True, protocols=BOTH)
    assert c.group(GROUP).protocol_name == "range"
    token, outcome = join(c, 100, instance_id="instance-0", protocols=BOTH[::-1])
    assert outcome.records == ()
    response = reply(outcome, token)  # the only member has rejoined: the phase ends at once
    assert (response.generation_id, response.protocol_name) == (2, "roundrobin")


def test_restarted_static_member_during_completing_rebalance_restarts_the_rebalance() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2, static=True)
    old_sync, _ = sync(c, 1, ids[1], 1, instance_id="instance-1")
    token, outcome = join(c, 2, instance_id="instance-1")
    assert reply(outcome, old_sync).error_code == E.FENCED_INSTANCE_ID
    assert reply(outcome, token) is None
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE


def test_restarted_static_member_fences_the_parked_join_of_its_old_instance() -> None:
    c, ids = stable_group(3, static=True)
    join(c, 1, ids[0], instance_id="instance-0")  # the leader starts a rebalance
    old_token, _ = join(c, 2, ids[1], instance_id="instance-1")
    token, outcome = join(c, 3, instance_id="instance-1")  # instance-1 restarted meanwhile
    fenced = reply(outcome, old_token)
    assert (fenced.error_code, fenced.member_id) == (E.FENCED_INSTANCE_ID, ids[1])
    assert reply(outcome, token) is None
    _last_token, done = join(c, 4, ids[2], instance_id="instance-2")
    response = reply(done, token)
    assert response.generation_id == 2
    assert response.member_id == c.group(GROUP).static_members["instance-1"] != ids[1]


def test_request_naming_another_members_instance_id_is_fenced() -> None:
    c, ids = stable_group(2, static=True)
    assert raised(heartbeat, c, 1, ids[0], 1, instance_id="instance-1") == E.FENCED_INSTANCE_ID
    assert raised(heartbeat, c, 1, ids[0], 1, instance_id="nobody") == E.UNKNOWN_MEMBER_ID
    token, outcome = join(c, 1, ids[0], instance_id="instance-1")
    response = reply(outcome, token)
    assert (response.error_code, response.member_id) == (E.FENCED_INSTANCE_ID, ids[0])


def test_static_member_that_does_not_rejoin_keeps_its_place_at_the_rebalance_timeout() -> None:
    c, ids = stable_group(2, static=True, protocols=BOTH)
    token, _ = join(c, 1, ids[1], instance_id="instance-1", protocols=BOTH[::-1])
    for now_ms in (9_000, 18_000, 27_000):
        heartbeat(c, now_ms, ids[0], 1, instance_id="instance-0")
    done = c.expire(30_001, WALL)
    group = c.group(GROUP)
    assert list(group.members) == ids  # the leader stayed, though it did not rejoin
    assert group.leader_id == ids[1]  # leadership went to a member that did
    response = reply(done, token)
    assert (response.generation_id, response.leader) == (2, ids[1])
    assert raised(heartbeat, c, 30_002, ids[0], 1, instance_id="instance-0") == (
        E.ILLEGAL_GENERATION
    )


def test_join_phase_waits_again_when_only_static_members_that_did_not_rejoin_remain() -> None:
    c, ids = stable_group(2, static=True, session_timeout_ms=60_000)
    token, _ = join(c, 1, version=3)  # a dynamic member starts a rebalance...
    group = c.group(GROUP)
    dynamic_id = next(m for m in group.members if m not in ids)
    _, outcome = leave(c, 2, (dynamic_id, None))  # ...and leaves before anyone rejoins
    assert reply(outcome, token).error_code == E.UNKNOWN_MEMBER_ID
    assert c.next_deadline_ms() == 1 + 30_000
    assert c.expire(30_001, WALL).replies == ()
    assert group.state is GroupState.PREPARING_REBALANCE
    assert group.join_deadline_ms == 60_001
    token, outcome = join(c, 40_000, ids[0], instance_id="instance-0")
    assert reply(outcome, token) is None
    done = c.expire(60_001, WALL)
    assert reply(done, token).generation_id == 2


def test_failed_write_of_a_restarted_static_member_restores_the_old_one() -> None:
    c, ids = stable_group(2, static=True)
    token, outcome = join(c, 100, instance_id="instance-1", version=8)
    new_id = reply(outcome, token).member_id
    failed = c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 101)
    (answer,) = failed.replies
    assert answer.token == token
    response = answer.response
    assert (response.error_code, response.member_id) == (E.NOT_COORDINATOR, "")
    assert (response.generation_id, response.leader, response.protocol_name) == (1, ids[0], "range")
    group = c.group(GROUP)
    assert group.static_members["instance-1"] == ids[1]
    assert list(group.members) == [ids[0], ids[1]]
    assert heartbeat(c, 102, ids[1], 1, instance_id="instance-1").error_code == E.NONE
    assert raised(heartbeat, c, 102, new_id, 1, instance_id="instance-1") == E.FENCED_INSTANCE_ID


def test_failed_write_of_a_replaced_static_member_changes_nothing_once_replaced_again() -> None:
    c, _ids = stable_group(2, static=True)
    _token, first = join(c, 100, instance_id="instance-1", version=8)
    token2, second = join(c, 101, instance_id="instance-1", version=8)
    newest = reply(second, token2).member_id
    failed = c.on_append_failed(first, E.NOT_ENOUGH_REPLICAS, 102)
    assert failed.replies[0].response.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert c.group(GROUP).static_members["instance-1"] == newest


def test_admin_removes_a_static_member_by_instance_id() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2, static=True)
    parked, _ = sync(c, 1, ids[1], 1, instance_id="instance-1")
    token, outcome = leave(c, 2, ("", "instance-1"))
    (result,) = reply(outcome, token).members
    assert (result.member_id, result.group_instance_id, result.error_code) == (
        "",
        "instance-1",
        E.NONE,
    )
    assert reply(outcome, parked).error_code == E.UNKNOWN_MEMBER_ID
    group = c.group(GROUP)
    assert list(group.members) == [ids[0]]
    assert group.state is GroupState.PREPARING_REBALANCE


def test_restarted_static_member_that_had_not_synced_yet_must_sync_under_its_new_id() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2, static=True)
    c.on_appended(sync(c, 1, ids[0], 1, {ids[1]: b"x"})[1], 1)  # Stable; ids[1] never synced
    token, outcome = join(c, 2, instance_id="instance-1")
    new_id = reply(outcome, token).member_id
    group = c.group(GROUP)
    assert group.pending_sync_members == {new_id}
    sync_token, synced = sync(c, 3, new_id, 1, instance_id="instance-1")
    assert reply(synced, sync_token).assignment == b"x"
    assert group.pending_sync_members == set()
    assert group.sync_deadline_ms is None
