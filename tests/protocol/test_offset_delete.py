from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.frames import RequestHeader, parse_request_header
from protocol.messages.offset_delete import (
    OffsetDeleteRequest,
    OffsetDeleteRequestPartition,
    OffsetDeleteRequestTopic,
    OffsetDeleteResponse,
    OffsetDeleteResponsePartition,
    OffsetDeleteResponseTopic,
    error_response,
)
from protocol.schema import decode, encode
from tests.protocol.roundtrip import assert_roundtrip

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

REQUEST = OffsetDeleteRequest(
    group_id="group-a",
    topics=[
        OffsetDeleteRequestTopic(
            name="orders",
            partitions=[
                OffsetDeleteRequestPartition(partition_index=0),
                OffsetDeleteRequestPartition(partition_index=4),
            ],
        ),
        OffsetDeleteRequestTopic(name="payments", partitions=[]),
    ],
)
RESPONSE = OffsetDeleteResponse(
    error_code=0,
    throttle_time_ms=3,
    topics=[
        OffsetDeleteResponseTopic(
            name="orders",
            partitions=[
                OffsetDeleteResponsePartition(partition_index=0, error_code=0),
                OffsetDeleteResponsePartition(
                    partition_index=4, error_code=ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                ),
            ],
        )
    ],
)


@pytest.mark.parametrize("msg", [REQUEST, RESPONSE])
def test_roundtrip(msg):
    assert_roundtrip(msg, 0)


def test_response_puts_error_code_before_throttle_time():
    data = encode(OffsetDeleteResponse(error_code=69, throttle_time_ms=1), 0)
    assert data.hex() == "0045" + "00000001" + "00000000"


def test_kafka_python_request_frame():
    frame = bytes.fromhex((GOLDEN / "offset_delete_v0.hex").read_text())
    header, pos = parse_request_header(frame, OffsetDeleteRequest.is_flexible(0))
    assert header == RequestHeader(47, 0, 42, "kafka-python")
    expected = OffsetDeleteRequest(
        group_id="group-a",
        topics=[
            OffsetDeleteRequestTopic(
                name="orders",
                partitions=[
                    OffsetDeleteRequestPartition(partition_index=0),
                    OffsetDeleteRequestPartition(partition_index=1),
                ],
            )
        ],
    )
    assert decode(OffsetDeleteRequest, 0, frame, pos) == expected
    assert encode(expected, 0) == frame[pos:]


@pytest.mark.parametrize("version", OffsetDeleteRequest.VERSIONS)
def test_error_response_sets_top_level_code_and_no_topics(version):
    response = error_response(REQUEST, ErrorCode.GROUP_ID_NOT_FOUND, version)
    assert response == OffsetDeleteResponse(error_code=ErrorCode.GROUP_ID_NOT_FOUND, topics=[])
    assert_roundtrip(response, version)
