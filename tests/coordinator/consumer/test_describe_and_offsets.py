"""ConsumerGroupDescribe answers, and the member-epoch checks of OffsetCommit/OffsetFetch."""

import pytest

from coordinator.consumer import ConsumerGroupCoordinator
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.consumer_group_describe import Assignment, TopicPartitions
from tests.coordinator.consumer.builders import (
    GROUP,
    heartbeat_request,
    join_request,
    tid,
    topics,
)

METADATA = topics(orders=4)


def revoking_pair() -> ConsumerGroupCoordinator:
    """a (epoch 1) must revoke orders 2-3 that b (epoch 2) waits for."""
    c = ConsumerGroupCoordinator()
    c.consumer_group_heartbeat(join_request("a", ["orders"]), 0, METADATA, client_id="ca")
    c.consumer_group_heartbeat(
        join_request("b", ["orders"]), 10, METADATA, client_id="cb", client_host="/10.0.0.2"
    )
    c.consumer_group_heartbeat(heartbeat_request("a", 1, {"orders": [0, 1, 2, 3]}), 20, METADATA)
    return c


def orders(partitions: list[int]) -> Assignment:
    return Assignment(
        topic_partitions=[
            TopicPartitions(topic_id=tid("orders"), topic_name="orders", partitions=partitions)
        ]
        if partitions
        else []
    )


def test_describe_shows_epochs_and_current_and_target_assignments():
    c = revoking_pair()
    (group, missing) = c.describe([GROUP, "nope"], METADATA)
    assert (group.error_code, group.group_state, group.group_epoch, group.assignment_epoch) == (
        0,
        "Reconciling",
        2,
        2,
    )
    assert group.assignor_name == "uniform"
    a, b = group.members
    assert (a.member_id, a.member_epoch, a.client_id) == ("a", 1, "ca")
    assert (a.assignment, a.target_assignment) == (orders([0, 1]), orders([0, 1]))
    assert (b.member_id, b.member_epoch, b.client_host) == ("b", 2, "/10.0.0.2")
    assert (b.assignment, b.target_assignment) == (orders([]), orders([2, 3]))
    assert b.subscribed_topic_names == ["orders"]
    assert (missing.group_id, missing.error_code) == ("nope", ErrorCode.GROUP_ID_NOT_FOUND)


def test_offset_commit_with_the_member_epoch_is_accepted_and_a_stale_one_refused():
    c = revoking_pair()
    c.validate_offset_commit(GROUP, "b", 2, api_version=9)
    c.validate_offset_commit(GROUP, "a", 1, api_version=9)
    with pytest.raises(KafkaError) as e:
        c.validate_offset_commit(GROUP, "b", 1, api_version=9)
    assert e.value.code == ErrorCode.STALE_MEMBER_EPOCH
    with pytest.raises(KafkaError) as e:
        c.validate_offset_commit(GROUP, "zz", 2, api_version=9)
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID
    with pytest.raises(KafkaError) as e:
        c.validate_offset_commit(GROUP, "b", 2, api_version=8)
    assert e.value.code == ErrorCode.UNSUPPORTED_VERSION
    c.validate_offset_commit(GROUP, "b", 2, api_version=8, is_transactional=True)
    with pytest.raises(KafkaError) as e:  # an admin commit while the group has members
        c.validate_offset_commit(GROUP, "", -1, api_version=9)
    assert e.value.code == ErrorCode.UNKNOWN_MEMBER_ID


def test_admin_commit_to_an_empty_group_and_unknown_groups():
    c = revoking_pair()
    c.consumer_group_heartbeat(heartbeat_request("a", -1), 30, METADATA)
    c.consumer_group_heartbeat(heartbeat_request("b", -1), 30, METADATA)
    c.validate_offset_commit(GROUP, "", -1, api_version=9)
    with pytest.raises(KafkaError) as e:
        c.validate_offset_commit("other", "", -1, api_version=9)
    assert e.value.code == ErrorCode.GROUP_ID_NOT_FOUND


def test_offset_fetch_checks_the_epoch_except_for_the_admin_client():
    c = revoking_pair()
    c.validate_offset_fetch(GROUP, "b", 2)
    c.validate_offset_fetch(GROUP, "", -1)
    with pytest.raises(KafkaError) as e:
        c.validate_offset_fetch(GROUP, "b", 3)
    assert e.value.code == ErrorCode.STALE_MEMBER_EPOCH


def test_delete_group_only_when_empty():
    c = revoking_pair()
    with pytest.raises(KafkaError) as e:
        c.delete_group(GROUP)
    assert e.value.code == ErrorCode.NON_EMPTY_GROUP
    c.consumer_group_heartbeat(heartbeat_request("a", -1), 30, METADATA)
    c.consumer_group_heartbeat(heartbeat_request("b", -1), 30, METADATA)
    result = c.delete_group(GROUP)
    assert all(rec.value is None for rec in result.records)
    assert c.groups == {}
