from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
    OffsetCommitResponse,
    OffsetCommitResponsePartition,
    OffsetCommitResponseTopic,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip, for_version

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = OffsetCommitRequest.VERSIONS

REQUEST = OffsetCommitRequest(
    group_id="group-a",
    generation_id_or_member_epoch=5,
    member_id="m-1",
    group_instance_id="instance-1",
    retention_time_ms=86400000,
    topics=[
        OffsetCommitRequestTopic(
            name="orders",
            partitions=[
                OffsetCommitRequestPartition(
                    partition_index=0,
                    committed_offset=1 << 40,
                    committed_leader_epoch=3,
                    committed_metadata="m",
                ),
                OffsetCommitRequestPartition(
                    partition_index=1,
                    committed_offset=0,
                    committed_leader_epoch=-1,
                    committed_metadata=None,
                ),
            ],
        ),
        OffsetCommitRequestTopic(name="empty", partitions=[]),
    ],
)
REQUEST_NULLS = OffsetCommitRequest(group_id="group-a", group_instance_id=None, topics=[])
RESPONSE = OffsetCommitResponse(
    throttle_time_ms=2,
    topics=[
        OffsetCommitResponseTopic(
            name="orders",
            partitions=[
                OffsetCommitResponsePartition(partition_index=0, error_code=0),
                OffsetCommitResponsePartition(
                    partition_index=1, error_code=ErrorCode.OFFSET_METADATA_TOO_LARGE
                ),
            ],
        )
    ],
)

CASES = [(REQUEST, VERSIONS), (REQUEST_NULLS, VERSIONS), (RESPONSE, VERSIONS)]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_retention_time_is_carried_by_v2_to_v4_only():
    assert [for_version(REQUEST, v).retention_time_ms for v in VERSIONS] == (
        [-1] + [86400000] * 3 + [-1] * 5
    )


def test_commit_timestamp_is_carried_by_v1_only():
    partition = OffsetCommitRequestPartition(
        partition_index=0, committed_offset=1, commit_timestamp=99
    )
    assert for_version(partition, 1).commit_timestamp == 99
    assert for_version(partition, 2).commit_timestamp == -1


GOLDEN_REQUESTS = {
    2: OffsetCommitRequest(
        group_id="group-a",
        generation_id_or_member_epoch=3,
        member_id="m-1",
        retention_time_ms=-1,
        topics=[
            OffsetCommitRequestTopic(
                name="orders",
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=0, committed_offset=100, committed_metadata=""
                    ),
                    OffsetCommitRequestPartition(
                        partition_index=1, committed_offset=200, committed_metadata=None
                    ),
                ],
            ),
            OffsetCommitRequestTopic(
                name="payments",
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=3, committed_offset=7, committed_metadata="x"
                    )
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
            OffsetCommitRequestTopic(
                name="orders",
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=0,
                        committed_offset=1099511627776,
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
            OffsetCommitRequestTopic(
                name="payments",
                partitions=[
                    OffsetCommitRequestPartition(
                        partition_index=2,
                        committed_offset=0,
                        committed_leader_epoch=-1,
                        committed_metadata="meta",
                    )
                ],
            )
        ],
    ),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"offset_commit_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, OffsetCommitRequest.is_flexible(version))
    assert header == RequestHeader(8, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(OffsetCommitRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_sets_the_code_on_every_partition(version):
    response = error_response(REQUEST, ErrorCode.ILLEGAL_GENERATION, version)
    assert response == OffsetCommitResponse(
        topics=[
            OffsetCommitResponseTopic(
                name="orders",
                partitions=[
                    OffsetCommitResponsePartition(
                        partition_index=0, error_code=ErrorCode.ILLEGAL_GENERATION
                    ),
                    OffsetCommitResponsePartition(
                        partition_index=1, error_code=ErrorCode.ILLEGAL_GENERATION
                    ),
                ],
            ),
            OffsetCommitResponseTopic(name="empty", partitions=[]),
        ]
    )
    assert_roundtrip(response, version)
