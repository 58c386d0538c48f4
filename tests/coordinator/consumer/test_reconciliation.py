"""A consumer group walked through assignment, revocation, fencing and timeouts, with time
as literals. Partitions move only after their previous owner revoked them."""

import dataclasses

import pytest

from coordinator.consumer import (
    ConsumerGroupConfig,
    ConsumerGroupCoordinator,
    ConsumerGroupState,
    MemberState,
)
from protocol.consumer_offsets import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
)
from protocol.errors import ErrorCode, KafkaError
from tests.coordinator.consumer.builders import (
    GROUP,
    assigned,
    heartbeat_request,
    join_request,
    response_of,
    topics,
)

METADATA = topics(orders=4)


def coordinator(**config: object) -> ConsumerGroupCoordinator:
    return ConsumerGroupCoordinator(ConsumerGroupConfig(**config))  # type: ignore[arg-type]


def two_members_stable(c: ConsumerGroupCoordinator) -> None:
    """a owns orders 0-1, b owns 2-3, both at epoch 2; the walk itself is
    test_second_member_gets_partitions_only_after_the_first_revokes_them."""
    c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, METADATA)
    c.consumer_group_heartbeat(join_request("b", ["orders"]), 1000, METADATA)
    c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 1100, METADATA)
    c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1]}), 1200, METADATA)
    c.consumer_group_heartbeat(heartbeat_request("b", 2, {}), 1300, METADATA)


def test_first_member_joins_and_gets_every_partition_at_epoch_1():
    c = coordinator()
    result = c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, METADATA)
    response = response_of(result)
    assert (response.error_code, response.member_id, response.member_epoch) == (0, "a", 1)
    assert response.heartbeat_interval_ms == 5000
    assert assigned(response) == {"orders": [0, 1, 2, 3]}
    assert [type(rec.key) for rec in result.records] == [
        ConsumerGroupMemberMetadataKey,
        ConsumerGroupPartitionMetadataKey,
        ConsumerGroupMetadataKey,
        ConsumerGroupTargetAssignmentMemberKey,
        ConsumerGroupTargetAssignmentMetadataKey,
        ConsumerGroupCurrentMemberAssignmentKey,
    ]
    assert result.records[2].value == ConsumerGroupMetadataValue(epoch=1)
    assert c.groups[GROUP].state is ConsumerGroupState.STABLE


def test_second_member_gets_partitions_only_after_the_first_revokes_them():
    c = coordinator()
    c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, METADATA)

    b = response_of(c.consumer_group_heartbeat(join_request("b", ["orders"]), 1000, METADATA))
    # The target gives b orders 2-3, but a still holds them: b waits at the new epoch.
    assert (b.member_epoch, assigned(b)) == (2, {})
    group = c.groups[GROUP]
    assert group.members["b"].state is MemberState.UNRELEASED_PARTITIONS
    assert group.state is ConsumerGroupState.RECONCILING

    a = response_of(
        c.consumer_group_heartbeat(
            heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 1100, METADATA
        )
    )
    # a must revoke 2-3 first: it stays at epoch 1 and is told its smaller assignment.
    assert (a.member_epoch, assigned(a)) == (1, {"orders": [0, 1]})
    assert group.members["a"].state is MemberState.UNREVOKED_PARTITIONS

    b = response_of(c.consumer_group_heartbeat(heartbeat_request("b", 2, {}), 1150, METADATA))
    assert (b.member_epoch, b.assignment) == (2, None)  # still withheld

    a = response_of(
        c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1]}), 1200, METADATA)
    )
    assert (a.member_epoch, a.assignment) == (2, None)  # revoked: on to epoch 2, same partitions
    assert group.members["a"].state is MemberState.STABLE

    b = response_of(c.consumer_group_heartbeat(heartbeat_request("b", 2, {}), 1300, METADATA))
    assert (b.member_epoch, assigned(b)) == (2, {"orders": [2, 3]})
    assert group.state is ConsumerGroupState.STABLE


def test_a_member_that_does_not_report_what_it_owns_keeps_its_revocation_pending():
    c = coordinator()
    c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, METADATA)
    c.consumer_group_heartbeat(join_request("b", ["orders"]), 1000, METADATA)
    c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 1100, METADATA)
    a = response_of(c.consumer_group_heartbeat(heartbeat_request("a", 1), 1200, METADATA))
    assert a.member_epoch == 1
    assert c.groups[GROUP].members["a"].state is MemberState.UNREVOKED_PARTITIONS


@pytest.mark.parametrize("epoch", [3, 1])
def test_heartbeat_with_a_wrong_epoch_is_fenced(epoch):
    c = coordinator()
    two_members_stable(c)  # b: epoch 2, previous epoch 2
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(
            heartbeat_request("b", epoch, {"orders": [2, 3]}), 2000, METADATA
        )
    assert e.value.code == ErrorCode.FENCED_MEMBER_EPOCH


def test_previous_epoch_with_owned_subset_of_assignment_is_accepted():
    # a's response with epoch 2 was lost: it comes back with epoch 1 owning only 0-1.
    c = coordinator()
    two_members_stable(c)
    a = response_of(
        c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1]}), 2000, METADATA)
    )
    assert a.member_epoch == 2


def test_unknown_member_and_unknown_group():
    c = coordinator()
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(heartbeat_request("a", 1, {}), 0, METADATA)
    assert e.value.code == ErrorCode.GROUP_ID_NOT_FOUND
    c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, METADATA)
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(heartbeat_request("zz", 1, {}), 0, METADATA)
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID


def test_leave_bumps_the_group_epoch_and_the_rest_take_over_at_once():
    c = coordinator()
    two_members_stable(c)
    result = c.consumer_group_heartbeat(heartbeat_request("b", -1), 3000, METADATA)
    assert (response_of(result).member_id, response_of(result).member_epoch) == ("b", -1)
    assert [rec.value for rec in result.records[:3]] == [None, None, None]  # b's tombstones
    assert result.records[-1].value == ConsumerGroupMetadataValue(epoch=3)
    a = response_of(
        c.consumer_group_heartbeat(heartbeat_request("a", 2, {"orders": [0, 1]}), 3100, METADATA)
    )
    assert (a.member_epoch, assigned(a)) == (3, {"orders": [0, 1, 2, 3]})


def test_session_timeout_fences_a_silent_member():
    c = coordinator(session_timeout_ms=10000)
    two_members_stable(c)
    c.consumer_group_heartbeat(heartbeat_request("a", 2, {"orders": [0, 1]}), 5000, METADATA)
    assert c.next_deadline_ms() == 1300 + 10000  # b's session
    assert c.expire(11299).records == ()
    result = c.expire(11300)
    assert {rec.key.member_id for rec in result.records[:3]} == {"b"}
    assert set(c.groups[GROUP].members) == {"a"}
    assert c.next_deadline_ms() == 15000
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(heartbeat_request("b", 2, {"orders": [2, 3]}), 11400, METADATA)
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID


def test_rebalance_timeout_fences_a_member_that_does_not_revoke():
    c = coordinator(session_timeout_ms=60000)
    c.consumer_group_heartbeat(
        join_request("a", ["orders"], rebalance_timeout_ms=5000), 0, METADATA
    )
    c.consumer_group_heartbeat(join_request("b", ["orders"]), 1000, METADATA)
    c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 1100, METADATA)
    assert c.next_deadline_ms() == 6100
    # a keeps heartbeating without revoking: its session lives, the revocation times out.
    c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 4000, METADATA)
    assert c.expire(6099).records == ()
    c.expire(6100)
    assert set(c.groups[GROUP].members) == {"b"}
    b = response_of(c.consumer_group_heartbeat(heartbeat_request("b", 2, {}), 6200, METADATA))
    assert (b.member_epoch, assigned(b)) == (3, {"orders": [0, 1, 2, 3]})


def test_new_partitions_bump_the_group_epoch_and_are_assigned():
    c = coordinator()
    c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, METADATA)
    grown = topics(orders=6)
    a = response_of(
        c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 100, grown)
    )
    assert (a.member_epoch, assigned(a)) == (2, {"orders": [0, 1, 2, 3, 4, 5]})


def test_a_topic_created_later_is_assigned_when_it_appears():
    c = coordinator()
    c.consumer_group_heartbeat(join_request("a", ["orders", "payments"]), 0, METADATA)
    a = response_of(
        c.consumer_group_heartbeat(
            heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 50, METADATA
        )
    )
    assert (a.member_epoch, a.assignment) == (1, None)
    more = topics(orders=4, payments=2)
    a = response_of(
        c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 100, more)
    )
    assert (a.member_epoch, assigned(a)) == (2, {"orders": [0, 1, 2, 3], "payments": [0, 1]})


def test_dropping_a_topic_from_the_subscription_revokes_it():
    c = coordinator()
    both = topics(orders=2, payments=2)
    c.consumer_group_heartbeat(join_request("a", ["orders", "payments"]), 0, both)
    request = heartbeat_request("a", 1, {"orders": [0, 1], "payments": [0, 1]}, names=["orders"])
    a = response_of(c.consumer_group_heartbeat(request, 100, both))
    assert (a.member_epoch, assigned(a)) == (1, {"orders": [0, 1]})
    a = response_of(
        c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1]}), 200, both)
    )
    assert a.member_epoch == 2


def test_regex_subscription_follows_topics_as_they_are_created():
    c = coordinator()
    metadata = topics(**{"orders-eu": 1, "payments": 1})
    request = join_request("a", None, regex="orders-.*")
    a = response_of(c.consumer_group_heartbeat(request, 0, metadata))
    assert assigned(a) == {"orders-eu": [0]}
    metadata = topics(**{"orders-eu": 1, "orders-us": 2, "payments": 1})
    a = response_of(
        c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders-eu": [0]}), 100, metadata)
    )
    assert (a.member_epoch, assigned(a)) == (2, {"orders-eu": [0], "orders-us": [0, 1]})
    assert set(c.groups[GROUP].resolved_regular_expressions["orders-.*"].topics) == {
        "orders-eu",
        "orders-us",
    }


def test_regex_resolves_only_to_the_topics_the_member_may_describe():
    c = coordinator()
    metadata = topics(**{"orders-eu": 1, "orders-us": 1})
    request = join_request("a", None, regex="orders-.*")
    a = response_of(
        c.consumer_group_heartbeat(request, 0, metadata, describable=lambda t: t != "orders-us")
    )
    assert assigned(a) == {"orders-eu": [0]}
    assert c.groups[GROUP].resolved_regular_expressions["orders-.*"].topics == {"orders-eu"}


def test_regex_uses_re2_full_match_semantics():
    c = coordinator()
    metadata = topics(orders=1, **{"orders-eu": 1})
    a = response_of(
        c.consumer_group_heartbeat(join_request("a", None, regex="orders"), 0, metadata)
    )
    assert assigned(a) == {"orders": [0]}  # a full match, as RE2/J's matches()
    with pytest.raises(KafkaError) as e:  # lookbehind: valid in Python's re, not in RE2
        c.consumer_group_heartbeat(join_request("b", None, regex="(?<=x)orders"), 0, metadata)
    assert e.value.code == ErrorCode.INVALID_REGULAR_EXPRESSION


@pytest.mark.parametrize(
    ("request_changes", "code"),
    [
        ({"group_id": ""}, ErrorCode.INVALID_REQUEST),
        ({"member_id": ""}, ErrorCode.INVALID_REQUEST),
        ({"rebalance_timeout_ms": -1}, ErrorCode.INVALID_REQUEST),
        ({"topic_partitions": None}, ErrorCode.INVALID_REQUEST),
        ({"subscribed_topic_names": None}, ErrorCode.INVALID_REQUEST),
        ({"instance_id": ""}, ErrorCode.INVALID_REQUEST),
        ({"member_epoch": -3}, ErrorCode.INVALID_REQUEST),
        ({"server_assignor": "sticky"}, ErrorCode.UNSUPPORTED_ASSIGNOR),
        ({"subscribed_topic_regex": "("}, ErrorCode.INVALID_REGULAR_EXPRESSION),
    ],
)
def test_invalid_requests_are_refused_and_change_nothing(request_changes, code):
    c = coordinator()
    request = dataclasses.replace(join_request("a", ["orders"]), **request_changes)
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(request, 0, METADATA)
    assert e.value.code == code
    assert c.groups == {}


def test_group_max_size_refuses_a_new_member_but_not_a_known_one():
    c = coordinator(max_size=1)
    c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, METADATA)
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(join_request("b", ["orders"]), 10, METADATA)
    assert e.value.code == ErrorCode.GROUP_MAX_SIZE_REACHED
    c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 20, METADATA)


def test_server_assignor_range_is_chosen_by_the_members():
    c = coordinator()
    metadata = topics(t0=3, t1=3)
    c.consumer_group_heartbeat(join_request("a", ["t0", "t1"], assignor="range"), 0, metadata)
    c.consumer_group_heartbeat(join_request("b", ["t0", "t1"], assignor="range"), 0, metadata)
    group = c.groups[GROUP]
    # Co-partitioned: each member has the same partition numbers of both topics.
    a, b = group.target_assignment["a"], group.target_assignment["b"]
    assert sorted(a.values()) == [frozenset({0, 1}), frozenset({0, 1})]
    assert sorted(b.values()) == [frozenset({2}), frozenset({2})]


def test_config_names_the_setting_it_refuses():
    with pytest.raises(ValueError, match=r"group\.consumer\.assignors"):
        ConsumerGroupConfig(assignors=("cooperative-sticky",))
    with pytest.raises(ValueError, match=r"group\.consumer\.session\.timeout\.ms"):
        ConsumerGroupConfig(session_timeout_ms=0)
    with pytest.raises(ValueError, match=r"must be less than group\.consumer\.session"):
        ConsumerGroupConfig(session_timeout_ms=5000, heartbeat_interval_ms=5000)


def test_v0_join_without_member_id_gets_one_from_the_coordinator():
    c = coordinator()
    request = dataclasses.replace(join_request("", ["orders"]))
    response = response_of(c.consumer_group_heartbeat(request, 0, METADATA, version=0))
    assert response.member_id
    assert set(c.groups[GROUP].members) == {response.member_id}
    with pytest.raises(KafkaError) as e:  # v1: the client names itself (KIP-1082)
        c.consumer_group_heartbeat(request, 0, METADATA, version=1)
    assert e.value.code == ErrorCode.INVALID_REQUEST


def test_dynamic_member_rejoining_with_epoch_0_starts_over():
    c = coordinator()
    two_members_stable(c)
    epoch = c.groups[GROUP].group_epoch
    result = c.consumer_group_heartbeat(join_request("b", ["orders"]), 2000, METADATA)
    # b's old self is removed first (its partitions released), then b joins anew.
    assert [rec.value for rec in result.records[:3]] == [None, None, None]
    b = response_of(result)
    assert (b.member_epoch, assigned(b)) == (epoch + 1, {"orders": [2, 3]})


def test_revoking_in_time_cancels_the_rebalance_timeout():
    c = coordinator(session_timeout_ms=60000)
    two_members_stable(c)  # a revoked at 1200, before its 30 s rebalance timeout
    assert c.next_deadline_ms() == 1200 + 60000
    c.expire(1100 + 30000)
    assert set(c.groups[GROUP].members) == {"a", "b"}
