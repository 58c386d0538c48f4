"""MemberState's one transition table, and reconciliation steps on their own (Kafka's
CurrentAssignmentBuilderTest in spirit)."""

import dataclasses
import uuid

import pytest

from coordinator.consumer import TRANSITIONS, ConsumerGroupMember, MemberState, reconcile
from coordinator.consumer.member import transition_to
from protocol.errors import ErrorCode, KafkaError

T = uuid.UUID(int=1)
NOBODY = lambda topic_id, partition: -1  # noqa: E731


def member(state: MemberState = MemberState.STABLE, **changes: object) -> ConsumerGroupMember:
    m = ConsumerGroupMember(member_id="m", **changes)  # type: ignore[arg-type]
    return m if state is MemberState.STABLE else transition_to(m, state)


@pytest.mark.parametrize("before", list(MemberState))
@pytest.mark.parametrize("after", list(MemberState))
def test_transition_table_is_the_only_rule(before, after):
    m = ConsumerGroupMember(member_id="m")
    m = dataclasses.replace(m, state=before)  # as replay sets it from a record
    if before in TRANSITIONS[after]:
        assert transition_to(m, after, member_epoch=4).state is after
    else:
        with pytest.raises(AssertionError):
            transition_to(m, after)
        assert m.state is before


def test_unknown_is_never_entered_and_record_values_map_to_states():
    assert TRANSITIONS[MemberState.UNKNOWN] == frozenset()
    assert [MemberState.from_value(v) for v in (0, 1, 2, 3, 127)] == [
        MemberState.STABLE,
        MemberState.UNREVOKED_PARTITIONS,
        MemberState.UNRELEASED_PARTITIONS,
        MemberState.UNKNOWN,
        MemberState.UNKNOWN,
    ]


def test_state_changes_only_through_transition_to():
    with pytest.raises(AssertionError):
        ConsumerGroupMember(member_id="m").replace(state=MemberState.UNKNOWN)


def test_stable_member_at_the_target_epoch_is_unchanged():
    m = member(member_epoch=3, assigned_partitions={T: frozenset({0})})
    same = reconcile(
        m,
        target_epoch=3,
        target={T: frozenset({1})},
        subscribed_topic_ids=[T],
        owned=None,
        partition_epoch=NOBODY,
    )
    assert same is m


def test_revocation_first_then_assignment():
    m = member(member_epoch=3, assigned_partitions={T: frozenset({0, 1})})
    step = reconcile(
        m,
        target_epoch=4,
        target={T: frozenset({1, 2})},
        subscribed_topic_ids=[T],
        owned=[(T, [0, 1])],
        partition_epoch=NOBODY,
    )
    assert (step.state, step.member_epoch, step.previous_member_epoch) == (
        MemberState.UNREVOKED_PARTITIONS,
        3,
        3,
    )
    assert step.assigned_partitions == {T: frozenset({1})}
    assert step.partitions_pending_revocation == {T: frozenset({0})}
    still = reconcile(
        step,
        target_epoch=4,
        target={T: frozenset({1, 2})},
        subscribed_topic_ids=[T],
        owned=[(T, [0, 1])],
        partition_epoch=NOBODY,
    )
    assert still is step
    done = reconcile(
        step,
        target_epoch=4,
        target={T: frozenset({1, 2})},
        subscribed_topic_ids=[T],
        owned=[(T, [1])],
        partition_epoch=NOBODY,
    )
    assert (done.state, done.member_epoch, done.previous_member_epoch) == (
        MemberState.STABLE,
        4,
        3,
    )
    assert done.assigned_partitions == {T: frozenset({1, 2})}
    assert done.partitions_pending_revocation == {}


def test_partition_held_by_another_member_is_unreleased_until_freed():
    m = member(member_epoch=3)
    held = {(T, 5): 2}
    step = reconcile(
        m,
        target_epoch=4,
        target={T: frozenset({4, 5})},
        subscribed_topic_ids=[T],
        owned=[],
        partition_epoch=lambda t, p: held.get((t, p), -1),
    )
    assert (step.state, step.member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 4)
    assert step.assigned_partitions == {T: frozenset({4})}
    held.clear()
    done = reconcile(
        step,
        target_epoch=4,
        target={T: frozenset({4, 5})},
        subscribed_topic_ids=[T],
        owned=[(T, [4])],
        partition_epoch=NOBODY,
    )
    assert (done.state, done.assigned_partitions) == (MemberState.STABLE, {T: frozenset({4, 5})})


def test_partitions_already_revoked_need_no_wait():
    m = member(member_epoch=3, assigned_partitions={T: frozenset({0, 1})})
    step = reconcile(
        m,
        target_epoch=4,
        target={T: frozenset({1})},
        subscribed_topic_ids=[T],
        owned=[(T, [1])],
        partition_epoch=NOBODY,
    )
    assert (step.state, step.member_epoch) == (MemberState.STABLE, 4)


def test_unknown_state_fences_a_member_that_owns_partitions():
    m = dataclasses.replace(member(member_epoch=3), state=MemberState.UNKNOWN)
    with pytest.raises(KafkaError) as e:
        reconcile(
            m,
            target_epoch=4,
            target={},
            subscribed_topic_ids=[T],
            owned=[(T, [0])],
            partition_epoch=NOBODY,
        )
    assert e.value.code == ErrorCode.FENCED_MEMBER_EPOCH
    fresh = reconcile(
        m,
        target_epoch=4,
        target={T: frozenset({0})},
        subscribed_topic_ids=[T],
        owned=[],
        partition_epoch=NOBODY,
    )
    assert (fresh.state, fresh.member_epoch) == (MemberState.STABLE, 4)
