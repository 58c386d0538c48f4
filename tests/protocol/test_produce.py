from pathlib import Path

import pytest

from protocol.errors import ErrorCode
from protocol.messages.produce import (
    BatchIndexAndErrorMessage,
    LeaderIdAndEpoch,
    NodeEndpoint,
    PartitionProduceData,
    PartitionProduceResponse,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
    TopicProduceResponse,
    error_response,
)
from protocol.schema import decode, encode, encode_chunks
from tests.protocol.roundtrip import assert_roundtrip, decode_golden

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

# The RecordBatch v2 in the golden frames: two records from an idempotent producer.
RECORDS = bytes.fromhex(
    "0000000000000000"  # base_offset
    "0000004f"  # batch_length
    "00000000"  # partition_leader_epoch
    "02"  # magic
    "b5ec1803"  # crc
    "0000"  # attributes
    "00000001"  # last_offset_delta
    "0000018bcfe56800"  # base_timestamp
    "0000018bcfe56805"  # max_timestamp
    "0000000000000fa0"  # producer_id 4000
    "0003"  # producer_epoch
    "00000011"  # base_sequence 17
    "00000002"  # record count
    "1a000000046b300a68656c6c6f00"  # key "k0", value "hello"
    "1e000a02010a776f726c640202680276"  # null key, value "world", header h=v
)

REQUEST = ProduceRequest(
    transactional_id="txn-1",
    acks=-1,
    timeout_ms=30000,
    topic_data=[
        TopicProduceData(
            name="orders",
            partition_data=[
                PartitionProduceData(index=0, records=RECORDS),
                PartitionProduceData(index=1, records=None),
            ],
        ),
        TopicProduceData(name="payments", partition_data=[]),
    ],
)

RESPONSE = ProduceResponse(
    responses=[
        TopicProduceResponse(
            name="orders",
            partition_responses=[
                PartitionProduceResponse(
                    index=0,
                    error_code=0,
                    base_offset=1200,
                    log_append_time_ms=1_700_000_000_000,
                    log_start_offset=100,
                    current_leader=LeaderIdAndEpoch(leader_id=1, leader_epoch=7),
                ),
                PartitionProduceResponse(
                    index=1,
                    error_code=ErrorCode.INVALID_RECORD,
                    base_offset=-1,
                    record_errors=[
                        BatchIndexAndErrorMessage(batch_index=0, batch_index_error_message=None),
                        BatchIndexAndErrorMessage(batch_index=1, batch_index_error_message="bad"),
                    ],
                    error_message="record 1 is invalid",
                ),
            ],
        )
    ],
    throttle_time_ms=5,
    node_endpoints=[
        NodeEndpoint(node_id=1, host="localhost", port=9092, rack=None),
        NodeEndpoint(node_id=2, host="localhost", port=9093, rack="rack-b"),
    ],
)


def test_versions():
    assert ProduceRequest.VERSIONS == ProduceResponse.VERSIONS == range(0, 14)
    assert ProduceRequest.FLEXIBLE_FROM == ProduceResponse.FLEXIBLE_FROM == 9


@pytest.mark.parametrize("version", ProduceRequest.VERSIONS)
def test_request_roundtrip(version):
    assert_roundtrip(REQUEST, version)


@pytest.mark.parametrize("version", ProduceRequest.VERSIONS)
def test_request_without_transactional_id_roundtrip(version):
    assert_roundtrip(ProduceRequest(transactional_id=None, acks=1, timeout_ms=1000), version)


@pytest.mark.parametrize("version", ProduceResponse.VERSIONS)
def test_response_roundtrip(version):
    assert_roundtrip(RESPONSE, version)


def test_node_endpoints_are_a_tagged_field_written_only_when_set():
    assert encode(ProduceResponse(throttle_time_ms=5), 10).hex() == "010000000500"
    endpoint = NodeEndpoint(node_id=1, host="h", port=9092)
    data = encode(ProduceResponse(throttle_time_ms=5, node_endpoints=[endpoint]), 10)
    assert data.hex() == (
        "01"  # responses: empty compact array
        "00000005"  # throttle_time_ms
        "01"
        "00"
        "0d"  # one tagged field: tag 0, 13 bytes
        "02"
        "00000001"
        "0268"
        "00002384"
        "00"
        "00"  # [node 1, "h", 9092, rack null, no tags]
    )


def test_records_decode_as_a_view_of_the_frame():
    data = encode(REQUEST, 9)
    msg = decode(ProduceRequest, 9, data)
    records = msg.topic_data[0].partition_data[0].records
    assert isinstance(records, memoryview)
    assert records.obj is data
    assert records == RECORDS


def test_records_encode_without_a_copy():
    view = memoryview(bytearray(RECORDS))
    msg = ProduceRequest(
        acks=1,
        timeout_ms=1000,
        topic_data=[
            TopicProduceData(
                name="orders", partition_data=[PartitionProduceData(index=0, records=view)]
            )
        ],
    )
    for version in (3, 9):
        assert any(chunk is view for chunk in encode_chunks(msg, version))


@pytest.mark.parametrize("version", [3, 9, 11])
def test_golden_kafka_python_request(version):
    assert decode_golden(ProduceRequest, f"produce_v{version}.hex") == (
        version,
        ProduceRequest(
            transactional_id="txn-1",
            acks=-1,
            timeout_ms=30000,
            topic_data=[
                TopicProduceData(
                    name="orders",
                    partition_data=[PartitionProduceData(index=2, records=RECORDS)],
                )
            ],
        ),
    )


@pytest.mark.parametrize("version", ProduceRequest.VERSIONS)
def test_error_response_puts_the_code_on_every_partition(version):
    response = error_response(REQUEST, ErrorCode.NOT_LEADER_OR_FOLLOWER, version)
    code = ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert response == ProduceResponse(
        responses=[
            TopicProduceResponse(
                name="orders",
                partition_responses=[
                    PartitionProduceResponse(index=0, error_code=code, base_offset=-1),
                    PartitionProduceResponse(index=1, error_code=code, base_offset=-1),
                ],
            ),
            TopicProduceResponse(name="payments", partition_responses=[]),
        ]
    )
    assert_roundtrip(response, version)
