"""An offset commit's record, packed directly (coordinator.records.OffsetCommitRecord), is
byte for byte what the schema layer encodes for Kafka's OffsetCommitKey v1 and
OffsetCommitValue v3 (v1 with an expire timestamp), and reads back the same."""

from __future__ import annotations

import struct

import pytest

from coordinator.classic.group import OffsetAndMetadata
from coordinator.records import offset_commit_record
from protocol.consumer_offsets import (
    OffsetCommitKey,
    OffsetCommitValue,
    decode_record,
    encode_key,
    encode_value,
)

CASES = [
    ("g", "t", 0, OffsetAndMetadata(0, -1, "", 0)),
    ("group-1", "topic.a", 7, OffsetAndMetadata(42, 3, "meta", 1_700_000_000_123)),
    ("grüppe", "töpic", 2**31 - 1, OffsetAndMetadata(2**63 - 1, 2**31 - 1, "mé" * 300, -1)),
    ("", "x" * 249, 5, OffsetAndMetadata(-1, -1, "m", 5, expire_timestamp_ms=99)),
    ("g" * 32767, "t", 1, OffsetAndMetadata(10, 0, "", 1, expire_timestamp_ms=2**62)),
]


@pytest.mark.parametrize(("group", "topic", "partition", "offset"), CASES)
def test_packed_record_is_the_schema_encoding(
    group: str, topic: str, partition: int, offset: OffsetAndMetadata
) -> None:
    record = offset_commit_record(group, topic, partition, offset)
    expire = offset.expire_timestamp_ms
    version = 3 if expire is None else 1
    key = OffsetCommitKey(group=group, topic=topic, partition=partition)
    value = OffsetCommitValue(
        offset=offset.offset,
        leader_epoch=offset.leader_epoch,
        metadata=offset.metadata,
        commit_timestamp=offset.commit_timestamp_ms,
        expire_timestamp=-1 if expire is None else expire,
    )
    assert record.key_bytes() == encode_key(key)
    again = offset_commit_record(group, topic, partition, OffsetAndMetadata(1, -1, "", 0))
    assert again.key_bytes() == encode_key(key)  # from the cache of keys
    assert record.value_bytes() == encode_value(value, version)
    assert (record.key, record.value, record.value_version) == (key, value, version)
    decoded_key, decoded_value = decode_record(record.key_bytes(), record.value_bytes())
    assert decoded_key == key
    assert isinstance(decoded_value, OffsetCommitValue)
    assert decoded_value.offset == offset.offset
    assert decoded_value.metadata == offset.metadata
    assert decoded_value.expire_timestamp == value.expire_timestamp


def test_a_group_id_over_32767_bytes_fails_like_the_schema_encoder() -> None:
    record = offset_commit_record("g" * 32768, "t", 0, OffsetAndMetadata(1, -1, "", 0))
    with pytest.raises(struct.error):
        encode_key(record.key)
    with pytest.raises(struct.error):
        record.key_bytes()
