"""Records of a consumer group, or of a conversion between group types, that cannot be
written change nothing in memory, as Kafka's runtime reverts its state to the last written
offset; the request gets the error GroupCoordinatorService.handleOperationException makes of
the failed append (NOT_COORDINATOR for KAFKA_STORAGE_ERROR, COORDINATOR_NOT_AVAILABLE for
NOT_ENOUGH_REPLICAS). A timer whose records are not written runs again 500 ms later
(Kafka's CoordinatorTimer retry backoff). Time is literals.
"""

from __future__ import annotations

from typing import Any

from coordinator.consumer.saved import TIMER_RETRY_BACKOFF_MS
from coordinator.coordinator import GroupCoordinator
from coordinator.outcome import Outcome
from protocol.errors import ErrorCode
from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatResponse
from protocol.messages.leave_group import LeaveGroupResponse
from tests.coordinator.builders import GROUP, WALL, commit, fetch, heartbeat, leave, reply
from tests.coordinator.consumer.test_migration import (
    cg_heartbeat,
    classic_group,
    coordinator,
    join,
    settled_with_static_consumer_member,
    upgraded,
)

E = ErrorCode


def state(c: GroupCoordinator) -> tuple[Any, ...]:
    """Everything a client could tell apart: the group's type, the consumer group's state,
    the classic Group object and its members, the offsets, and the next deadline."""
    consumer = c.consumer.groups.get(GROUP)
    classic = c.group(GROUP)
    return (
        c.group_type(GROUP),
        None if consumer is None else vars(consumer.copy()),
        classic,
        None if classic is None else (str(classic.state), classic.generation_id),
        None if classic is None else dict(classic.members),
        None if classic is None else dict(classic.offsets),
        c.next_deadline_ms(),
    )


def failed_reply(c: GroupCoordinator, outcome: Outcome, code: E, now_ms: int, kind: type) -> Any:
    assert outcome.records
    failed = c.on_append_failed(outcome, code, now_ms)
    assert not failed.records
    (response,) = [r.response for r in failed.replies if isinstance(r.response, kind)]
    return response


def test_a_consumer_member_join_not_written_leaves_the_group_as_it_was() -> None:
    c = coordinator()
    cg_heartbeat(c, 0, "m0")
    c.on_appended(cg_heartbeat(c, 0, "m0")[1], 0)
    before = state(c)
    _, outcome = cg_heartbeat(c, 10, "m1")
    response = failed_reply(c, outcome, E.KAFKA_STORAGE_ERROR, 10, ConsumerGroupHeartbeatResponse)
    assert response.error_code == E.NOT_COORDINATOR
    assert state(c) == before
    assert "m1" not in c.consumer.groups[GROUP].members


def test_a_classic_leave_inside_a_consumer_group_not_written_changes_nothing() -> None:
    c, ids, _ = upgraded()
    before = state(c)
    token, outcome = leave(c, 200, (ids[0], None))
    failed = c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 200)
    assert reply(failed, token) == LeaveGroupResponse(error_code=E.NOT_COORDINATOR)
    assert state(c) == before
    assert ids[0] in c.consumer.groups[GROUP].members
    # Written, the same leave takes effect.
    token, outcome = leave(c, 210, (ids[0], None))
    c.on_appended(outcome, 210)
    assert ids[0] not in c.consumer.groups[GROUP].members


def test_a_classic_leave_v0_not_written_gets_the_error_at_the_top() -> None:
    c, ids, _ = upgraded()
    token, outcome = leave(c, 200, (ids[0], None), version=2)
    failed = c.on_append_failed(outcome, E.NOT_ENOUGH_REPLICAS, 200)
    assert reply(failed, token) == LeaveGroupResponse(error_code=E.COORDINATOR_NOT_AVAILABLE)


def test_an_upgrade_not_written_keeps_the_classic_group_and_its_offsets() -> None:
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2], [3, 4, 5]])
    _, committed = commit(c, 50, {("t", 0): 7}, member_id=ids[0], generation_id=1)
    c.on_appended(committed, 50)
    before = state(c)
    _, outcome = cg_heartbeat(c, 100, "c0")
    assert c.group_type(GROUP) == "consumer"
    response = failed_reply(c, outcome, E.KAFKA_STORAGE_ERROR, 100, ConsumerGroupHeartbeatResponse)
    assert response.error_code == E.NOT_COORDINATOR
    assert state(c) == before
    assert c.group_type(GROUP) == "classic"
    assert heartbeat(c, 110, ids[0], 1).error_code == E.NONE
    assert fetch(c, {"t": [0]})[("t", 0)][0] == 7
    # The member retries; written, the upgrade stands.
    response, outcome = cg_heartbeat(c, 120, "c0")
    c.on_appended(outcome, 120)
    assert (response.error_code, c.group_type(GROUP)) == (E.NONE, "consumer")


def test_a_downgrade_not_written_keeps_the_consumer_group() -> None:
    c, ids, _ = upgraded()
    _, committed = commit(c, 150, {("t", 0): 7}, member_id=ids[0], generation_id=1)
    c.on_appended(committed, 150)
    epoch = c.consumer.groups[GROUP].members["c0"].member_epoch
    before = state(c)
    _, outcome = cg_heartbeat(c, 200, "c0", -1)
    assert c.group_type(GROUP) == "classic"
    response = failed_reply(c, outcome, E.NOT_ENOUGH_REPLICAS, 200, ConsumerGroupHeartbeatResponse)
    assert response.error_code == E.COORDINATOR_NOT_AVAILABLE
    assert state(c) == before
    assert fetch(c, {"t": [0]})[("t", 0)][0] == 7
    # The consumer member is still in, and may leave again.
    response, _ = cg_heartbeat(c, 210, "c0", epoch, owned=[])
    assert response.error_code == E.NONE
    _, outcome = cg_heartbeat(c, 220, "c0", -1)
    c.on_appended(outcome, 220)
    assert c.group_type(GROUP) == "classic"
    assert fetch(c, {"t": [0]})[("t", 0)][0] == 7


def test_a_downgrade_by_a_static_replacement_not_written_keeps_the_consumer_group() -> None:
    c, _ids = settled_with_static_consumer_member()
    before = state(c)
    token, outcome = join(c, 300, instance_id="i0")
    assert c.group_type(GROUP) == "classic"
    failed = c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 300)
    response = reply(failed, token)
    assert (response.error_code, response.member_id) == (E.NOT_COORDINATOR, "")
    assert state(c) == before
    assert c.consumer.groups[GROUP].static_members["i0"] == "c0"


def test_a_session_timeout_downgrade_not_written_is_retried() -> None:
    c, ids = settled_with_static_consumer_member()
    epoch = c.consumer.groups[GROUP].group_epoch
    due = 220 + 45_000  # c0's session, from its last heartbeat
    for t in range(5_000, due + 5_000, 5_000):  # the classic members keep theirs
        for m in ids:
            assert heartbeat(c, t, m, epoch).error_code == E.NONE
    before = state(c)
    assert c.next_deadline_ms() == due
    outcome = c.expire(due, WALL + due)
    assert c.group_type(GROUP) == "classic"
    c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, due)
    assert state(c)[:6] == before[:6]
    assert "c0" in c.consumer.groups[GROUP].members
    assert c.next_deadline_ms() == due + TIMER_RETRY_BACKOFF_MS
    outcome = c.expire(due + TIMER_RETRY_BACKOFF_MS, WALL + due)
    c.on_appended(outcome, due + TIMER_RETRY_BACKOFF_MS)
    assert c.group_type(GROUP) == "classic"


def test_a_failure_known_after_a_later_change_leaves_the_group_as_it_is() -> None:
    """In the strict durability mode a failed fsync is known only after other calls ran:
    a group changed since is not put back (its later records were written on top)."""
    c = coordinator()
    _, first = cg_heartbeat(c, 0, "m0")
    _, second = cg_heartbeat(c, 5, "m1")
    c.on_appended(second, 5)
    c.on_append_failed(first, E.KAFKA_STORAGE_ERROR, 6)
    assert set(c.consumer.groups[GROUP].members) == {"m0", "m1"}


def test_an_empty_classic_group_taken_over_not_written_keeps_its_metadata() -> None:
    c = coordinator()
    ids = classic_group(c, [[0, 1, 2, 3, 4, 5]])
    leave(c, 10, (ids[0], None))
    classic = c.group(GROUP)
    assert (str(classic.state), classic.protocol_type) == ("Empty", "consumer")
    before = state(c)
    _, outcome = cg_heartbeat(c, 20, "c0")
    assert classic.protocol_type is None
    failed_reply(c, outcome, E.KAFKA_STORAGE_ERROR, 20, ConsumerGroupHeartbeatResponse)
    assert state(c) == before
    assert classic.protocol_type == "consumer"


def test_a_classic_join_to_an_empty_consumer_group_not_written_gets_the_error() -> None:
    c = coordinator()
    _, joined = cg_heartbeat(c, 0, "m0")
    c.on_appended(joined, 0)
    _, left = cg_heartbeat(c, 10, "m0", -1)
    c.on_appended(left, 10)
    assert not c.consumer.groups[GROUP].members
    token, outcome = join(c, 20)
    assert reply(outcome, token).error_code == E.MEMBER_ID_REQUIRED
    failed = c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 20)
    assert (reply(failed, token).error_code, reply(failed, token).member_id) == (
        E.NOT_COORDINATOR,
        "",
    )
