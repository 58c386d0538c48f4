"""ConsumerGroupDescribe (key 69): the members, epochs and assignments of KIP-848 groups.

Spec: ConsumerGroupDescribeRequest.json / ConsumerGroupDescribeResponse.json. Versions
0-1 (Kafka 4.1's), flexible from 0.

Version notes:
  v0: the first version (KIP-848). `group_state` is a consumer group's state (Empty,
      Assigning, Reconciling, Stable, Dead); each member carries its current assignment and
      its target assignment, topics by id and by name.
  v1: each member's `member_type` (KIP-1099): 0 a classic member (one that speaks
      JoinGroup/SyncGroup inside a consumer group after an online upgrade), 1 a consumer
      member, -1 unknown. The request is unchanged.
"""

from __future__ import annotations

import uuid

from protocol.errors import ErrorCode
from protocol.messages import AUTHORIZED_OPERATIONS_OMITTED
from protocol.schema import Array, Bool, Int8, Int16, Int32, Message, String, Struct, Uuid, wire

# Member.member_type values (Kafka's ConsumerGroupDescribeResponse).
UNKNOWN_MEMBER_TYPE = -1
CLASSIC_MEMBER_TYPE = 0
CONSUMER_MEMBER_TYPE = 1


class ConsumerGroupDescribeRequest(Message):
    API_KEY = 69
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 0
    group_ids: list[str] = wire(Array(String))
    include_authorized_operations: bool = wire(Bool)


class TopicPartitions(Struct):
    topic_id: uuid.UUID = wire(Uuid)
    topic_name: str = wire(String)
    partitions: list[int] = wire(Array(Int32))


class Assignment(Struct):
    topic_partitions: list[TopicPartitions] = wire(Array(TopicPartitions))


class Member(Struct):
    member_id: str = wire(String)
    instance_id: str | None = wire(String, nullable=0, default=None)
    rack_id: str | None = wire(String, nullable=0, default=None)
    member_epoch: int = wire(Int32)
    client_id: str = wire(String)
    client_host: str = wire(String)
    subscribed_topic_names: list[str] = wire(Array(String))
    subscribed_topic_regex: str | None = wire(String, nullable=0, default=None)
    assignment: Assignment = wire(Assignment)
    target_assignment: Assignment = wire(Assignment)
    member_type: int = wire(Int8, since=1, default=UNKNOWN_MEMBER_TYPE)


class DescribedGroup(Struct):
    error_code: int = wire(Int16)
    error_message: str | None = wire(String, nullable=0, default=None)
    group_id: str = wire(String)
    group_state: str = wire(String)
    group_epoch: int = wire(Int32)
    assignment_epoch: int = wire(Int32)
    assignor_name: str = wire(String)
    members: list[Member] = wire(Array(Member))
    authorized_operations: int = wire(Int32, default=AUTHORIZED_OPERATIONS_OMITTED)


class ConsumerGroupDescribeResponse(Message):
    API_KEY = 69
    VERSIONS = range(0, 2)
    FLEXIBLE_FROM = 0
    throttle_time_ms: int = wire(Int32)
    groups: list[DescribedGroup] = wire(Array(DescribedGroup))


def error_response(
    request: ConsumerGroupDescribeRequest, code: ErrorCode, version: int
) -> ConsumerGroupDescribeResponse:
    """One DescribedGroup per requested group id carrying the code (Kafka's
    ConsumerGroupDescribeRequest.getErrorResponse)."""
    return ConsumerGroupDescribeResponse(
        groups=[
            DescribedGroup(error_code=code, group_id=group_id) for group_id in request.group_ids
        ]
    )
