"""The APIs Kafka 4.1 serves that kmock added with it: DescribeTopicPartitions (75),
ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46) and
AlterReplicaLogDirs (34). Each version round-trips, and matches byte for byte what
kafka-python's own codec (generated from Kafka's JSON) writes for the same message, in both
directions: requests as a client sends them, responses as a broker answers.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from kafka.protocol.admin import cluster as kc
from kafka.protocol.admin import topics as kt

from protocol.errors import ErrorCode
from protocol.messages import (
    alter_partition_reassignments as apr,
)
from protocol.messages import (
    alter_replica_log_dirs as arld,
)
from protocol.messages import (
    describe_topic_partitions as dtp,
)
from protocol.messages import (
    elect_leaders as el,
)
from protocol.messages import (
    list_partition_reassignments as lpr,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip, for_version

TOPIC_ID = uuid.UUID("0f6b3c1e-9a55-4d0e-8f43-2d9a2b6c1a77")


def _k(module: Any, name: str) -> Any:
    for m in (kt, kc):
        if hasattr(m, name):
            return getattr(m, name)
    raise AssertionError(f"kafka-python has no {name}")  # pragma: no cover


# (ours, kafka-python's, version range): kafka-python messages take the same field names.
CASES: list[tuple[Any, Any, range]] = []


def case(ours: Any, theirs: Any) -> None:
    CASES.append((ours, theirs, type(ours).VERSIONS))


KDTP, KDTPR = _k(kt, "DescribeTopicPartitionsRequest"), _k(kt, "DescribeTopicPartitionsResponse")
case(
    dtp.DescribeTopicPartitionsRequest(
        topics=[dtp.TopicRequest(name="a")],
        response_partition_limit=5,
        cursor=dtp.Cursor(topic_name="a", partition_index=2),
    ),
    KDTP(
        topics=[KDTP.TopicRequest(name="a")],
        response_partition_limit=5,
        cursor=KDTP.Cursor(topic_name="a", partition_index=2),
    ),
)
case(
    dtp.DescribeTopicPartitionsRequest(topics=[], cursor=None),
    KDTP(topics=[], response_partition_limit=2000, cursor=None),
)
_T = KDTPR.DescribeTopicPartitionsResponseTopic
case(
    dtp.DescribeTopicPartitionsResponse(
        topics=[
            dtp.DescribeTopicPartitionsResponseTopic(
                error_code=0,
                name="a",
                topic_id=TOPIC_ID,
                is_internal=False,
                partitions=[
                    dtp.DescribeTopicPartitionsResponsePartition(
                        error_code=0,
                        partition_index=0,
                        leader_id=1,
                        leader_epoch=3,
                        replica_nodes=[1],
                        isr_nodes=[1],
                        eligible_leader_replicas=[],
                        last_known_elr=None,
                        offline_replicas=[],
                    )
                ],
                topic_authorized_operations=3576,
            )
        ],
        next_cursor=dtp.Cursor(topic_name="b", partition_index=0),
    ),
    KDTPR(
        throttle_time_ms=0,
        topics=[
            _T(
                error_code=0,
                name="a",
                topic_id=TOPIC_ID,
                is_internal=False,
                partitions=[
                    _T.DescribeTopicPartitionsResponsePartition(
                        error_code=0,
                        partition_index=0,
                        leader_id=1,
                        leader_epoch=3,
                        replica_nodes=[1],
                        isr_nodes=[1],
                        eligible_leader_replicas=[],
                        last_known_elr=None,
                        offline_replicas=[],
                    )
                ],
                topic_authorized_operations=3576,
            )
        ],
        next_cursor=KDTPR.Cursor(topic_name="b", partition_index=0),
    ),
)

KEL, KELR = _k(kc, "ElectLeadersRequest"), _k(kc, "ElectLeadersResponse")
case(
    el.ElectLeadersRequest(
        election_type=0,
        topic_partitions=[el.TopicPartitions(topic="t", partitions=[0, 1])],
        timeout_ms=1000,
    ),
    KEL(
        election_type=0,
        topic_partitions=[KEL.TopicPartitions(topic="t", partitions=[0, 1])],
        timeout_ms=1000,
    ),
)
_R = KELR.ReplicaElectionResult
case(
    el.ElectLeadersResponse(
        error_code=0,
        replica_election_results=[
            el.ReplicaElectionResult(
                topic="t",
                partition_result=[
                    el.PartitionResult(
                        partition_id=0, error_code=ErrorCode.ELECTION_NOT_NEEDED, error_message="x"
                    )
                ],
            )
        ],
    ),
    KELR(
        throttle_time_ms=0,
        error_code=0,
        replica_election_results=[
            _R(
                topic="t",
                partition_result=[
                    _R.PartitionResult(partition_id=0, error_code=84, error_message="x")
                ],
            )
        ],
    ),
)

KAPR, KAPRR = (
    _k(kc, "AlterPartitionReassignmentsRequest"),
    _k(kc, "AlterPartitionReassignmentsResponse"),
)
_RT = KAPR.ReassignableTopic
case(
    apr.AlterPartitionReassignmentsRequest(
        timeout_ms=1000,
        allow_replication_factor_change=False,
        topics=[
            apr.ReassignableTopic(
                name="t",
                partitions=[
                    apr.ReassignablePartition(partition_index=0, replicas=[1]),
                    apr.ReassignablePartition(partition_index=1, replicas=None),
                ],
            )
        ],
    ),
    KAPR(
        timeout_ms=1000,
        allow_replication_factor_change=False,
        topics=[
            _RT(
                name="t",
                partitions=[
                    _RT.ReassignablePartition(partition_index=0, replicas=[1]),
                    _RT.ReassignablePartition(partition_index=1, replicas=None),
                ],
            )
        ],
    ),
)
_RR = KAPRR.ReassignableTopicResponse
case(
    apr.AlterPartitionReassignmentsResponse(
        allow_replication_factor_change=False,
        error_code=0,
        error_message=None,
        responses=[
            apr.ReassignableTopicResponse(
                name="t",
                partitions=[
                    apr.ReassignablePartitionResponse(
                        partition_index=0, error_code=85, error_message="none"
                    )
                ],
            )
        ],
    ),
    KAPRR(
        throttle_time_ms=0,
        allow_replication_factor_change=False,
        error_code=0,
        error_message=None,
        responses=[
            _RR(
                name="t",
                partitions=[
                    _RR.ReassignablePartitionResponse(
                        partition_index=0, error_code=85, error_message="none"
                    )
                ],
            )
        ],
    ),
)

KLPR, KLPRR = (
    _k(kc, "ListPartitionReassignmentsRequest"),
    _k(kc, "ListPartitionReassignmentsResponse"),
)
case(
    lpr.ListPartitionReassignmentsRequest(
        timeout_ms=1000,
        topics=[lpr.ListPartitionReassignmentsTopics(name="t", partition_indexes=[0])],
    ),
    KLPR(
        timeout_ms=1000,
        topics=[KLPR.ListPartitionReassignmentsTopics(name="t", partition_indexes=[0])],
    ),
)
case(
    lpr.ListPartitionReassignmentsResponse(error_code=0, error_message=None, topics=[]),
    KLPRR(throttle_time_ms=0, error_code=0, error_message=None, topics=[]),
)

KARLD, KARLDR = _k(kc, "AlterReplicaLogDirsRequest"), _k(kc, "AlterReplicaLogDirsResponse")
_D = KARLD.AlterReplicaLogDir
case(
    arld.AlterReplicaLogDirsRequest(
        dirs=[
            arld.AlterReplicaLogDir(
                path="/data",
                topics=[arld.AlterReplicaLogDirTopic(name="t", partitions=[0, 2])],
            )
        ]
    ),
    KARLD(
        dirs=[_D(path="/data", topics=[_D.AlterReplicaLogDirTopic(name="t", partitions=[0, 2])])]
    ),
)
_TR = KARLDR.AlterReplicaLogDirTopicResult
case(
    arld.AlterReplicaLogDirsResponse(
        results=[
            arld.AlterReplicaLogDirTopicResult(
                topic_name="t",
                partitions=[
                    arld.AlterReplicaLogDirPartitionResult(partition_index=0, error_code=57)
                ],
            )
        ]
    ),
    KARLDR(
        throttle_time_ms=0,
        results=[
            _TR(
                topic_name="t",
                partitions=[
                    _TR.AlterReplicaLogDirPartitionResult(partition_index=0, error_code=57)
                ],
            )
        ],
    ),
)

PARAMS = [(ours, theirs, v) for ours, theirs, versions in CASES for v in versions]


@pytest.mark.parametrize(("ours", "theirs", "version"), PARAMS)
def test_same_bytes_as_kafka_python(ours: Any, theirs: Any, version: int) -> None:
    msg = for_version(ours, version)
    assert_roundtrip(msg, version)
    assert encode(msg, version) == theirs.encode(version=version)
    assert decode(type(ours), version, theirs.encode(version=version)) == msg


def test_versions_are_kafka_41s() -> None:
    assert range(0, 1) == dtp.DescribeTopicPartitionsRequest.VERSIONS
    assert range(0, 3) == el.ElectLeadersRequest.VERSIONS
    assert range(0, 2) == apr.AlterPartitionReassignmentsRequest.VERSIONS
    assert range(0, 1) == lpr.ListPartitionReassignmentsRequest.VERSIONS
    assert range(1, 3) == arld.AlterReplicaLogDirsRequest.VERSIONS


def test_error_responses_place_the_code_where_each_api_keeps_it() -> None:
    code = ErrorCode.NOT_CONTROLLER
    request = el.ElectLeadersRequest(
        election_type=0, topic_partitions=[el.TopicPartitions(topic="t", partitions=[3])]
    )
    v0 = el.error_response(request, code, 0)
    assert v0.replica_election_results[0].partition_result[0].error_code == code
    assert el.error_response(request, code, 2).error_code == code
    assert lpr.error_response(lpr.ListPartitionReassignmentsRequest(), code, 0).error_code == code
    reassign = apr.AlterPartitionReassignmentsRequest(
        topics=[
            apr.ReassignableTopic(
                name="t", partitions=[apr.ReassignablePartition(partition_index=0)]
            )
        ]
    )
    answer = apr.error_response(reassign, code, 1)
    assert answer.error_code == answer.responses[0].partitions[0].error_code == code
    dirs = arld.AlterReplicaLogDirsRequest(
        dirs=[
            arld.AlterReplicaLogDir(
                path="/d", topics=[arld.AlterReplicaLogDirTopic(name="t", partitions=[1])]
            )
        ]
    )
    assert arld.error_response(dirs, code, 2).results[0].partitions[0].error_code == code
    described = dtp.error_response(
        dtp.DescribeTopicPartitionsRequest(topics=[dtp.TopicRequest(name="t")]), code, 0
    )
    assert described.topics[0].error_code == code
