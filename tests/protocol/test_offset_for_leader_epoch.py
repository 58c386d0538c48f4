from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.offset_for_leader_epoch import (
    EpochEndOffset,
    OffsetForLeaderEpochRequest,
    OffsetForLeaderEpochResponse,
    OffsetForLeaderPartition,
    OffsetForLeaderTopic,
    OffsetForLeaderTopicResult,
    error_response,
)
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = OffsetForLeaderEpochRequest(
    replica_id=-1,
    topics=[
        OffsetForLeaderTopic(
            topic="orders",
            partitions=[
                OffsetForLeaderPartition(partition=0, current_leader_epoch=7, leader_epoch=6),
                OffsetForLeaderPartition(partition=1, leader_epoch=2),
            ],
        ),
        OffsetForLeaderTopic(topic="payments", partitions=[]),
    ],
)

RESPONSE = OffsetForLeaderEpochResponse(
    throttle_time_ms=5,
    topics=[
        OffsetForLeaderTopicResult(
            topic="orders",
            partitions=[
                EpochEndOffset(error_code=0, partition=0, leader_epoch=6, end_offset=1500),
                EpochEndOffset(error_code=ErrorCode.FENCED_LEADER_EPOCH, partition=1),
            ],
        )
    ],
)


def test_versions():
    assert (
        OffsetForLeaderEpochRequest.VERSIONS == OffsetForLeaderEpochResponse.VERSIONS == range(2, 5)
    )
    assert (
        OffsetForLeaderEpochRequest.FLEXIBLE_FROM == OffsetForLeaderEpochResponse.FLEXIBLE_FROM == 4
    )


@pytest.mark.parametrize("version", OffsetForLeaderEpochRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", OffsetForLeaderEpochResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


def test_golden_kafka_python_v2():
    assert decode_golden(OffsetForLeaderEpochRequest, "offset_for_leader_epoch_v2.hex") == (
        2,
        OffsetForLeaderEpochRequest(
            replica_id=-2,
            topics=[
                OffsetForLeaderTopic(
                    topic="orders",
                    partitions=[
                        OffsetForLeaderPartition(
                            partition=0, current_leader_epoch=7, leader_epoch=6
                        ),
                        OffsetForLeaderPartition(
                            partition=1, current_leader_epoch=-1, leader_epoch=2
                        ),
                    ],
                )
            ],
        ),
    )


def test_golden_kafka_python_v4():
    assert decode_golden(OffsetForLeaderEpochRequest, "offset_for_leader_epoch_v4.hex") == (
        4,
        OffsetForLeaderEpochRequest(
            replica_id=-1,
            topics=[
                OffsetForLeaderTopic(
                    topic="orders",
                    partitions=[
                        OffsetForLeaderPartition(
                            partition=0, current_leader_epoch=7, leader_epoch=6
                        ),
                        OffsetForLeaderPartition(
                            partition=1, current_leader_epoch=-1, leader_epoch=2
                        ),
                    ],
                )
            ],
        ),
    )


@pytest.mark.parametrize("version", OffsetForLeaderEpochRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_partition(version):
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert error_response(REQUEST, code, version) == OffsetForLeaderEpochResponse(
        topics=[
            OffsetForLeaderTopicResult(
                topic="orders",
                partitions=[
                    EpochEndOffset(error_code=code, partition=0, leader_epoch=-1, end_offset=-1),
                    EpochEndOffset(error_code=code, partition=1, leader_epoch=-1, end_offset=-1),
                ],
            ),
            OffsetForLeaderTopicResult(topic="payments", partitions=[]),
        ]
    )
