"""Capture golden request frames from kafka-python's own protocol classes.

Writes tests/protocol/golden/kafka_python/<api>_v<N>.hex: one request frame per file, as
hex on one line, *without* the int32 size prefix: the request header (v1 below the API's
first flexible version, v2 from it; correlation_id 42, client_id "kafka-python") followed
by the body. That is what `protocol.frames.FrameBuffer.next_frame` yields and
`parse_request_header` reads.

Also writes consumer_protocol_{subscription,assignment}_v<N>.hex: the consumer-protocol
bytes (int16 version + struct, no header) that kafka-python puts in JoinGroup metadata and
SyncGroup assignments.

For each API the versions are the lowest we serve, the first flexible one and the highest.
The values are spelled out again in the tests (tests/protocol/test_<api>.py), which decode
these frames and re-encode the expected messages. Run from the project root:

    /tmp/venv/bin/python scripts/capture_golden_kafka_python.py
"""

from __future__ import annotations

from pathlib import Path

from kafka.protocol.admin.groups import (
    DeleteGroupsRequest,
    DescribeGroupsRequest,
    ListGroupsRequest,
)
from kafka.protocol.consumer.group import (
    HeartbeatRequest,
    JoinGroupRequest,
    LeaveGroupRequest,
    OffsetCommitRequest,
    OffsetDeleteRequest,
    OffsetFetchRequest,
    SyncGroupRequest,
)
from kafka.protocol.consumer.metadata import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafka.protocol.metadata.find_coordinator import FindCoordinatorRequest

OUT = Path(__file__).resolve().parent.parent / "tests" / "protocol" / "golden" / "kafka_python"
CORRELATION_ID = 42
CLIENT_ID = "kafka-python"


def subscriptions() -> dict[int, ConsumerProtocolSubscription]:
    tp = ConsumerProtocolSubscription.TopicPartition
    return {
        0: ConsumerProtocolSubscription(version=0, topics=["orders", "payments"], user_data=None),
        1: ConsumerProtocolSubscription(
            version=1,
            topics=["orders"],
            user_data=b"\x01\x02",
            owned_partitions=[tp(topic="orders", partitions=[0, 2])],
        ),
        3: ConsumerProtocolSubscription(
            version=3,
            topics=["orders", "payments"],
            user_data=None,
            owned_partitions=[
                tp(topic="orders", partitions=[1]),
                tp(topic="payments", partitions=[]),
            ],
            generation_id=7,
            rack_id="rack-a",
        ),
    }


def assignments() -> dict[int, ConsumerProtocolAssignment]:
    tp = ConsumerProtocolAssignment.TopicPartition
    return {
        0: ConsumerProtocolAssignment(
            version=0,
            assigned_partitions=[
                tp(topic="orders", partitions=[0, 1]),
                tp(topic="payments", partitions=[3]),
            ],
            user_data=None,
        ),
        3: ConsumerProtocolAssignment(
            version=3, assigned_partitions=[tp(topic="orders", partitions=[2])], user_data=b"ud"
        ),
    }


def requests() -> dict[str, dict[int, object]]:
    sub = {v: s.encode() for v, s in subscriptions().items()}
    asg = {v: a.encode() for v, a in assignments().items()}
    jproto = JoinGroupRequest.JoinGroupRequestProtocol
    sassign = SyncGroupRequest.SyncGroupRequestAssignment
    member = LeaveGroupRequest.MemberIdentity
    ctopic = OffsetCommitRequest.OffsetCommitRequestTopic
    cpart = ctopic.OffsetCommitRequestPartition
    ftopic = OffsetFetchRequest.OffsetFetchRequestTopic
    fgroup = OffsetFetchRequest.OffsetFetchRequestGroup
    ftopics = fgroup.OffsetFetchRequestTopics
    dtopic = OffsetDeleteRequest.OffsetDeleteRequestTopic
    dpart = dtopic.OffsetDeleteRequestPartition
    return {
        "find_coordinator": {
            0: FindCoordinatorRequest(key="group-a"),
            3: FindCoordinatorRequest(key="txn-1", key_type=1),
            6: FindCoordinatorRequest(key_type=0, coordinator_keys=["group-a", "group-b"]),
        },
        "join_group": {
            0: JoinGroupRequest(
                group_id="group-a",
                session_timeout_ms=10000,
                member_id="",
                protocol_type="consumer",
                protocols=[jproto(name="range", metadata=sub[0])],
            ),
            6: JoinGroupRequest(
                group_id="group-a",
                session_timeout_ms=45000,
                rebalance_timeout_ms=300000,
                member_id="kafka-python-1-abc",
                group_instance_id="instance-1",
                protocol_type="consumer",
                protocols=[
                    jproto(name="range", metadata=sub[1]),
                    jproto(name="roundrobin", metadata=sub[1]),
                ],
            ),
            9: JoinGroupRequest(
                group_id="group-a",
                session_timeout_ms=45000,
                rebalance_timeout_ms=300000,
                member_id="m-1",
                group_instance_id=None,
                protocol_type="consumer",
                protocols=[jproto(name="cooperative-sticky", metadata=sub[3])],
                reason="rebalance needed",
            ),
        },
        "sync_group": {
            0: SyncGroupRequest(
                group_id="group-a",
                generation_id=3,
                member_id="m-1",
                assignments=[
                    sassign(member_id="m-1", assignment=asg[0]),
                    sassign(member_id="m-2", assignment=asg[3]),
                ],
            ),
            4: SyncGroupRequest(
                group_id="group-a",
                generation_id=3,
                member_id="m-2",
                group_instance_id="instance-2",
                assignments=[],
            ),
            5: SyncGroupRequest(
                group_id="group-a",
                generation_id=4,
                member_id="m-1",
                group_instance_id=None,
                protocol_type="consumer",
                protocol_name="range",
                assignments=[sassign(member_id="m-1", assignment=asg[3])],
            ),
        },
        "heartbeat": {
            0: HeartbeatRequest(group_id="group-a", generation_id=3, member_id="m-1"),
            4: HeartbeatRequest(
                group_id="group-a", generation_id=3, member_id="m-1", group_instance_id="instance-1"
            ),
        },
        "leave_group": {
            0: LeaveGroupRequest(group_id="group-a", member_id="m-1"),
            4: LeaveGroupRequest(
                group_id="group-a",
                members=[
                    member(member_id="m-1", group_instance_id=None),
                    member(member_id="", group_instance_id="instance-2"),
                ],
            ),
            5: LeaveGroupRequest(
                group_id="group-a",
                members=[
                    member(member_id="m-1", group_instance_id="instance-1", reason="shutdown")
                ],
            ),
        },
        "offset_commit": {
            2: OffsetCommitRequest(
                group_id="group-a",
                generation_id_or_member_epoch=3,
                member_id="m-1",
                retention_time_ms=-1,
                topics=[
                    ctopic(
                        name="orders",
                        partitions=[
                            cpart(partition_index=0, committed_offset=100, committed_metadata=""),
                            cpart(partition_index=1, committed_offset=200, committed_metadata=None),
                        ],
                    ),
                    ctopic(
                        name="payments",
                        partitions=[
                            cpart(partition_index=3, committed_offset=7, committed_metadata="x")
                        ],
                    ),
                ],
            ),
            8: OffsetCommitRequest(
                group_id="group-a",
                generation_id_or_member_epoch=5,
                member_id="m-1",
                group_instance_id="instance-1",
                topics=[
                    ctopic(
                        name="orders",
                        partitions=[
                            cpart(
                                partition_index=0,
                                committed_offset=1 << 40,
                                committed_leader_epoch=9,
                                committed_metadata=None,
                            )
                        ],
                    )
                ],
            ),
            9: OffsetCommitRequest(
                group_id="group-a",
                generation_id_or_member_epoch=-1,
                member_id="",
                group_instance_id=None,
                topics=[
                    ctopic(
                        name="payments",
                        partitions=[
                            cpart(
                                partition_index=2,
                                committed_offset=0,
                                committed_leader_epoch=-1,
                                committed_metadata="meta",
                            )
                        ],
                    )
                ],
            ),
        },
        "offset_fetch": {
            1: OffsetFetchRequest(
                group_id="group-a",
                topics=[
                    ftopic(name="orders", partition_indexes=[0, 1]),
                    ftopic(name="payments", partition_indexes=[3]),
                ],
            ),
            6: OffsetFetchRequest(group_id="group-a", topics=None),
            9: OffsetFetchRequest(
                groups=[
                    fgroup(
                        group_id="group-a",
                        member_id="m-1",
                        member_epoch=4,
                        topics=[ftopics(name="orders", partition_indexes=[0, 1])],
                    ),
                    fgroup(group_id="group-b", topics=None),
                ],
                require_stable=True,
            ),
        },
        "describe_groups": {
            0: DescribeGroupsRequest(groups=["group-a", "group-b"]),
            5: DescribeGroupsRequest(groups=["group-a"], include_authorized_operations=True),
        },
        "list_groups": {
            0: ListGroupsRequest(),
            3: ListGroupsRequest(),
            5: ListGroupsRequest(states_filter=["Stable", "Empty"], types_filter=["classic"]),
        },
        "delete_groups": {
            0: DeleteGroupsRequest(groups_names=["group-a"]),
            2: DeleteGroupsRequest(groups_names=["group-a", "group-b"]),
        },
        "offset_delete": {
            0: OffsetDeleteRequest(
                group_id="group-a",
                topics=[
                    dtopic(
                        name="orders",
                        partitions=[dpart(partition_index=0), dpart(partition_index=1)],
                    )
                ],
            ),
        },
    }


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for api, by_version in requests().items():
        for version, request in by_version.items():
            request.API_VERSION = version
            request.with_header(correlation_id=CORRELATION_ID, client_id=CLIENT_ID)
            frame = request.encode(version=version, header=True)
            (OUT / f"{api}_v{version}.hex").write_text(frame.hex() + "\n")
    for version, sub in subscriptions().items():
        (OUT / f"consumer_protocol_subscription_v{version}.hex").write_text(
            sub.encode().hex() + "\n"
        )
    for version, a in assignments().items():
        (OUT / f"consumer_protocol_assignment_v{version}.hex").write_text(a.encode().hex() + "\n")


if __name__ == "__main__":
    main()
