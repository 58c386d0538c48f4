"""Static members (instance_id): a member that leaves with epoch -2 keeps its partitions
until its session times out, and a new member id under the same instance id takes them."""

import pytest

from coordinator.consumer import ConsumerGroupConfig, ConsumerGroupCoordinator
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


def static_pair() -> ConsumerGroupCoordinator:
    """s1 (instance i1) owns orders 0-1 and b owns 2-3, both stable at epoch 2."""
    c = ConsumerGroupCoordinator(ConsumerGroupConfig(session_timeout_ms=10000))
    c.consumer_group_heartbeat(join_request("s1", ["orders"], instance_id="i1"), 0, METADATA)
    c.consumer_group_heartbeat(join_request("b", ["orders"]), 100, METADATA)
    c.consumer_group_heartbeat(
        heartbeat_request("s1", 1, {"orders": [0, 1, 2, 3]}, instance_id="i1"), 200, METADATA
    )
    c.consumer_group_heartbeat(
        heartbeat_request("s1", 1, {"orders": [0, 1]}, instance_id="i1"), 300, METADATA
    )
    c.consumer_group_heartbeat(heartbeat_request("b", 2, {}), 400, METADATA)
    return c


def test_static_leave_keeps_the_partitions_and_a_new_member_id_takes_them_over():
    c = static_pair()
    left = c.consumer_group_heartbeat(heartbeat_request("s1", -2, instance_id="i1"), 1000, METADATA)
    assert response_of(left).member_epoch == -2
    group = c.groups[GROUP]
    epoch = group.group_epoch
    # b does not get s1's partitions meanwhile.
    b = response_of(
        c.consumer_group_heartbeat(heartbeat_request("b", 2, {"orders": [2, 3]}), 2000, METADATA)
    )
    assert (b.member_epoch, b.assignment) == (2, None)

    back = response_of(
        c.consumer_group_heartbeat(join_request("s2", ["orders"], instance_id="i1"), 3000, METADATA)
    )
    assert (back.member_id, back.member_epoch, assigned(back)) == ("s2", 2, {"orders": [0, 1]})
    assert set(group.members) == {"s2", "b"}
    assert group.group_epoch == epoch  # a replacement is not a rebalance


def test_static_member_that_does_not_come_back_is_removed_at_its_session_timeout():
    c = static_pair()
    c.consumer_group_heartbeat(heartbeat_request("s1", -2, instance_id="i1"), 1000, METADATA)
    c.consumer_group_heartbeat(heartbeat_request("b", 2, {"orders": [2, 3]}), 9000, METADATA)
    c.expire(10300)  # s1's last session refresh was at 300
    assert set(c.groups[GROUP].members) == {"b"}
    b = response_of(
        c.consumer_group_heartbeat(heartbeat_request("b", 2, {"orders": [2, 3]}), 10400, METADATA)
    )
    assert assigned(b) == {"orders": [0, 1, 2, 3]}


def test_instance_id_held_by_an_active_member_is_unreleased():
    c = static_pair()
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(join_request("s2", ["orders"], instance_id="i1"), 500, METADATA)
    assert e.value.code == ErrorCode.UNRELEASED_INSTANCE_ID


def test_old_member_id_of_a_replaced_instance_is_fenced():
    c = static_pair()
    c.consumer_group_heartbeat(heartbeat_request("s1", -2, instance_id="i1"), 1000, METADATA)
    c.consumer_group_heartbeat(join_request("s2", ["orders"], instance_id="i1"), 1100, METADATA)
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(
            heartbeat_request("s1", 2, {"orders": [0, 1]}, instance_id="i1"), 1200, METADATA
        )
    assert e.value.code == ErrorCode.FENCED_INSTANCE_ID
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(heartbeat_request("s1", -1, instance_id="i1"), 1200, METADATA)
    assert e.value.code == ErrorCode.FENCED_INSTANCE_ID


def test_unknown_instance_id_is_unknown_member_and_static_leave_needs_the_instance_id():
    c = static_pair()
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(heartbeat_request("x", 2, {}, instance_id="i9"), 500, METADATA)
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    with pytest.raises(KafkaError) as e:
        c.consumer_group_heartbeat(heartbeat_request("s1", -2), 500, METADATA)
    assert e.value.code == ErrorCode.INVALID_REQUEST


def test_static_member_leaving_for_good_with_epoch_minus_1_is_removed():
    c = static_pair()
    c.consumer_group_heartbeat(heartbeat_request("s1", -1, instance_id="i1"), 1000, METADATA)
    assert set(c.groups[GROUP].members) == {"b"}
    assert "i1" not in c.groups[GROUP].static_members
