"""__consumer_offsets records. kafka-python has no codec for them, so the expected bytes are
assembled here field by field from the coordinator-records JSON layouts."""

import struct
from typing import Any

import pytest

from protocol.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    UnknownRecordKey,
    decode_record,
    encode_key,
    encode_value,
)
from protocol.primitives import Reader
from protocol.schema import DecodeError, build_struct
from tests.protocol.roundtrip import for_version


def int16(v: int) -> bytes:
    return struct.pack(">h", v)


def int32(v: int) -> bytes:
    return struct.pack(">i", v)


def int64(v: int) -> bytes:
    return struct.pack(">q", v)


def string(s: str) -> bytes:
    return int16(len(s)) + s.encode()


def nullable_string(s: str | None) -> bytes:
    return int16(-1) if s is None else string(s)


def bytes_(b: bytes) -> bytes:
    return int32(len(b)) + b


# Compact forms, for lengths below 127 (one-byte unsigned varint of length + 1).
def compact_string(s: str | None) -> bytes:
    return b"\x00" if s is None else bytes([len(s) + 1]) + s.encode()


def compact_bytes(b: bytes) -> bytes:
    return bytes([len(b) + 1]) + b


NO_TAGS = b"\x00"

OFFSET_KEY = OffsetCommitKey(group="group-a", topic="orders", partition=3)
OFFSET_KEY_BYTES = int16(1) + string("group-a") + string("orders") + int32(3)
GROUP_KEY = GroupMetadataKey(group="group-a")
GROUP_KEY_BYTES = int16(2) + string("group-a")

OFFSET_VALUE = OffsetCommitValue(
    offset=1234,
    leader_epoch=7,
    metadata="meta",
    commit_timestamp=1700000000000,
    expire_timestamp=1700086400000,
)
OFFSET_VALUE_BYTES = {
    0: int16(0) + int64(1234) + string("meta") + int64(1700000000000),
    1: int16(1) + int64(1234) + string("meta") + int64(1700000000000) + int64(1700086400000),
    2: int16(2) + int64(1234) + string("meta") + int64(1700000000000),
    3: int16(3) + int64(1234) + int32(7) + string("meta") + int64(1700000000000),
    4: int16(4) + int64(1234) + int32(7) + compact_string("meta") + int64(1700000000000) + NO_TAGS,
}

MEMBER_1 = MemberMetadata(
    member_id="m-1",
    group_instance_id="instance-1",
    client_id="kafka-python",
    client_host="/127.0.0.1",
    rebalance_timeout=300000,
    session_timeout=45000,
    subscription=b"\x00\x00sub",
    assignment=b"\x00\x00asg",
)
MEMBER_2 = MemberMetadata(
    member_id="m-2",
    group_instance_id=None,
    client_id="rdkafka",
    client_host="/10.0.0.2",
    rebalance_timeout=60000,
    session_timeout=10000,
    subscription=b"",
    assignment=b"",
)
GROUP_VALUE = GroupMetadataValue(
    protocol_type="consumer",
    generation=5,
    protocol="range",
    leader="m-1",
    current_state_timestamp=1700000000000,
    members=[MEMBER_1, MEMBER_2],
)


def _member(m: MemberMetadata, version: int) -> bytes:
    if version >= 4:
        return (
            compact_string(m.member_id)
            + compact_string(m.group_instance_id)
            + compact_string(m.client_id)
            + compact_string(m.client_host)
            + int32(m.rebalance_timeout)
            + int32(m.session_timeout)
            + compact_bytes(m.subscription)
            + compact_bytes(m.assignment)
            + NO_TAGS
        )
    return (
        string(m.member_id)
        + (nullable_string(m.group_instance_id) if version >= 3 else b"")
        + string(m.client_id)
        + string(m.client_host)
        + (int32(m.rebalance_timeout) if version >= 1 else b"")
        + int32(m.session_timeout)
        + bytes_(m.subscription)
        + bytes_(m.assignment)
    )


def _group_value(version: int) -> bytes:
    members = _member(MEMBER_1, version) + _member(MEMBER_2, version)
    if version >= 4:
        return (
            int16(version)
            + compact_string("consumer")
            + int32(5)
            + compact_string("range")
            + compact_string("m-1")
            + int64(1700000000000)
            + b"\x03"  # compact array of 2
            + members
            + NO_TAGS
        )
    return (
        int16(version)
        + string("consumer")
        + int32(5)
        + nullable_string("range")
        + nullable_string("m-1")
        + (int64(1700000000000) if version >= 2 else b"")
        + int32(2)
        + members
    )


GROUP_VALUE_BYTES = {version: _group_value(version) for version in range(5)}


def test_offset_commit_key_is_written_with_key_version_1():
    assert encode_key(OFFSET_KEY) == OFFSET_KEY_BYTES


def test_group_metadata_key_is_written_with_key_version_2():
    assert encode_key(GROUP_KEY) == GROUP_KEY_BYTES


@pytest.mark.parametrize("version", OffsetCommitValue.VERSIONS)
def test_offset_commit_value_matches_the_json_layout(version):
    expected = for_version(OFFSET_VALUE, version)
    assert encode_value(expected, version) == OFFSET_VALUE_BYTES[version]
    assert decode_record(OFFSET_KEY_BYTES, OFFSET_VALUE_BYTES[version]) == (OFFSET_KEY, expected)


@pytest.mark.parametrize("version", GroupMetadataValue.VERSIONS)
def test_group_metadata_value_matches_the_json_layout(version):
    expected = for_version(GROUP_VALUE, version)
    assert encode_value(expected, version) == GROUP_VALUE_BYTES[version]
    assert decode_record(GROUP_KEY_BYTES, GROUP_VALUE_BYTES[version]) == (GROUP_KEY, expected)


def _assert_interpreted_agrees(value: Any, version: int, data: bytes) -> None:
    flexible = version >= 4
    interpreted = build_struct(type(value), version, flexible=flexible)
    chunks: list[Any] = []
    interpreted._build(value, chunks, None, "(test)")
    assert b"".join(bytes(c) for c in chunks) == data[2:]
    assert interpreted._parse(Reader(data, 2), None, "(test)") == value


@pytest.mark.parametrize("version", range(5))
@pytest.mark.parametrize("value", [OFFSET_VALUE, GROUP_VALUE])
def test_interpreted_and_compiled_codecs_agree(value, version):
    value = for_version(value, version)
    _assert_interpreted_agrees(value, version, encode_value(value, version))


def test_group_value_with_null_protocol_and_leader_roundtrips():
    value = GroupMetadataValue(
        protocol_type="consumer", generation=0, protocol=None, leader=None, members=[]
    )
    for version in GroupMetadataValue.VERSIONS:
        value = for_version(value, version)
        assert decode_record(GROUP_KEY_BYTES, encode_value(value, version)) == (GROUP_KEY, value)


def test_offset_commit_key_version_0_decodes_the_same():
    key_v0 = int16(0) + OFFSET_KEY_BYTES[2:]
    assert decode_record(key_v0, OFFSET_VALUE_BYTES[3]) == (
        OFFSET_KEY,
        for_version(OFFSET_VALUE, 3),
    )


@pytest.mark.parametrize(
    ("key_bytes", "key"), [(OFFSET_KEY_BYTES, OFFSET_KEY), (GROUP_KEY_BYTES, GROUP_KEY)]
)
def test_tombstone_decodes_to_none(key_bytes, key):
    assert decode_record(key_bytes, None) == (key, None)


@pytest.mark.parametrize("version", [9, 11, 15, 17, -1])
def test_other_record_types_are_returned_unknown_without_decoding_the_value(version):
    key = int16(version) + string("group-a")
    assert decode_record(key, b"\xff") == (UnknownRecordKey(version, key), None)


def test_newer_value_version_is_read_with_the_v4_layout_and_its_tags_skipped():
    # KIP-915: versions after 4 may only add tagged fields.
    data = int16(5) + OFFSET_VALUE_BYTES[4][2:-1] + b"\x01" + b"\x07" + b"\x02" + b"\xab\xcd"
    assert decode_record(OFFSET_KEY_BYTES, data) == (OFFSET_KEY, for_version(OFFSET_VALUE, 4))


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (b"\x00", None),  # key too short for its version
        (OFFSET_KEY_BYTES[:-1], None),  # partition cut short
        (OFFSET_KEY_BYTES + b"\x00", None),  # a byte left over
        (GROUP_KEY_BYTES, b"\x00"),  # value too short for its version
        (OFFSET_KEY_BYTES, int16(-1) + OFFSET_VALUE_BYTES[3][2:]),  # negative value version
        (OFFSET_KEY_BYTES, OFFSET_VALUE_BYTES[3][:-1]),  # value cut short
        (OFFSET_KEY_BYTES, OFFSET_VALUE_BYTES[3] + b"\x00"),  # a byte left over
        (GROUP_KEY_BYTES, GROUP_VALUE_BYTES[4][:33] + b"\xff" * 6),  # member count varint too long
    ],
)
def test_malformed_records_raise_decode_error(key, value):
    with pytest.raises(DecodeError):
        decode_record(key, value)


def test_encode_value_refuses_unknown_versions():
    with pytest.raises(ValueError, match="no version 5"):
        encode_value(OFFSET_VALUE, 5)
