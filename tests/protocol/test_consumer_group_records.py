"""The KIP-848 consumer-group records of __consumer_offsets: key versions 3-8 and 16, values
v0 (flexible). Expected bytes are assembled field by field from the coordinator-records
JSON layouts."""

import struct
import uuid

import pytest

from protocol.consumer_offsets import (
    ClassicMemberMetadata,
    ClassicProtocol,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    PartitionMetadata,
    TopicMetadata,
    TopicPartitions,
    decode_record,
    encode_key,
    encode_value,
)
from protocol.schema import DecodeError

TOPIC = uuid.UUID("0f4d0c4e-83f2-4b9a-9d47-1a6c2f5e9b01")


def int16(v: int) -> bytes:
    return struct.pack(">h", v)


def int32(v: int) -> bytes:
    return struct.pack(">i", v)


def string(s: str) -> bytes:
    return int16(len(s)) + s.encode()


def compact_string(s: str | None) -> bytes:
    return b"\x00" if s is None else bytes([len(s) + 1]) + s.encode()


RECORDS = [
    (ConsumerGroupMetadataKey(group_id="g"), ConsumerGroupMetadataValue(epoch=4, metadata_hash=9)),
    (
        ConsumerGroupPartitionMetadataKey(group_id="g"),
        ConsumerGroupPartitionMetadataValue(
            topics=[
                TopicMetadata(
                    topic_id=TOPIC,
                    topic_name="orders",
                    num_partitions=2,
                    partition_metadata=[PartitionMetadata(partition=0, racks=["r1", "r2"])],
                )
            ]
        ),
    ),
    (
        ConsumerGroupMemberMetadataKey(group_id="g", member_id="m-1"),
        ConsumerGroupMemberMetadataValue(
            instance_id="i-1",
            rack_id=None,
            client_id="rdkafka",
            client_host="/127.0.0.1",
            subscribed_topic_names=["orders"],
            subscribed_topic_regex="pay.*",
            rebalance_timeout_ms=300000,
            server_assignor="range",
            classic_member_metadata=ClassicMemberMetadata(
                session_timeout_ms=45000,
                supported_protocols=[ClassicProtocol(name="range", metadata=b"\x00\x03")],
            ),
        ),
    ),
    (
        ConsumerGroupTargetAssignmentMetadataKey(group_id="g"),
        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=4),
    ),
    (
        ConsumerGroupTargetAssignmentMemberKey(group_id="g", member_id="m-1"),
        ConsumerGroupTargetAssignmentMemberValue(
            topic_partitions=[TopicPartitions(topic_id=TOPIC, partitions=[0, 1])]
        ),
    ),
    (
        ConsumerGroupCurrentMemberAssignmentKey(group_id="g", member_id="m-1"),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=4,
            previous_member_epoch=3,
            state=1,
            assigned_partitions=[TopicPartitions(topic_id=TOPIC, partitions=[0])],
            partitions_pending_revocation=[TopicPartitions(topic_id=TOPIC, partitions=[1])],
        ),
    ),
    (
        ConsumerGroupRegularExpressionKey(group_id="g", regular_expression="pay.*"),
        ConsumerGroupRegularExpressionValue(topics=["payments"], version=12, timestamp=1700),
    ),
]


@pytest.mark.parametrize(("key", "value"), RECORDS, ids=lambda r: type(r).__name__)
def test_consumer_group_records_roundtrip_and_tombstones_decode_to_none(key, value):
    key_bytes = encode_key(key)
    assert decode_record(key_bytes, encode_value(value, 0)) == (key, value)
    assert decode_record(key_bytes, None) == (key, None)


@pytest.mark.parametrize(
    ("key", "version"),
    [(key, version) for (key, _), version in zip(RECORDS, [3, 4, 5, 6, 7, 8, 16], strict=True)],
)
def test_key_version_is_the_record_type(key, version):
    assert encode_key(key)[:2] == int16(version)


def test_member_key_and_current_assignment_match_the_json_layout():
    assert encode_key(ConsumerGroupCurrentMemberAssignmentKey(group_id="g", member_id="m")) == (
        int16(8) + string("g") + string("m")
    )
    value = RECORDS[5][1]
    topic = lambda parts: TOPIC.bytes + bytes([len(parts) + 1]) + b"".join(map(int32, parts))  # noqa: E731
    assert encode_value(value, 0) == (
        int16(0)
        + int32(4)
        + int32(3)
        + b"\x01"  # state, int8
        + b"\x02" + topic([0]) + b"\x00"
        + b"\x02" + topic([1]) + b"\x00"
        + b"\x00"
    )  # fmt: skip


def test_member_metadata_classic_metadata_is_tag_0_behind_a_marker_byte():
    value = RECORDS[2][1]
    data = encode_value(value, 0)
    protocol = compact_string("range") + b"\x03\x00\x03" + b"\x00"
    classic = int32(45000) + b"\x02" + protocol + b"\x00"
    # One tagged field: tag 0, its size, then marker 1 and the struct.
    tagged = b"\x01" + b"\x00" + bytes([1 + len(classic)]) + b"\x01" + classic
    assert data.endswith(compact_string("range") + tagged)


def test_metadata_hash_is_tagged_and_left_out_when_zero():
    assert encode_value(ConsumerGroupMetadataValue(epoch=4), 0) == int16(0) + int32(4) + b"\x00"
    with_hash = encode_value(ConsumerGroupMetadataValue(epoch=4, metadata_hash=9), 0)
    assert with_hash == int16(0) + int32(4) + b"\x01\x00\x08" + struct.pack(">q", 9)


def test_newer_value_version_is_read_with_the_v0_layout():
    data = (
        int16(1)
        + encode_value(ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=2), 0)[2:]
    )
    key = encode_key(ConsumerGroupTargetAssignmentMetadataKey(group_id="g"))
    assert decode_record(key, data)[1] == ConsumerGroupTargetAssignmentMetadataValue(
        assignment_epoch=2
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        (int16(5) + string("g"), None),  # member key without its member id
        (int16(3) + string("g") + b"\x00", None),  # a byte left over
        (int16(8) + string("g") + string("m"), int16(0) + int32(1)),  # value cut short
        (int16(3) + string("g"), int16(0) + int32(1) + b"\x05"),  # tag count past the end
    ],
)
def test_malformed_consumer_group_records_raise_decode_error(key, value):
    with pytest.raises(DecodeError):
        decode_record(key, value)
