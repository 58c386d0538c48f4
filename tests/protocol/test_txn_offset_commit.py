import pytest

from protocol.errors import ErrorCode
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
    TxnOffsetCommitResponsePartition,
    TxnOffsetCommitResponseTopic,
    error_response,
)
from protocol.schema import encode
from tests.protocol.roundtrip import assert_roundtrip, for_version
from tests.protocol.tagged import assert_unknown_top_level_tag_is_skipped

REQUEST = TxnOffsetCommitRequest(
    transactional_id="txn-1",
    group_id="g",
    producer_id=4000,
    producer_epoch=1,
    generation_id=5,
    member_id="m-1",
    group_instance_id="i-1",
    topics=[
        TxnOffsetCommitRequestTopic(
            name="orders",
            partitions=[
                TxnOffsetCommitRequestPartition(
                    partition_index=0,
                    committed_offset=42,
                    committed_leader_epoch=3,
                    committed_metadata=None,
                ),
                TxnOffsetCommitRequestPartition(
                    partition_index=1, committed_offset=7, committed_metadata="meta"
                ),
            ],
        )
    ],
)
RESPONSE = TxnOffsetCommitResponse(
    throttle_time_ms=2,
    topics=[
        TxnOffsetCommitResponseTopic(
            name="orders",
            partitions=[
                TxnOffsetCommitResponsePartition(partition_index=0, error_code=0),
                TxnOffsetCommitResponsePartition(
                    partition_index=1, error_code=ErrorCode.UNKNOWN_MEMBER_ID
                ),
            ],
        )
    ],
)
VERSIONS = TxnOffsetCommitRequest.VERSIONS


def test_versions():
    assert TxnOffsetCommitRequest.VERSIONS == TxnOffsetCommitResponse.VERSIONS == range(5)
    assert TxnOffsetCommitRequest.FLEXIBLE_FROM == TxnOffsetCommitResponse.FLEXIBLE_FROM == 3


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v3_adds_the_group_member_fields():
    v2 = encode(for_version(REQUEST, 2), 2)
    v3 = encode(REQUEST, 3)
    # v3: generation 5, member "m-1" and instance "i-1" between the epoch and the topics.
    assert "00000005046d2d3104692d31" in v3.hex()
    assert "046d2d31" not in v2.hex()


@pytest.mark.parametrize("version", [3, 4])
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_unknown_tagged_field_is_skipped(msg, version):
    assert_unknown_top_level_tag_is_skipped(msg, version)


@pytest.mark.parametrize("version", VERSIONS)
def test_error_response_sets_every_partition(version):
    code = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
    assert error_response(REQUEST, code, version) == TxnOffsetCommitResponse(
        topics=[
            TxnOffsetCommitResponseTopic(
                name="orders",
                partitions=[
                    TxnOffsetCommitResponsePartition(partition_index=0, error_code=code),
                    TxnOffsetCommitResponsePartition(partition_index=1, error_code=code),
                ],
            )
        ]
    )
