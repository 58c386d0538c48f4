"""JoinGroup: members, leaders, protocol votes, the join phase and its timers."""

from __future__ import annotations

import pytest

from coordinator.classic.state import GroupState
from coordinator.outcome import GenerationStarted
from protocol.errors import ErrorCode
from tests.coordinator.builders import (
    GROUP,
    REBALANCE_MS,
    SESSION_MS,
    WALL,
    as_record,
    commit,
    coordinator,
    delete_groups,
    heartbeat,
    join,
    joined_group,
    leave,
    new_member_id,
    raised,
    reload,
    reply,
    stable_group,
    subscription,
    sync,
    tokens,
)

E = ErrorCode


def test_join_with_empty_group_id_returns_invalid_group_id() -> None:
    c = coordinator()
    token, outcome = join(c, 0, "m-1", group_id="")
    response = reply(outcome, token)
    assert response.error_code == E.INVALID_GROUP_ID
    assert response.member_id == "m-1"
    assert c.group_ids() == []


@pytest.mark.parametrize("session_timeout_ms", [5_999, 1_800_001])
def test_join_with_session_timeout_out_of_bounds_returns_invalid_session_timeout(
    session_timeout_ms: int,
) -> None:
    c = coordinator()
    token, outcome = join(c, 0, session_timeout_ms=session_timeout_ms)
    assert reply(outcome, token).error_code == E.INVALID_SESSION_TIMEOUT
    assert c.group_ids() == []


def test_join_of_unknown_group_with_member_id_returns_unknown_member_id() -> None:
    c = coordinator()
    token, outcome = join(c, 0, "m-1")
    response = reply(outcome, token)
    assert (response.error_code, response.member_id) == (E.UNKNOWN_MEMBER_ID, "m-1")
    assert c.group_ids() == []


def test_join_v4_without_member_id_returns_member_id_required_with_assigned_id() -> None:
    c = coordinator()
    token, outcome = join(c, 0, version=4, client_id="app")
    response = reply(outcome, token)
    assert response.error_code == E.MEMBER_ID_REQUIRED
    assert response.member_id.startswith("app-")
    assert response.generation_id == -1
    assert response.protocol_name == ""  # v4: not nullable
    group = c.group(GROUP)
    assert group.state is GroupState.EMPTY
    assert response.member_id in group.pending_members


def test_join_v3_without_member_id_joins_at_once() -> None:
    c = coordinator()
    token, outcome = join(c, 0, version=3, client_id="app")
    assert reply(outcome, token) is None
    done = c.expire(0, WALL)
    response = reply(done, token)
    assert response.error_code == E.NONE
    assert response.member_id.startswith("app-")
    assert response.leader == response.member_id
    assert response.protocol_name == "range"


def test_pending_member_id_expires_after_its_session_timeout() -> None:
    c = coordinator()
    member_id = new_member_id(c, 0, session_timeout_ms=7_000)
    assert c.next_deadline_ms() == 7_000
    c.expire(7_000, WALL + 7_000)
    assert member_id not in c.group(GROUP).pending_members
    token, outcome = join(c, 7_001, member_id)
    assert reply(outcome, token).error_code == E.UNKNOWN_MEMBER_ID


def test_join_of_three_members_gives_leader_all_metadata_and_followers_none() -> None:
    c = coordinator()
    ids, done = joined_group(c, 3)
    group = c.group(GROUP)
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert group.generation_id == 1
    responses = [r.response for r in done.replies]
    assert [r.member_id for r in responses] == ids
    for response in responses:
        assert response.error_code == E.NONE
        assert response.generation_id == 1
        assert response.leader == ids[0]
        assert response.protocol_type == "consumer"
        assert response.protocol_name == "range"
    assert [m.member_id for m in responses[0].members] == ids
    assert [m.metadata for m in responses[0].members] == [subscription("t")] * 3
    assert responses[1].members == responses[2].members == []
    assert group.pending_sync_members == set(ids)
    assert done.records == ()


def test_protocol_with_most_votes_among_those_all_members_support_is_selected() -> None:
    c = coordinator()
    # Every member supports "b" and "c"; two prefer "c". "a" is not a candidate.
    prefs = [
        (("a", b""), ("c", b""), ("b", b"")),
        (("c", b""), ("b", b""), ("a", b"")),
        (("b", b""), ("c", b"")),
    ]
    parked = []
    for p in prefs:
        member_id = new_member_id(c, 0, protocols=p)
        parked.append(join(c, 0, member_id, protocols=p)[0])
    done = c.expire(0, WALL)
    assert {reply(done, t).protocol_name for t in parked} == {"c"}


def test_join_with_other_protocol_type_returns_inconsistent_group_protocol() -> None:
    c, ids = stable_group(1)
    token, outcome = join(c, 1, protocol_type="connect")
    response = reply(outcome, token)
    assert (response.error_code, response.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, "")
    token, outcome = join(c, 1, ids[0], protocol_type="connect")
    response = reply(outcome, token)
    assert (response.error_code, response.member_id) == (E.INCONSISTENT_GROUP_PROTOCOL, ids[0])


def test_join_without_a_common_protocol_returns_inconsistent_group_protocol() -> None:
    c, _ = stable_group(1)
    token, outcome = join(c, 1, protocols=(("roundrobin", b""),))
    assert reply(outcome, token).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_first_join_without_protocols_returns_inconsistent_group_protocol() -> None:
    c = coordinator()
    token, outcome = join(c, 0, protocols=())
    assert reply(outcome, token).error_code == E.INCONSISTENT_GROUP_PROTOCOL
    token, outcome = join(c, 0, protocol_type="")
    assert reply(outcome, token).error_code == E.INCONSISTENT_GROUP_PROTOCOL


def test_any_protocol_type_can_form_a_group() -> None:
    c, _ids = stable_group(2, protocol_type="connect", protocols=(("sessioned", b"x"),))
    group = c.group(GROUP)
    assert (group.state, group.protocol_type, group.protocol_name) == (
        GroupState.STABLE,
        "connect",
        "sessioned",
    )
    assert group.subscribed_topics is None


def test_join_beyond_group_max_size_returns_group_max_size_reached() -> None:
    c, ids = stable_group(2, c=coordinator(group_max_size=2))
    token, outcome = join(c, 1)
    response = reply(outcome, token)
    assert (response.error_code, response.member_id) == (E.GROUP_MAX_SIZE_REACHED, "")
    # A known member still gets in.
    token, outcome = join(c, 1, ids[1])
    assert reply(outcome, token).error_code == E.NONE


def test_rebalance_of_group_over_a_lowered_max_size_turns_away_the_last_to_rejoin() -> None:
    c, ids = stable_group(3)
    # The broker restarts with group.max.size lowered to 2.
    c = reload([as_record(c)], group_max_size=2)
    join(c, 1, ids[0])  # the leader starts a rebalance
    join(c, 2, ids[1])
    token, outcome = join(c, 3, ids[2])
    assert reply(outcome, token).error_code == E.GROUP_MAX_SIZE_REACHED
    group = c.group(GROUP)
    # With the third member gone, everybody left has rejoined: the join phase is over.
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert list(group.members) == ids[:2]


def test_pending_member_that_finds_the_rebalance_full_is_turned_away() -> None:
    c, ids = stable_group(2, c=coordinator(group_max_size=2))
    join(c, 1, ids[0])  # rebalancing: members count as they rejoin
    member_id = new_member_id(c, 2)
    join(c, 3, ids[1])
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE  # the pending id blocks
    token, outcome = join(c, 4, member_id)
    assert reply(outcome, token).error_code == E.GROUP_MAX_SIZE_REACHED
    group = c.group(GROUP)
    assert member_id not in group.pending_members
    assert group.state is GroupState.COMPLETING_REBALANCE


def test_known_member_rejoining_completing_rebalance_with_same_protocols_gets_this_generation() -> (
    None
):
    c = coordinator()
    ids, _ = joined_group(c, 2)
    for member_id, expect_members in ((ids[0], ids), (ids[1], [])):
        token, outcome = join(c, 5, member_id)
        response = reply(outcome, token)
        assert (response.error_code, response.generation_id) == (E.NONE, 1)
        assert [m.member_id for m in response.members] == expect_members
    assert c.group(GROUP).state is GroupState.COMPLETING_REBALANCE


def test_known_member_with_new_protocols_during_completing_rebalance_restarts_it() -> None:
    c = coordinator()
    ids, _ = joined_group(c, 2)
    sync_token, outcome = sync(c, 1, ids[1], 1)
    assert reply(outcome, sync_token) is None
    new = (("range", subscription("t", "u")),)
    token, outcome = join(c, 2, ids[1], protocols=new)
    assert reply(outcome, sync_token).error_code == E.REBALANCE_IN_PROGRESS
    assert reply(outcome, token) is None
    group = c.group(GROUP)
    assert group.state is GroupState.PREPARING_REBALANCE
    # The leader rejoins: everyone is in, generation 2 starts with the new subscription.
    token0, outcome = join(c, 3, ids[0])
    assert reply(outcome, token).generation_id == reply(outcome, token0).generation_id == 2
    assert group.subscribed_topics == {"t", "u"}


def test_follower_rejoining_stable_group_with_same_protocols_does_not_rebalance() -> None:
    c, ids = stable_group(2)
    token, outcome = join(c, 5, ids[1])
    response = reply(outcome, token)
    assert (response.error_code, response.generation_id, response.members) == (E.NONE, 1, [])
    assert c.group(GROUP).state is GroupState.STABLE


@pytest.mark.parametrize("who", ["leader", "follower with new protocols"])
def test_leader_rejoin_or_changed_protocols_rebalance_a_stable_group(who: str) -> None:
    c, ids = stable_group(2)
    if who == "leader":
        token, outcome = join(c, 5, ids[0])
    else:
        token, outcome = join(c, 5, ids[1], protocols=(("range", subscription("u")),))
    assert reply(outcome, token) is None
    group = c.group(GROUP)
    assert group.state is GroupState.PREPARING_REBALANCE
    assert heartbeat(c, 6, ids[1], 1).error_code == E.REBALANCE_IN_PROGRESS
    assert group.join_deadline_ms == 5 + REBALANCE_MS


def test_join_phase_ends_when_every_member_has_rejoined() -> None:
    c, ids = stable_group(3)
    parked = [join(c, 10, ids[0])[0], join(c, 11, ids[1])[0]]
    token, outcome = join(c, 12, ids[2])
    assert sorted(tokens(outcome)) == sorted([*parked, token])
    assert c.group(GROUP).generation_id == 2
    assert c.group(GROUP).join_deadline_ms is None


def test_member_that_does_not_rejoin_is_removed_at_the_rebalance_timeout() -> None:
    c, ids = stable_group(3)
    t0, _ = join(c, 100, ids[0])
    t1, _ = join(c, 200, ids[1])
    # ids[2] keeps heartbeating (its session stays alive) but never rejoins.
    for now_ms in (9_000, 18_000, 27_000):
        assert heartbeat(c, now_ms, ids[2], 1).error_code == E.REBALANCE_IN_PROGRESS
    assert c.next_deadline_ms() == 100 + REBALANCE_MS
    done = c.expire(100 + REBALANCE_MS, WALL + 100 + REBALANCE_MS)
    group = c.group(GROUP)
    assert list(group.members) == ids[:2]
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert [m.member_id for m in reply(done, t0).members] == ids[:2]
    assert reply(done, t1).generation_id == 2
    assert raised(heartbeat, c, 30_101, ids[2], 2) == E.UNKNOWN_MEMBER_ID


def test_leader_that_does_not_rejoin_is_removed_and_the_next_member_leads() -> None:
    c, ids = stable_group(2)
    token, _ = join(c, 1, ids[1], protocols=(("range", subscription("u")),))
    for now_ms in (9_000, 18_000, 27_000):
        heartbeat(c, now_ms, ids[0], 1)
    done = c.expire(1 + REBALANCE_MS, WALL)
    group = c.group(GROUP)
    assert list(group.members) == [ids[1]]
    assert reply(done, token).leader == ids[1]
    assert [m.member_id for m in reply(done, token).members] == [ids[1]]


def test_join_phase_with_nobody_left_makes_the_group_empty_and_writes_it() -> None:
    c, ids = stable_group(2)
    join_token, _ = join(c, 1, ids[0])
    leave_token, outcome = leave(c, 2, (ids[0], None), (ids[1], None))
    group = c.group(GROUP)
    assert group.state is GroupState.EMPTY
    assert group.generation_id == 2
    assert [m.error_code for m in reply(outcome, leave_token).members] == [E.NONE, E.NONE]
    assert reply(outcome, join_token).error_code == E.UNKNOWN_MEMBER_ID
    (record,) = outcome.records
    assert record.value.generation == 2
    assert record.value.members == []
    assert record.value.protocol is None
    assert record.value.leader is None
    assert record.value.protocol_type == "consumer"


def test_initial_rebalance_waits_the_initial_delay() -> None:
    c = coordinator(group_initial_rebalance_delay_ms=3_000)
    member_id = new_member_id(c, 0)
    token, outcome = join(c, 100, member_id)
    assert reply(outcome, token) is None
    assert c.next_deadline_ms() == 3_100
    assert c.expire(3_099, WALL).replies == ()
    done = c.expire(3_100, WALL + 3_100)
    assert reply(done, token).generation_id == 1


def test_initial_delay_is_extended_while_new_members_arrive_up_to_the_rebalance_timeout() -> None:
    c = coordinator(group_initial_rebalance_delay_ms=3_000)
    rebalance_ms = 7_000  # the cap: the first delay plus at most 4 000 ms more
    first = join(c, 0, new_member_id(c, 0), rebalance_timeout_ms=rebalance_ms)[0]
    second = join(c, 1_000, new_member_id(c, 1_000), rebalance_timeout_ms=rebalance_ms)[0]
    assert c.expire(3_000, WALL).replies == ()  # someone new came: 3 000 ms more
    assert c.next_deadline_ms() == 6_000
    third = join(c, 5_000, new_member_id(c, 5_000), rebalance_timeout_ms=rebalance_ms)[0]
    assert c.expire(6_000, WALL).replies == ()  # again, but only 1 000 ms are left
    assert c.next_deadline_ms() == 7_000
    join(c, 6_500, new_member_id(c, 6_500), rebalance_timeout_ms=rebalance_ms)
    done = c.expire(7_000, WALL)  # nothing left to extend by: the phase ends
    assert {r.token for r in done.replies} >= {first, second, third}
    assert len(c.group(GROUP).members) == 4


def test_initial_rebalance_does_not_end_early_when_everyone_has_joined() -> None:
    c = coordinator(group_initial_rebalance_delay_ms=3_000)
    member_id = new_member_id(c, 0)
    token, outcome = join(c, 0, member_id)
    # The only member has joined, yet Kafka waits out the initial delay.
    assert reply(outcome, token) is None
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE


def test_second_join_from_same_member_supersedes_the_parked_one() -> None:
    c, ids = stable_group(2)
    first, _ = join(c, 1, ids[0])
    second, outcome = join(c, 2, ids[0])
    response = reply(outcome, first)
    assert (response.error_code, response.member_id) == (E.REBALANCE_IN_PROGRESS, ids[0])
    done = join(c, 3, ids[1])[1]
    assert reply(done, second).generation_id == 2
    assert reply(done, first) is None


@pytest.mark.parametrize(("version", "none_name"), [(6, ""), (7, None)])
def test_join_error_protocol_name_is_null_from_v7_and_empty_below(
    version: int, none_name: str | None
) -> None:
    c = coordinator()
    token, outcome = join(c, 0, "unknown", version=version)
    response = reply(outcome, token)
    assert response.protocol_name == none_name
    assert response.protocol_type is None


def test_join_v0_uses_the_session_timeout_as_rebalance_timeout() -> None:
    c = coordinator()
    _token, _ = join(c, 0, version=0, session_timeout_ms=8_000, rebalance_timeout_ms=-1)
    c.expire(0, WALL)
    (member,) = c.group(GROUP).members.values()
    assert member.rebalance_timeout_ms == 8_000


def test_new_member_whose_first_join_stays_parked_five_minutes_is_removed() -> None:
    c, ids = stable_group(2)  # ids[1] will not rejoin: its session ends at 10 000
    join(c, 1, ids[0], rebalance_timeout_ms=600_000)  # a long rebalance
    # A member id handed out and never used holds the join phase open.
    new_member_id(c, 1, session_timeout_ms=1_000_000)
    token, outcome = join(c, 2, new_member_id(c, 2))
    assert reply(outcome, token) is None
    outcome = c.expire(2 + 300_000, WALL)
    response = reply(outcome, token)
    assert (response.error_code, response.member_id) == (E.UNKNOWN_MEMBER_ID, "")
    group = c.group(GROUP)
    assert list(group.members) == [ids[0]]
    assert group.state is GroupState.PREPARING_REBALANCE


def test_member_waiting_in_join_phase_is_not_expired_by_its_session() -> None:
    c, ids = stable_group(2)
    join(c, 1, ids[0])
    heartbeat(c, 5_000, ids[1], 1)
    c.expire(10_001, WALL)  # ids[0]'s session would have ended here
    group = c.group(GROUP)
    assert list(group.members) == ids
    assert group.members[ids[0]].heartbeat_deadline_ms is None
    join(c, 12_000, ids[1])  # everyone is in: its session restarts
    assert group.state is GroupState.COMPLETING_REBALANCE
    assert group.members[ids[0]].heartbeat_deadline_ms == 22_000


def test_join_to_dead_group_returns_coordinator_not_available() -> None:
    c = coordinator()
    c.on_appended(commit(c, 0, {("t", 0): 1})[1], 0)
    _, outcome = delete_groups(c, 1, GROUP)  # Dead until the tombstones are durable
    token, joined = join(c, 2)
    assert (reply(joined, token).error_code, reply(joined, token).member_id) == (
        E.COORDINATOR_NOT_AVAILABLE,
        "",
    )
    token, joined = join(c, 2, "m-1")
    assert reply(joined, token).error_code == E.COORDINATOR_NOT_AVAILABLE
    c.on_appended(outcome, 3)
    assert c.group(GROUP) is None


@pytest.mark.parametrize(("version", "name"), [(6, ""), (7, None)])
def test_protocol_named_empty_is_sent_as_null_from_v7(version: int, name: str | None) -> None:
    c = coordinator()
    protocols = (("", b""),)
    member_id = new_member_id(c, 0, version=version, protocols=protocols)
    token, _ = join(c, 0, member_id, version=version, protocols=protocols)
    assert reply(c.expire(0, WALL), token).protocol_name == name


def test_outcome_reports_each_new_generation_with_its_members_protocol_and_leader() -> None:
    c = coordinator()
    ids, done = joined_group(c, 2)
    assert done.generations == (
        GenerationStarted(
            group_id=GROUP,
            generation_id=1,
            members=2,
            protocol_type="consumer",
            protocol_name="range",
            leader_id=ids[0],
        ),
    )
    _, left = leave(c, 10, (ids[0], None), (ids[1], None))
    assert [(g.generation_id, g.members, g.leader_id) for g in left.generations] == [(2, 0, None)]


def test_outcome_of_a_call_that_starts_no_generation_reports_none() -> None:
    c, ids = stable_group(2)
    _, outcome = commit(c, 5, {("t", 0): 1}, member_id=ids[0], generation_id=1)
    assert outcome.generations == ()
    assert outcome.dead_groups == ()


def test_a_pending_member_id_expiring_in_the_initial_delay_ends_the_join_phase() -> None:
    # Kafka 4.x (removePendingMemberAndUpdateClassicGroup): once every member left has
    # joined, the join phase ends, initial delay or not; 3.x waited the delay out.
    c = coordinator(group_initial_rebalance_delay_ms=60_000)
    first = new_member_id(c, 0)
    token, _ = join(c, 0, first, rebalance_timeout_ms=300_000)
    new_member_id(c, 1)  # a second consumer that never comes back with its id
    assert c.group(GROUP).state is GroupState.PREPARING_REBALANCE
    outcome = c.expire(1 + SESSION_MS, WALL + 1 + SESSION_MS)
    assert reply(outcome, token).generation_id == 1
    assert c.group(GROUP).state is GroupState.COMPLETING_REBALANCE


def test_a_group_loaded_above_group_max_size_rebalances() -> None:
    # Kafka's GroupMetadataManager.onLoaded: a rebalance gives the members a chance to commit
    # before the last to rejoin are turned away.
    c, _ids = stable_group(3)
    loaded = reload([as_record(c)], group_max_size=2)
    assert loaded.group(GROUP).state is GroupState.PREPARING_REBALANCE
    assert reload([as_record(c)], group_max_size=3).group(GROUP).state is GroupState.STABLE
