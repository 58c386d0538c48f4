import dataclasses
import uuid

import pytest

from protocol.errors import ErrorCode
from protocol.messages.consumer_group_describe import (
    CLASSIC_MEMBER_TYPE,
    UNKNOWN_MEMBER_TYPE,
    Assignment,
    ConsumerGroupDescribeRequest,
    ConsumerGroupDescribeResponse,
    DescribedGroup,
    Member,
    TopicPartitions,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip

TOPIC_A = uuid.UUID("0f4d0c4e-83f2-4b9a-9d47-1a6c2f5e9b01")

REQUEST = ConsumerGroupDescribeRequest(
    group_ids=["group-a", "group-b"], include_authorized_operations=True
)
RESPONSE = ConsumerGroupDescribeResponse(
    throttle_time_ms=3,
    groups=[
        DescribedGroup(
            error_code=0,
            group_id="group-a",
            group_state="Reconciling",
            group_epoch=7,
            assignment_epoch=7,
            assignor_name="uniform",
            members=[
                Member(
                    member_id="m-1",
                    instance_id="instance-1",
                    rack_id=None,
                    member_epoch=6,
                    client_id="rdkafka",
                    client_host="/127.0.0.1",
                    subscribed_topic_names=["orders"],
                    subscribed_topic_regex="orders-.*",
                    assignment=Assignment(
                        topic_partitions=[
                            TopicPartitions(topic_id=TOPIC_A, topic_name="orders", partitions=[1])
                        ]
                    ),
                    target_assignment=Assignment(
                        topic_partitions=[
                            TopicPartitions(
                                topic_id=TOPIC_A, topic_name="orders", partitions=[1, 2]
                            )
                        ]
                    ),
                )
            ],
            authorized_operations=0,
        ),
        DescribedGroup(
            error_code=ErrorCode.GROUP_ID_NOT_FOUND,
            error_message="group-b is not a consumer group",
            group_id="group-b",
        ),
    ],
)


@pytest.mark.parametrize("version", ConsumerGroupDescribeRequest.VERSIONS)
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_error_response_has_one_group_per_requested_group():
    response = error_response(REQUEST, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, 0)
    assert [(g.group_id, g.error_code, g.members) for g in response.groups] == [
        ("group-a", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []),
        ("group-b", ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []),
    ]
    assert response.groups[0].authorized_operations == -2147483648
    assert_roundtrip(response, 0)


def test_v1_carries_the_member_type_and_v0_leaves_it_out():
    """KIP-1099: one int8 after the target assignment, in v1 only."""
    classic = dataclasses.replace(RESPONSE.groups[0].members[0], member_type=CLASSIC_MEMBER_TYPE)
    group = dataclasses.replace(RESPONSE.groups[0], members=[classic])
    response = dataclasses.replace(RESPONSE, groups=[group])
    assert_roundtrip(response, 1)
    v0, v1 = (encode(response, v) for v in (0, 1))
    assert len(v1) == len(v0) + 1
    assert decode(ConsumerGroupDescribeResponse, 0, v0).groups[0].members[0].member_type == (
        UNKNOWN_MEMBER_TYPE
    )
    assert decode(ConsumerGroupDescribeResponse, 1, v1).groups[0].members[0].member_type == (
        CLASSIC_MEMBER_TYPE
    )
