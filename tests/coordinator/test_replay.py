"""Replay: the records a session wrote rebuild the state it ended with."""

from __future__ import annotations

from typing import Any

from coordinator.classic.state import GroupState
from coordinator.coordinator import GroupCoordinator
from coordinator.outcome import Outcome
from coordinator.records import CoordinatorRecord
from protocol.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from protocol.errors import ErrorCode
from tests.coordinator.builders import (
    GROUP,
    WALL,
    as_record,
    commit,
    coordinator,
    delete_groups,
    heartbeat,
    join,
    joined_group,
    leave,
    raised,
    reload,
    reply,
    stable_group,
    subscription,
    sync,
)
from tests.coordinator.test_delete import delete_offsets

E = ErrorCode


def snapshot(c: GroupCoordinator) -> dict[str, Any]:
    """What replay must rebuild: every live group as its records describe it."""
    result = {}
    for group_id in c.group_ids():
        g = c.group(group_id)
        assert g is not None
        assert g.state in (GroupState.STABLE, GroupState.EMPTY), "compare settled groups only"
        result[group_id] = {
            "state": g.state,
            "generation": g.generation_id,
            "protocol_type": g.protocol_type,
            "protocol": g.protocol_name,
            "leader": g.leader_id,
            "members": [
                (
                    m.member_id,
                    m.group_instance_id,
                    m.client_id,
                    m.client_host,
                    m.rebalance_timeout_ms,
                    m.session_timeout_ms,
                    m.metadata(g.protocol_name) if g.protocol_name else None,
                    m.assignment,
                )
                for m in g.members.values()
            ],
            "static": g.static_members,
            "subscribed": g.subscribed_topics,
            "offsets": g.offsets,
            # Only an Empty group with a protocol type expires offsets from this time.
            "empty_since": g.state_wall_ms(WALL)
            if g.state is GroupState.EMPTY and g.protocol_type
            else None,
        }
    return result


class Log:
    """The broker's part: append each outcome's records, then tell the coordinator."""

    def __init__(self, c: GroupCoordinator) -> None:
        self.c = c
        self.records: list[CoordinatorRecord] = []

    def __call__(self, outcome: Outcome, now_ms: int) -> Outcome:
        self.records.extend(outcome.records)
        self.c.on_appended(outcome, now_ms)
        return outcome


def test_replaying_a_sessions_records_rebuilds_its_groups_and_offsets() -> None:
    c = coordinator(offsets_retention_check_interval_ms=1_000)
    c.finish_load(0)
    log = Log(c)
    log(c.expire(0, WALL), 0)

    # "g": three consumers; the leader assigns, they commit.
    ids, _ = joined_group(c, 3, protocols=(("range", subscription("t", "u")),))
    log(sync(c, 1, ids[0], 1, {m: f"a-{m}".encode() for m in ids})[1], 1)
    for m in ids[1:]:
        log(sync(c, 1, m, 1)[1], 1)
    log(
        commit(
            c,
            2,
            {("t", 0): 10, ("u", 3): 4},
            member_id=ids[1],
            generation_id=1,
            metadata="meta",
            leader_epoch=5,
        )[1],
        2,
    )
    log(commit(c, 3, {("t", 0): 11}, member_id=ids[2], generation_id=1)[1], 3)

    # "s": static members; one restarts and takes its old place under a new member id.
    stable_group(2, c=c, group_id="s", static=True)
    log(join(c, 4, group_id="s", instance_id="instance-1")[1], 4)

    # "simple": standalone commits, one later removed by OffsetDelete.
    log(
        commit(
            c, 5, {("t", 0): 1, ("t", 1): 2}, group_id="simple", retention_time_ms=10**9, version=2
        )[1],
        5,
    )
    log(commit(c, 6, {("t", 1): 3}, group_id="simple")[1], 6)
    log(delete_offsets(c, 7, {"t": [0]}, group_id="simple")[1], 7)

    # "emptied": a consumer group whose last member left, keeping its offsets.
    _, members = stable_group(1, c=c, group_id="emptied")
    log(
        commit(c, 8, {("t", 0): 7}, member_id=members[0], generation_id=1, group_id="emptied")[1], 8
    )
    log(leave(c, 9, (members[0], None), group_id="emptied")[1], 9)

    # "deleted" and "expired": gone, with tombstones.
    log(commit(c, 10, {("t", 0): 1}, group_id="deleted")[1], 10)
    log(delete_groups(c, 11, "deleted")[1], 11)
    log(commit(c, 12, {("t", 0): 1}, group_id="expired", retention_time_ms=1_000, version=2)[1], 12)
    for now_ms in (9_000, 18_000):  # keep "g" and "s" alive until the expiry
        for group_id in ("g", "s"):
            for member_id, member in c.group(group_id).members.items():
                heartbeat(
                    c, now_ms, member_id, 1, group_id=group_id, instance_id=member.group_instance_id
                )
    outcome = log(c.expire(20_000, WALL + 20_000), 20_000)
    assert [r.key.group for r in outcome.records] == ["expired"]

    assert set(c.group_ids()) == {"g", "s", "simple", "emptied"}
    assert snapshot(reload(log.records)) == snapshot(c)


def test_a_group_tombstone_leaves_later_offsets_to_a_new_offsets_only_group() -> None:
    c = coordinator()
    log = Log(c)
    _, ids = stable_group(1, c=c)
    _, emptied = leave(c, 1, (ids[0], None))
    log(emptied, 1)
    log(delete_groups(c, 2, GROUP)[1], 2)
    log(commit(c, 3, {("t", 0): 1})[1], 3)
    loaded = reload(log.records)
    assert snapshot(loaded) == snapshot(c)
    group = loaded.group(GROUP)
    assert (group.generation_id, group.protocol_type) == (0, None)


def test_loaded_members_must_heartbeat_within_their_session() -> None:
    c, ids = stable_group(2, static=True)
    loaded = reload([as_record(c)], now_ms=1_000)
    group = loaded.group(GROUP)
    assert group.state is GroupState.STABLE
    assert [m.heartbeat_deadline_ms for m in group.members.values()] == [11_000, 11_000]
    assert heartbeat(loaded, 5_000, ids[1], 1, instance_id="instance-1").error_code == E.NONE
    loaded.expire(11_000, WALL + 11_000)
    assert list(group.members) == [ids[1]]
    assert group.state is GroupState.PREPARING_REBALANCE
    # A loaded member syncs into the Stable group it was part of.
    c2 = reload([as_record(c)])
    token, outcome = sync(c2, 1, ids[0], 1, instance_id="instance-0")
    assert reply(outcome, token).assignment == f"a-{ids[0]}".encode()


def test_replay_skips_record_types_it_does_not_know() -> None:
    c = coordinator()
    c.replay(b"\x00\x0banything", b"\x00\x00whatever")
    c.finish_load(0)
    assert c.group_ids() == []


def test_replay_reads_the_oldest_value_versions() -> None:
    c = coordinator()
    member = MemberMetadata(
        member_id="m",
        client_id="c",
        client_host="/h",
        session_timeout=9_000,
        subscription=subscription("t"),
        assignment=b"x",
    )
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=4,
        protocol="range",
        leader="m",
        members=[member],
    )
    c.replay(encode_key(GroupMetadataKey(group=GROUP)), encode_value(value, 0))
    offset = OffsetCommitValue(offset=5, metadata="", commit_timestamp=WALL)
    key = OffsetCommitKey(group=GROUP, topic="t", partition=0)
    c.replay(encode_key(key), encode_value(offset, 0))
    c.finish_load(0)
    group = c.group(GROUP)
    (loaded,) = group.members.values()
    assert (loaded.rebalance_timeout_ms, loaded.session_timeout_ms) == (9_000, 9_000)
    assert group.subscribed_topics == {"t"}
    assert group.offsets[("t", 0)].leader_epoch == -1
    assert group.logged_state_wall_ms is None
    assert raised(heartbeat, c, 1, "m", 3) == E.ILLEGAL_GENERATION


def test_replay_of_an_empty_group_record_keeps_its_protocol_type_and_empty_time() -> None:
    c = coordinator()
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=2,
        protocol=None,
        leader=None,
        current_state_timestamp=WALL + 5,
        members=[],
    )
    c.replay(encode_key(GroupMetadataKey(group=GROUP)), encode_value(value, 3))
    c.replay(encode_key(GroupMetadataKey(group="gone")), encode_value(value, 3))
    c.replay(encode_key(GroupMetadataKey(group="gone")), None)
    key = OffsetCommitKey(group=GROUP, topic="t", partition=0)
    c.replay(encode_key(key), encode_value(OffsetCommitValue(offset=1, commit_timestamp=0), 3))
    c.replay(encode_key(key), None)
    c.finish_load(0)
    group = c.group(GROUP)
    assert (group.state, group.protocol_type, group.generation_id) == (
        GroupState.EMPTY,
        "consumer",
        2,
    )
    assert group.state_wall_ms(None) == WALL + 5
    assert group.offsets == {}
    assert c.group("gone") is None
    assert c.next_deadline_ms() == 0  # the first retention check
    outcome = c.expire(0, WALL + 10)
    # Empty without offsets: Dead at the first check, its record tombstoned.
    assert [(r.key, r.value) for r in outcome.records] == [(GroupMetadataKey(group=GROUP), None)]


def test_replay_of_members_without_a_protocol_leaves_subscriptions_unknown() -> None:
    # Kafka never writes this, but its loader accepts it, and so does ours.
    c = coordinator()
    member = MemberMetadata(
        member_id="m",
        client_id="c",
        client_host="/h",
        session_timeout=9_000,
        subscription=b"",
        assignment=b"",
    )
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=1,
        protocol=None,
        leader="m",
        members=[member],
    )
    c.replay(encode_key(GroupMetadataKey(group=GROUP)), encode_value(value, 3))
    c.finish_load(0)
    group = c.group(GROUP)
    assert (group.state, group.subscribed_topics) == (GroupState.STABLE, None)
