import pytest

from protocol.errors import ErrorCode
from protocol.messages.write_txn_markers import (
    WritableTxnMarker,
    WritableTxnMarkerPartitionResult,
    WritableTxnMarkerResult,
    WritableTxnMarkerTopic,
    WritableTxnMarkerTopicResult,
    WriteTxnMarkersRequest,
    WriteTxnMarkersResponse,
    error_response,
)
from protocol.schema import encode
from tests.protocol.roundtrip import assert_roundtrip
from tests.protocol.tagged import assert_unknown_top_level_tag_is_skipped

REQUEST = WriteTxnMarkersRequest(
    markers=[
        WritableTxnMarker(
            producer_id=4000,
            producer_epoch=2,
            transaction_result=True,
            topics=[WritableTxnMarkerTopic(name="orders", partition_indexes=[0, 1])],
            coordinator_epoch=9,
        )
    ]
)
RESPONSE = WriteTxnMarkersResponse(
    markers=[
        WritableTxnMarkerResult(
            producer_id=4000,
            topics=[
                WritableTxnMarkerTopicResult(
                    name="orders",
                    partitions=[WritableTxnMarkerPartitionResult(partition_index=0, error_code=0)],
                )
            ],
        )
    ]
)


def test_versions():
    assert WriteTxnMarkersRequest.VERSIONS == WriteTxnMarkersResponse.VERSIONS == range(2)
    assert WriteTxnMarkersRequest.FLEXIBLE_FROM == WriteTxnMarkersResponse.FLEXIBLE_FROM == 1


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_roundtrip(msg, version):
    assert_roundtrip(msg, version)


def test_v0_request_bytes():
    assert (
        encode(REQUEST, 0).hex()
        == (
            "00000001"  # one marker
            "0000000000000fa0"
            "0002"
            "01"  # producer 4000, epoch 2, COMMIT
            "00000001"
            "0006" + b"orders".hex() + "00000002"
            "00000000"
            "00000001"
            "00000009"  # coordinator epoch
        )
    )


@pytest.mark.parametrize("msg", [REQUEST, RESPONSE], ids=["request", "response"])
def test_unknown_tagged_field_is_skipped(msg):
    assert_unknown_top_level_tag_is_skipped(msg, 1)


@pytest.mark.parametrize("version", [0, 1])
def test_error_response_sets_every_partition_of_every_marker(version):
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    assert error_response(REQUEST, code, version) == WriteTxnMarkersResponse(
        markers=[
            WritableTxnMarkerResult(
                producer_id=4000,
                topics=[
                    WritableTxnMarkerTopicResult(
                        name="orders",
                        partitions=[
                            WritableTxnMarkerPartitionResult(partition_index=0, error_code=code),
                            WritableTxnMarkerPartitionResult(partition_index=1, error_code=code),
                        ],
                    )
                ],
            )
        ]
    )
