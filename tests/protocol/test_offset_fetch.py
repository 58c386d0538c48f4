from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
    OffsetFetchResponse,
    OffsetFetchResponseGroup,
    OffsetFetchResponsePartition,
    OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic,
    OffsetFetchResponseTopics,
    error_response,
)
from protocol.schema import DecodeError, decode, encode
from tests.protocol.roundtrip import assert_roundtrip, for_version

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"
VERSIONS = OffsetFetchRequest.VERSIONS

REQUEST = OffsetFetchRequest(
    group_id="group-a",
    topics=[
        OffsetFetchRequestTopic(name="orders", partition_indexes=[0, 1]),
        OffsetFetchRequestTopic(name="payments", partition_indexes=[]),
    ],
    groups=[
        OffsetFetchRequestGroup(
            group_id="group-a",
            member_id="m-1",
            member_epoch=3,
            topics=[OffsetFetchRequestTopics(name="orders", partition_indexes=[2])],
        ),
        OffsetFetchRequestGroup(group_id="group-b", member_id=None, member_epoch=-1, topics=None),
    ],
    require_stable=True,
)
REQUEST_ALL_TOPICS = OffsetFetchRequest(group_id="group-a", topics=None)
RESPONSE = OffsetFetchResponse(
    throttle_time_ms=8,
    topics=[
        OffsetFetchResponseTopic(
            name="orders",
            partitions=[
                OffsetFetchResponsePartition(
                    partition_index=0,
                    committed_offset=42,
                    committed_leader_epoch=5,
                    metadata="m",
                    error_code=0,
                ),
                OffsetFetchResponsePartition(
                    partition_index=1,
                    committed_offset=-1,
                    committed_leader_epoch=-1,
                    metadata=None,
                    error_code=ErrorCode.UNSTABLE_OFFSET_COMMIT,
                ),
            ],
        )
    ],
    error_code=ErrorCode.NONE,
    groups=[
        OffsetFetchResponseGroup(
            group_id="group-a",
            topics=[
                OffsetFetchResponseTopics(
                    name="orders",
                    partitions=[
                        OffsetFetchResponsePartitions(
                            partition_index=2,
                            committed_offset=7,
                            committed_leader_epoch=1,
                            metadata=None,
                            error_code=0,
                        )
                    ],
                )
            ],
            error_code=0,
        ),
        OffsetFetchResponseGroup(
            group_id="group-b", topics=[], error_code=ErrorCode.GROUP_ID_NOT_FOUND
        ),
    ],
)

CASES = [(REQUEST, VERSIONS), (REQUEST_ALL_TOPICS, range(2, 8)), (RESPONSE, VERSIONS)]


@pytest.mark.parametrize(("msg", "version"), [(m, v) for m, vs in CASES for v in vs])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_null_topics_are_refused_in_v1():
    with pytest.raises(ValueError, match="None in a non-nullable array"):
        encode(REQUEST_ALL_TOPICS, 1)
    with pytest.raises(DecodeError):
        decode(OffsetFetchRequest, 1, bytes.fromhex("000167ffffffff"))


def test_v8_moves_everything_into_groups():
    v7, v8 = for_version(REQUEST, 7), for_version(REQUEST, 8)
    assert (v7.groups, v8.group_id, v8.topics) == ([], "", [])
    assert for_version(RESPONSE, 8).topics == []
    assert for_version(RESPONSE, 7).groups == []


GOLDEN_REQUESTS = {
    1: OffsetFetchRequest(
        group_id="group-a",
        topics=[
            OffsetFetchRequestTopic(name="orders", partition_indexes=[0, 1]),
            OffsetFetchRequestTopic(name="payments", partition_indexes=[3]),
        ],
    ),
    6: OffsetFetchRequest(group_id="group-a", topics=None),
    9: OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id="group-a",
                member_id="m-1",
                member_epoch=4,
                topics=[OffsetFetchRequestTopics(name="orders", partition_indexes=[0, 1])],
            ),
            OffsetFetchRequestGroup(
                group_id="group-b", member_id=None, member_epoch=-1, topics=None
            ),
        ],
        require_stable=True,
    ),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_REQUESTS))
def test_kafka_python_request_frame(version):
    frame = bytes.fromhex((GOLDEN / f"offset_fetch_v{version}.hex").read_text())
    header, pos = parse_request_header(frame, OffsetFetchRequest.is_flexible(version))
    assert header == RequestHeader(9, version, 42, "kafka-python")
    expected = GOLDEN_REQUESTS[version]
    assert decode(OffsetFetchRequest, version, frame, pos) == expected
    assert encode(expected, version) == frame[pos:]


def test_error_response_v1_answers_each_partition():
    response = error_response(for_version(REQUEST, 1), ErrorCode.NOT_COORDINATOR, 1)
    decoded = decode(OffsetFetchResponse, 1, assert_roundtrip(response, 1))
    assert decoded == OffsetFetchResponse(
        topics=[
            OffsetFetchResponseTopic(
                name="orders",
                partitions=[
                    OffsetFetchResponsePartition(
                        partition_index=0,
                        committed_offset=-1,
                        metadata="",
                        error_code=ErrorCode.NOT_COORDINATOR,
                    ),
                    OffsetFetchResponsePartition(
                        partition_index=1,
                        committed_offset=-1,
                        metadata="",
                        error_code=ErrorCode.NOT_COORDINATOR,
                    ),
                ],
            ),
            OffsetFetchResponseTopic(name="payments", partitions=[]),
        ]
    )


@pytest.mark.parametrize("version", range(2, 8))
def test_error_response_v2_to_v7_has_the_top_level_code_and_no_topics(version):
    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    response = error_response(for_version(REQUEST, version), code, version)
    data = assert_roundtrip(response, version)
    assert decode(OffsetFetchResponse, version, data) == OffsetFetchResponse(error_code=code)
    throttle_time_ms = "" if version < 3 else "00000000"
    no_topics = "00000000" if version < 6 else "01"  # compact arrays from v6 (flexible)
    tagged_fields = "" if version < 6 else "00"
    assert data.hex() == throttle_time_ms + no_topics + "000e" + tagged_fields


@pytest.mark.parametrize("version", range(2, 8))
def test_error_response_for_all_topics_has_no_partitions(version):
    request = for_version(REQUEST_ALL_TOPICS, version)
    response = error_response(request, ErrorCode.NOT_COORDINATOR, version)
    assert response == OffsetFetchResponse(topics=[], error_code=ErrorCode.NOT_COORDINATOR)


@pytest.mark.parametrize("version", range(8, 10))
def test_error_response_v8_answers_each_group(version):
    response = error_response(for_version(REQUEST, version), ErrorCode.NOT_COORDINATOR, version)
    decoded = decode(OffsetFetchResponse, version, assert_roundtrip(response, version))
    assert decoded == OffsetFetchResponse(
        groups=[
            OffsetFetchResponseGroup(
                group_id="group-a", topics=[], error_code=ErrorCode.NOT_COORDINATOR
            ),
            OffsetFetchResponseGroup(
                group_id="group-b", topics=[], error_code=ErrorCode.NOT_COORDINATOR
            ),
        ]
    )
