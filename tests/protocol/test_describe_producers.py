from protocol.errors import ErrorCode
from protocol.messages.describe_producers import (
    DescribeProducersRequest,
    DescribeProducersResponse,
    PartitionResponse,
    ProducerState,
    TopicRequest,
    TopicResponse,
    error_response,
)
from protocol.schema import encode
from tests.protocol.roundtrip import assert_roundtrip
from tests.protocol.tagged import assert_unknown_top_level_tag_is_skipped

REQUEST = DescribeProducersRequest(topics=[TopicRequest(name="orders", partition_indexes=[0, 1])])
RESPONSE = DescribeProducersResponse(
    throttle_time_ms=0,
    topics=[
        TopicResponse(
            name="orders",
            partitions=[
                PartitionResponse(
                    partition_index=0,
                    error_code=0,
                    active_producers=[
                        ProducerState(
                            producer_id=4000,
                            producer_epoch=2,
                            last_sequence=9,
                            last_timestamp=1_700_000_000_000,
                            coordinator_epoch=0,
                            current_txn_start_offset=17,
                        ),
                        ProducerState(producer_id=4001, producer_epoch=0, coordinator_epoch=-1),
                    ],
                ),
                PartitionResponse(
                    partition_index=1,
                    error_code=ErrorCode.NOT_LEADER_OR_FOLLOWER,
                    error_message="not here",
                ),
            ],
        )
    ],
)


def test_versions():
    assert DescribeProducersRequest.VERSIONS == DescribeProducersResponse.VERSIONS == range(1)
    assert DescribeProducersRequest.FLEXIBLE_FROM == 0


def test_roundtrip():
    assert_roundtrip(REQUEST, 0)
    assert_roundtrip(RESPONSE, 0)


def test_defaults_are_kafkas():
    state = ProducerState(producer_id=1, producer_epoch=0, coordinator_epoch=0)
    assert (state.last_sequence, state.last_timestamp, state.current_txn_start_offset) == (
        -1,
        -1,
        -1,
    )
    assert PartitionResponse(partition_index=0, error_code=0).error_message is None


def test_request_bytes():
    assert encode(REQUEST, 0).hex() == ("0207" + b"orders".hex() + "0300000000000000010000")


def test_unknown_tagged_field_is_skipped():
    assert_unknown_top_level_tag_is_skipped(REQUEST, 0)
    assert_unknown_top_level_tag_is_skipped(RESPONSE, 0)


def test_error_response_sets_every_partition():
    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert error_response(REQUEST, code, 0) == DescribeProducersResponse(
        topics=[
            TopicResponse(
                name="orders",
                partitions=[
                    PartitionResponse(partition_index=0, error_code=code),
                    PartitionResponse(partition_index=1, error_code=code),
                ],
            )
        ]
    )
