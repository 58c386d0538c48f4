import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.consumer_offsets import UnknownRecordKey
from protocol.primitives import DecodeError
from protocol.transaction_log import (
    PartitionsSchema,
    TransactionLogKey,
    TransactionLogValue,
    decode_record,
    encode_key,
    encode_value,
)

ONGOING = TransactionLogValue(
    producer_id=1000,
    producer_epoch=2,
    transaction_timeout_ms=60000,
    transaction_status=1,
    transaction_partitions=[PartitionsSchema(topic="t", partition_ids=[0, 1])],
    transaction_last_update_timestamp_ms=5,
    transaction_start_timestamp_ms=4,
)


def test_key_is_version_0_and_the_id():
    assert encode_key("txn") == bytes.fromhex("00000003") + b"txn"
    assert decode_record(encode_key("txn"), None) == (
        TransactionLogKey(transactional_id="txn"),
        None,
    )


def test_value_v0_bytes():
    assert encode_value(ONGOING, 0).hex() == (
        "0000"  # value version
        "00000000000003e8"  # producer id 1000
        "0002"  # epoch
        "0000ea60"  # timeout 60000
        "01"  # Ongoing
        "00000001"
        "0001"
        "74"
        "00000002"
        "00000000"
        "00000001"  # [t: [0, 1]]
        "0000000000000005"  # last update
        "0000000000000004"  # start
    )


def test_value_v1_bytes_carry_the_tagged_fields_that_differ_from_their_defaults():
    value = dataclasses.replace(ONGOING, previous_producer_id=900, client_transaction_version=2)
    assert encode_value(value, 1).hex() == (
        "0001"
        "00000000000003e8"
        "0002"
        "0000ea60"
        "01"
        "02"
        "0274"
        "03"
        "00000000"
        "00000001"
        "00"  # compact [t: [0, 1]], no tags
        "0000000000000005"
        "0000000000000004"
        "02"  # two tagged fields; next_producer_id is -1, its default, so left out
        "00"
        "08"
        "0000000000000384"  # tag 0: previous producer id 900
        "02"
        "02"
        "0002"  # tag 2: client transaction version 2
    )
    assert decode_record(encode_key("x"), encode_value(value, 1))[1] == value


def test_empty_state_writes_null_partitions():
    empty = TransactionLogValue(
        producer_id=1000,
        producer_epoch=0,
        transaction_timeout_ms=60000,
        transaction_status=0,
        transaction_partitions=None,
        transaction_last_update_timestamp_ms=5,
        transaction_start_timestamp_ms=-1,
    )
    assert encode_value(empty, 0)[2 + 8 + 2 + 4 + 1 :][:4] == b"\xff\xff\xff\xff"
    assert encode_value(empty, 1)[2 + 8 + 2 + 4 + 1 :][:1] == b"\x00"
    for version in (0, 1):
        assert decode_record(encode_key("x"), encode_value(empty, version))[1] == empty


def test_v0_value_reads_tagged_fields_as_their_defaults():
    _, value = decode_record(encode_key("x"), encode_value(ONGOING, 0))
    assert value == ONGOING
    assert (value.previous_producer_id, value.next_producer_id) == (-1, -1)
    assert value.client_transaction_version == 0


def test_newer_value_version_is_read_with_the_v1_layout_and_its_tags_skipped():
    data = bytearray(encode_value(ONGOING, 1))
    data[1] = 2  # version 2
    data[-1:] = bytes([1, 3, 2]) + b"\x00\x07"  # an unknown tag 3 instead of no tags
    assert decode_record(encode_key("x"), bytes(data))[1] == ONGOING


def test_unknown_key_version_is_skipped_undecoded():
    key = bytes.fromhex("0001") + b"whatever"
    assert decode_record(key, b"\x00") == (UnknownRecordKey(1, key), None)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"\x00", None),
        (bytes.fromhex("00000005") + b"ab", None),
        (encode_key("x"), b"\x00"),
        (encode_key("x"), encode_value(ONGOING, 0)[:-1]),
        (encode_key("x"), encode_value(ONGOING, 0) + b"\x00"),
        (encode_key("x"), bytes.fromhex("ffff") + encode_value(ONGOING, 0)[2:]),
    ],
    ids=["short-key", "short-id", "short-value", "cut-value", "trailing", "negative-version"],
)
def test_malformed_records_raise_decode_error(key, value):
    with pytest.raises(DecodeError):
        decode_record(key, value)


_value = st.builds(
    TransactionLogValue,
    producer_id=st.integers(-1, 2**63 - 1),
    previous_producer_id=st.integers(-1, 2**63 - 1),
    next_producer_id=st.integers(-1, 2**63 - 1),
    producer_epoch=st.integers(-1, 2**15 - 1),
    transaction_timeout_ms=st.integers(1, 2**31 - 1),
    transaction_status=st.integers(0, 7),
    transaction_partitions=st.none()
    | st.lists(
        st.builds(
            PartitionsSchema,
            topic=st.text(min_size=1, max_size=8),
            partition_ids=st.lists(st.integers(0, 1000), max_size=4),
        ),
        max_size=3,
    ),
    transaction_last_update_timestamp_ms=st.integers(-1, 2**50),
    transaction_start_timestamp_ms=st.integers(-1, 2**50),
    client_transaction_version=st.integers(0, 2),
)


@settings(max_examples=25, deadline=None)
@given(value=_value, transactional_id=st.text(max_size=20))
def test_v1_round_trips(value, transactional_id):
    assert decode_record(encode_key(transactional_id), encode_value(value, 1)) == (
        TransactionLogKey(transactional_id=transactional_id),
        value,
    )
