import struct

import pytest
from crc32c import crc32c
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder

from protocol.compression import CompressionType
from protocol.errors import ErrorCode, KafkaError
from protocol.records import (
    BATCH_HEADER_SIZE,
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    control_record_type,
    decode_records,
    iter_batches,
    parse_batch_header,
    set_base_offset,
    set_log_append_time,
    set_partition_leader_epoch,
    split_batches,
    validate_batch,
)

T0 = 1_700_000_000_000


def test_crc32c_is_the_packages_function_loaded_without_its_init():
    # protocol.records loads crc32c's extension directly (its __init__ imports
    # importlib.metadata): the same function, Castagnoli's check value.
    import protocol.records

    assert protocol.records.crc32c is crc32c
    assert crc32c(b"123456789") == 0xE3069283


def simple_batch(count=3, **kwargs):
    return build_batch([(b"k%d" % i, b"v%d" % i, (), T0 + i) for i in range(count)], **kwargs)


def code_of(call, *args, **kwargs):
    with pytest.raises(KafkaError) as raised:
        call(*args, **kwargs)
    return raised.value.code


# --- header ---------------------------------------------------------------------------


def test_header_fields_and_properties():
    data = build_batch(
        [(b"a", b"1", (), T0 + 5), (b"b", b"2", (), T0)],
        base_offset=100,
        compression=CompressionType.LZ4,
        timestamp_type=1,
        producer_id=7,
        producer_epoch=2,
        base_sequence=40,
        is_transactional=True,
        partition_leader_epoch=3,
    )
    header = parse_batch_header(data)
    assert (header.base_offset, header.partition_leader_epoch, header.magic) == (100, 3, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (7, 2, 40)
    assert (header.base_timestamp, header.max_timestamp) == (T0 + 5, T0 + 5)
    assert header.records_count == 2
    assert header.last_offset_delta == 1
    assert header.compression == CompressionType.LZ4
    assert header.timestamp_type == 1
    assert header.is_transactional
    assert not header.is_control
    assert (header.last_offset, header.next_offset) == (101, 102)
    assert header.size == len(data) == 12 + header.batch_length
    assert header.last_sequence == 41


def test_last_sequence_wraps_at_int32_max():
    header = parse_batch_header(
        simple_batch(3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    )
    assert header.last_sequence == 0
    assert parse_batch_header(simple_batch(1)).last_sequence == -1


def test_header_parse_of_a_short_buffer_is_corrupt_message():
    assert code_of(parse_batch_header, simple_batch()[:60]) == ErrorCode.CORRUPT_MESSAGE


def test_same_bytes_as_kafka_python_for_an_uncompressed_batch():
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=0,
        is_transactional=0,
        producer_id=9,
        producer_epoch=1,
        base_sequence=0,
        batch_size=1 << 20,
    )
    for i in range(4):
        builder.append(i, T0 + i, b"key-%d" % i, b"value-%d" % i, [("trace", b"id")])
    theirs = bytes(builder.build())
    ours = build_batch(
        [(b"key-%d" % i, b"value-%d" % i, [("trace", b"id")], T0 + i) for i in range(4)],
        producer_id=9,
        producer_epoch=1,
        base_sequence=0,
        partition_leader_epoch=0,
    )
    assert ours == theirs


# --- validation -----------------------------------------------------------------------


def test_valid_batch_passes():
    data = simple_batch()
    assert validate_batch(data) == parse_batch_header(data)
    assert validate_batch(b"xx" + data, 2).records_count == 3


def test_flipped_record_byte_fails_the_crc():
    data = bytearray(simple_batch())
    data[-2] ^= 0x01
    with pytest.raises(KafkaError) as raised:
        validate_batch(data)
    assert raised.value.code == ErrorCode.CORRUPT_MESSAGE
    assert "CRC" in raised.value.detail
    assert validate_batch(data, check_crc=False).records_count == 3


def test_offset_and_leader_epoch_rewrites_keep_the_crc_valid():
    data = bytearray(simple_batch())
    set_base_offset(data, 0, 12345)
    set_partition_leader_epoch(data, 0, 7)
    header = validate_batch(data)
    assert (header.base_offset, header.partition_leader_epoch) == (12345, 7)


@pytest.mark.parametrize(
    ("magic", "code"),
    [(0, ErrorCode.INVALID_RECORD), (1, ErrorCode.INVALID_RECORD), (3, ErrorCode.CORRUPT_MESSAGE)],
)
def test_magic_other_than_2(magic, code):
    data = bytearray(simple_batch())
    data[16] = magic
    assert code_of(validate_batch, data) == code


def test_length_shorter_than_the_header_is_corrupt():
    data = bytearray(simple_batch())
    struct.pack_into(">i", data, 8, 48)
    assert code_of(validate_batch, data) == ErrorCode.CORRUPT_MESSAGE


def test_cut_short_batch_is_corrupt():
    assert code_of(validate_batch, simple_batch()[:-1]) == ErrorCode.CORRUPT_MESSAGE


def test_log_append_time_sets_type_and_max_timestamp_and_a_new_crc():
    data = bytearray(simple_batch())
    set_log_append_time(data, 0, T0 + 999)
    header = validate_batch(data)
    assert header.timestamp_type == 1
    assert header.max_timestamp == T0 + 999
    assert [r.timestamp for r in decode_records(data)] == [T0 + 999] * 3


def test_log_append_time_on_a_split_off_header_gives_the_same_bytes():
    whole = bytearray(simple_batch())
    original = bytes(whole)
    set_log_append_time(whole, 0, T0 + 1)
    header = bytearray(original[:BATCH_HEADER_SIZE])
    set_log_append_time(header, 0, T0 + 1, body=memoryview(original)[BATCH_HEADER_SIZE:])
    assert bytes(header) + original[BATCH_HEADER_SIZE:] == bytes(whole)


# --- runs of batches ------------------------------------------------------------------


def test_iter_batches_stops_quietly_at_a_cut_off_tail():
    first, second = simple_batch(base_offset=0), simple_batch(base_offset=3)
    run = first + second + simple_batch()[:30]
    assert [(pos, h.base_offset) for pos, h in iter_batches(run)] == [(0, 0), (len(first), 3)]
    assert [pos for pos, _ in iter_batches(first + second[:70])] == [0]


def test_iter_batches_raises_on_a_nonsense_length_instead_of_looping():
    data = bytearray(simple_batch())
    struct.pack_into(">i", data, 8, 0)
    assert code_of(lambda: list(iter_batches(data))) == ErrorCode.CORRUPT_MESSAGE


def test_split_batches_returns_each_batch():
    first, second = simple_batch(2), simple_batch(5, compression=CompressionType.GZIP)
    found = split_batches(first + second)
    assert [(pos, h.records_count) for pos, h in found] == [(0, 2), (len(first), 5)]


@pytest.mark.parametrize(
    ("records", "code"),
    [
        (b"", ErrorCode.INVALID_RECORD),
        (simple_batch() + simple_batch()[:40], ErrorCode.CORRUPT_MESSAGE),
        (
            build_control_batch(
                ControlRecordType.COMMIT,
                producer_id=1,
                producer_epoch=0,
                coordinator_epoch=0,
                timestamp=T0,
            ),
            ErrorCode.INVALID_RECORD,
        ),
        (build_batch([(b"k", b"v", (), T0)], last_offset_delta=3), ErrorCode.INVALID_RECORD),
        (build_batch([], last_offset_delta=0), ErrorCode.INVALID_RECORD),
        (simple_batch(producer_id=5, producer_epoch=0, base_sequence=-1), ErrorCode.INVALID_RECORD),
    ],
    ids=["empty", "cut-tail", "control", "count-mismatch", "no-records", "pid-without-sequence"],
)
def test_split_batches_refuses_what_kafka_refuses(records, code):
    assert code_of(split_batches, records) == code


def test_split_batches_refuses_unknown_codec():
    data = bytearray(simple_batch())
    struct.pack_into(">h", data, 21, 5)
    struct.pack_into(">I", data, 17, crc32c(data[21:]))
    assert code_of(split_batches, data) == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE


# --- records ----------------------------------------------------------------------------


def test_decode_records_gives_absolute_offsets_and_timestamps():
    data = build_batch(
        [
            (b"a", None, (), T0 + 10),
            (None, b"v", [("h1", b"x"), ("h2", None)], T0 - 5),
            (b"", b"", (), T0),
        ],
        base_offset=500,
    )
    assert decode_records(data) == [
        Record(500, T0 + 10, b"a", None, (), 0),
        Record(501, T0 - 5, None, b"v", (("h1", b"x"), ("h2", None)), 0),
        Record(502, T0, b"", b"", (), 0),
    ]


def test_explicit_offset_deltas_keep_gaps_and_last_offset_delta():
    data = build_batch(
        [(b"a", b"1", (), T0), (b"b", b"2", (), T0)],
        base_offset=10,
        offset_deltas=[1, 4],
        last_offset_delta=6,
    )
    header = validate_batch(data)
    assert (header.records_count, header.last_offset) == (2, 16)
    assert [r.offset for r in decode_records(data)] == [11, 14]


def test_empty_batch_keeps_its_offset_range():
    data = build_batch(
        [],
        base_offset=20,
        last_offset_delta=4,
        producer_id=3,
        producer_epoch=1,
        base_sequence=10,
        max_timestamp=T0,
    )
    header = validate_batch(data)
    assert (header.records_count, header.next_offset, header.last_sequence) == (0, 25, 14)
    assert (header.base_timestamp, header.max_timestamp) == (T0, T0)
    assert decode_records(data) == []


@pytest.mark.parametrize("codec", list(CompressionType))
def test_compressed_batches_decode(codec):
    data = build_batch([(b"k%d" % i, b"v" * i, (), T0 + i) for i in range(50)], compression=codec)
    assert validate_batch(data).compression == codec
    assert [r.value for r in decode_records(data)] == [b"v" * i for i in range(50)]


@pytest.mark.parametrize("codec", list(CompressionType))
def test_batches_from_kafka_python_decode(codec):
    builder = DefaultRecordBatchBuilder(
        magic=2,
        compression_type=codec,
        is_transactional=0,
        producer_id=-1,
        producer_epoch=-1,
        base_sequence=-1,
        batch_size=1 << 20,
    )
    for i in range(30):
        builder.append(
            i,
            T0 + i,
            b"k%d" % i if i % 3 else None,
            b"v%d" % i if i % 4 else None,
            [("h", b"x")] if i % 2 else [],
        )
    data = bytes(builder.build())
    validate_batch(data)
    records = decode_records(data)
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in records] == [
        (
            i,
            T0 + i,
            b"k%d" % i if i % 3 else None,
            b"v%d" % i if i % 4 else None,
            (("h", b"x"),) if i % 2 else (),
        )
        for i in range(30)
    ]


@pytest.mark.parametrize("codec", list(CompressionType))
def test_kafka_python_reads_our_batches(codec):
    items = [
        (b"k%d" % i if i % 3 else None, b"v%d" % i if i % 4 else None, [("h", b"x")], T0 + i)
        for i in range(30)
    ]
    data = build_batch(
        items, base_offset=77, compression=codec, producer_id=4, producer_epoch=0, base_sequence=9
    )
    batch = DefaultRecordBatch(data)
    assert batch.validate_crc()
    assert (batch.base_offset, batch.producer_id, batch.base_sequence) == (77, 4, 9)
    assert [(r.offset, r.timestamp, r.key, r.value, list(r.headers)) for r in batch] == [
        (77 + i, ts, k, v, h) for i, (k, v, h, ts) in enumerate(items)
    ]


def _uncompressed_body(records_section: bytes, count: int) -> bytes:
    data = bytearray(simple_batch(1))
    data[BATCH_HEADER_SIZE:] = records_section
    struct.pack_into(">i", data, 8, len(data) - 12)
    struct.pack_into(">i", data, 57, count)
    return bytes(data)


@pytest.mark.parametrize(
    ("section", "count"),
    [
        (b"", 1),  # one record declared, no bytes
        (b"\x0c" + bytes(5), 1),  # record length 6 with only 5 bytes after it
        (b"\x7f", 1000),  # a count no buffer of this size can hold
        (b"\x0c\x00\x00\x00\x06\x01\x01", 1),  # a 3-byte key in a record with 2 bytes left
        (b"\x0c\x00\x00\x00\x01\x01\x00\xff", 1),  # a byte left over after the records
        (b"\x0c\x00\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff", 1),  # a varint longer than 10 bytes
        (b"\x0c\x00\x00\x00\x01\x01\x02", 1),  # one header declared, none there
        (b"\x0c\x00\x00\x00\x05\x01\x00", 1),  # key length -3
    ],
    ids=[
        "no-bytes",
        "length-past-end",
        "count-too-big",
        "key-past-record",
        "trailing",
        "long-varint",
        "missing-header",
        "negative-length",
    ],
)
def test_decode_records_bounds_every_length(section, count):
    assert code_of(decode_records, _uncompressed_body(section, count)) == ErrorCode.CORRUPT_MESSAGE


def test_decode_records_refuses_a_non_utf8_header_key():
    good = build_batch([(b"k", b"v", [("hh", b"x")], T0)])
    bad = good.replace(b"\x04hh", b"\x04\xff\xfe")
    assert code_of(decode_records, bad) == ErrorCode.CORRUPT_MESSAGE


def test_decode_records_caps_decompressed_size():
    data = build_batch([(b"k", bytes(200_000), (), T0)], compression=CompressionType.ZSTD)
    assert code_of(decode_records, data, max_bytes=100_000) == ErrorCode.CORRUPT_MESSAGE
    assert len(decode_records(data, max_bytes=300_000)) == 1


def test_control_batch_is_a_transaction_marker():
    data = build_control_batch(
        ControlRecordType.ABORT,
        producer_id=8,
        producer_epoch=3,
        coordinator_epoch=5,
        timestamp=T0,
        base_offset=40,
    )
    header = validate_batch(data)
    assert header.is_control
    assert header.is_transactional
    assert header.producer_id == 8
    (record,) = decode_records(data)
    assert control_record_type(record.key) == ControlRecordType.ABORT
    assert record.value == struct.pack(">hi", 0, 5)
    assert code_of(control_record_type, b"\x00") == ErrorCode.CORRUPT_MESSAGE


_headers = st.lists(st.tuples(st.text(max_size=5), st.none() | st.binary(max_size=5)), max_size=3)
_record = st.tuples(
    st.none() | st.binary(max_size=20),
    st.none() | st.binary(max_size=50),
    _headers,
    st.integers(min_value=0, max_value=2**42),
)


@settings(max_examples=15, deadline=None)
@given(
    records=st.lists(_record, min_size=1, max_size=8),
    base_offset=st.integers(0, 2**40),
    codec=st.sampled_from(list(CompressionType)),
)
def test_build_then_decode_round_trips(records, base_offset, codec):
    data = build_batch(records, base_offset=base_offset, compression=codec)
    header = validate_batch(data)
    assert header.max_timestamp == max(r[3] for r in records)
    assert [(r.key, r.value, list(r.headers), r.timestamp) for r in decode_records(data)] == [
        (k, v, [tuple(h) for h in hs], ts) for k, v, hs, ts in records
    ]
