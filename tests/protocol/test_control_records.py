import pytest
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from protocol.control_records import (
    ControlRecordType,
    EndTxnMarker,
    build_control_batch,
    decode_control_key,
    decode_end_txn_marker_value,
    encode_control_key,
    encode_end_txn_marker_value,
    is_txn_marker,
    read_txn_marker,
)
from protocol.errors import ErrorCode, KafkaError
from protocol.records import build_batch, parse_batch_header, validate_batch

T0 = 1_700_000_000_000


def _code(fn, *args):
    with pytest.raises(KafkaError) as e:
        fn(*args)
    return e.value.code


def test_commit_marker_bytes_follow_kafkas_control_batch_layout():
    data = build_control_batch(
        ControlRecordType.COMMIT,
        producer_id=8,
        producer_epoch=3,
        coordinator_epoch=5,
        timestamp=T0,
        base_offset=40,
    )
    header = validate_batch(data)  # the CRC holds
    assert data.hex() == (
        "0000000000000028"  # baseOffset 40
        "00000042"  # batchLength: 49 + 17
        "ffffffff"  # partitionLeaderEpoch
        "02"  # magic
        f"{header.crc:08x}"
        "0030"  # attributes: transactional | control, no codec, CreateTime
        "00000000"  # lastOffsetDelta
        f"{T0:016x}{T0:016x}"  # base and max timestamp
        "0000000000000008"  # producer id
        "0003"  # producer epoch
        "ffffffff"  # base sequence: none
        "00000001"  # one record
        "20"  # record length 16
        "00"
        "00"
        "00"  # attributes, timestamp delta, offset delta
        "08"
        "0000"
        "0001"  # key: 4 bytes, version 0, COMMIT
        "0c"
        "0000"
        "00000005"  # value: 6 bytes, version 0, coordinator epoch 5
        "00"  # no headers
    )


def _marker_batch(control_type: ControlRecordType) -> bytes:
    """A marker of producer 4000, epoch 7, coordinator epoch 2, at offset 100."""
    return build_control_batch(
        control_type,
        producer_id=4000,
        producer_epoch=7,
        coordinator_epoch=2,
        timestamp=T0,
        base_offset=100,
    )


@pytest.mark.parametrize("control_type", list(ControlRecordType))
def test_kafka_python_reads_our_markers(control_type):
    data = _marker_batch(control_type)
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc()
    assert batch.is_control_batch
    assert batch.is_transactional
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (4000, 7, -1)
    (record,) = list(batch)
    assert record.offset == 100
    assert record.type == control_type
    assert record.commit is (control_type == ControlRecordType.COMMIT)
    assert record.abort is (control_type == ControlRecordType.ABORT)


@pytest.mark.parametrize("control_type", list(ControlRecordType))
def test_read_txn_marker_round_trips(control_type):
    data = _marker_batch(control_type)
    assert is_txn_marker(parse_batch_header(data))
    marker = read_txn_marker(data)
    assert marker == EndTxnMarker(control_type, 4000, 7, 2, 100)
    assert marker.is_commit is (control_type == ControlRecordType.COMMIT)


def test_kafka_pythons_transactional_batch_is_transactional_and_not_control():
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=True,
        producer_id=4000,
        producer_epoch=1,
        base_sequence=0,
        batch_size=1 << 20,
    )
    builder.append(0, timestamp=T0, key=b"k", value=b"v", headers=[])
    data = bytes(builder.build())
    header = validate_batch(data)
    assert header.is_transactional
    assert not header.is_control
    assert not is_txn_marker(header)
    assert _code(read_txn_marker, data) == ErrorCode.CORRUPT_MESSAGE


def test_our_transactional_batch_matches_kafka_pythons_attributes():
    ours = build_batch(
        [(b"k", b"v", (), T0)],
        producer_id=4000,
        producer_epoch=1,
        base_sequence=0,
        is_transactional=True,
    )
    assert DefaultRecordBatch(ours).is_transactional
    assert not DefaultRecordBatch(ours).is_control_batch
    assert parse_batch_header(ours).attributes == 0x10


def test_key_and_value_codecs():
    assert encode_control_key(ControlRecordType.ABORT) == b"\x00\x00\x00\x00"
    assert encode_control_key(ControlRecordType.COMMIT) == b"\x00\x00\x00\x01"
    assert encode_end_txn_marker_value(9) == b"\x00\x00\x00\x00\x00\x09"
    assert decode_control_key(b"\x00\x00\x00\x01") == ControlRecordType.COMMIT
    assert decode_end_txn_marker_value(b"\x00\x00\x00\x00\x00\x09") == 9


def test_newer_key_and_value_versions_are_read_with_the_v0_layout():
    assert decode_control_key(b"\x00\x01\x00\x01" + b"more") == ControlRecordType.COMMIT
    assert decode_end_txn_marker_value(b"\x00\x01\x00\x00\x00\x09" + b"more") == 9


@pytest.mark.parametrize(
    ("fn", "arg"),
    [
        (decode_control_key, None),
        (decode_control_key, b"\x00\x00\x00"),
        (decode_control_key, b"\xff\xff\x00\x01"),
        (decode_end_txn_marker_value, None),
        (decode_end_txn_marker_value, b"\x00\x00\x00\x00\x00"),
        (decode_end_txn_marker_value, b"\xff\xff\x00\x00\x00\x01"),
    ],
    ids=["null-key", "short-key", "negative-key-version", "null-value", "short-value", "neg"],
)
def test_malformed_key_or_value_is_corrupt(fn, arg):
    assert _code(fn, arg) == ErrorCode.CORRUPT_MESSAGE


def test_a_control_batch_of_another_type_is_not_a_marker():
    data = build_batch(
        [(b"\x00\x00\x00\x02", b"", (), T0)],
        producer_id=1,
        producer_epoch=0,
        is_transactional=True,
        is_control=True,
    )
    assert _code(read_txn_marker, data) == ErrorCode.CORRUPT_MESSAGE


def test_a_control_batch_with_two_records_is_corrupt():
    record = (b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x00\x00", (), T0)
    data = build_batch(
        [record, record], producer_id=1, producer_epoch=0, is_transactional=True, is_control=True
    )
    assert _code(read_txn_marker, data) == ErrorCode.CORRUPT_MESSAGE
