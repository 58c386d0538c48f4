import struct
from pathlib import Path
from typing import Any

import pytest

from protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from protocol.primitives import Reader
from protocol.schema import DecodeError, build_struct
from tests.protocol.roundtrip import for_version

GOLDEN = Path(__file__).parent / "golden" / "kafka_python"

SUBSCRIPTION = ConsumerProtocolSubscription(
    topics=["orders", "payments"],
    user_data=b"\x00user",
    owned_partitions=[
        TopicPartition(topic="orders", partitions=[0, 2]),
        TopicPartition(topic="x", partitions=[]),
    ],
    generation_id=9,
    rack_id="rack-b",
)
SUBSCRIPTION_NULLS = ConsumerProtocolSubscription(topics=[], user_data=None, rack_id=None)
ASSIGNMENT = ConsumerProtocolAssignment(
    assigned_partitions=[TopicPartition(topic="orders", partitions=[1, 3])], user_data=b"ud"
)
ASSIGNMENT_NULLS = ConsumerProtocolAssignment(assigned_partitions=[], user_data=None)

CODECS = {
    ConsumerProtocolSubscription: (encode_subscription, decode_subscription),
    ConsumerProtocolAssignment: (encode_assignment, decode_assignment),
}


@pytest.mark.parametrize("version", range(4))
@pytest.mark.parametrize("value", [SUBSCRIPTION, SUBSCRIPTION_NULLS, ASSIGNMENT, ASSIGNMENT_NULLS])
def test_roundtrip(value, version):
    encode, decode = CODECS[type(value)]
    value = for_version(value, version)
    data = encode(value, version)
    assert data[:2] == struct.pack(">h", version)
    assert decode(data) == value
    interpreted = build_struct(type(value), version, flexible=False)
    chunks: list[Any] = []
    interpreted._build(value, chunks, None, "(test)")
    assert b"".join(bytes(c) for c in chunks) == data[2:]
    assert interpreted._parse(Reader(data, 2), None, "(test)") == value


GOLDEN_SUBSCRIPTIONS = {
    0: ConsumerProtocolSubscription(topics=["orders", "payments"], user_data=None),
    1: ConsumerProtocolSubscription(
        topics=["orders"],
        user_data=b"\x01\x02",
        owned_partitions=[TopicPartition(topic="orders", partitions=[0, 2])],
    ),
    3: ConsumerProtocolSubscription(
        topics=["orders", "payments"],
        user_data=None,
        owned_partitions=[
            TopicPartition(topic="orders", partitions=[1]),
            TopicPartition(topic="payments", partitions=[]),
        ],
        generation_id=7,
        rack_id="rack-a",
    ),
}
GOLDEN_ASSIGNMENTS = {
    0: ConsumerProtocolAssignment(
        assigned_partitions=[
            TopicPartition(topic="orders", partitions=[0, 1]),
            TopicPartition(topic="payments", partitions=[3]),
        ],
        user_data=None,
    ),
    3: ConsumerProtocolAssignment(
        assigned_partitions=[TopicPartition(topic="orders", partitions=[2])], user_data=b"ud"
    ),
}


@pytest.mark.parametrize("version", sorted(GOLDEN_SUBSCRIPTIONS))
def test_kafka_python_subscription(version):
    data = bytes.fromhex((GOLDEN / f"consumer_protocol_subscription_v{version}.hex").read_text())
    assert decode_subscription(data) == GOLDEN_SUBSCRIPTIONS[version]
    assert encode_subscription(GOLDEN_SUBSCRIPTIONS[version], version) == data


@pytest.mark.parametrize("version", sorted(GOLDEN_ASSIGNMENTS))
def test_kafka_python_assignment(version):
    data = bytes.fromhex((GOLDEN / f"consumer_protocol_assignment_v{version}.hex").read_text())
    assert decode_assignment(data) == GOLDEN_ASSIGNMENTS[version]
    assert encode_assignment(GOLDEN_ASSIGNMENTS[version], version) == data


def test_newer_subscription_is_read_as_v3_and_what_follows_is_ignored():
    data = encode_subscription(SUBSCRIPTION, 3)
    newer = struct.pack(">h", 4) + data[2:] + b"\x00\x00\x00\x05fresh"
    assert decode_subscription(newer) == SUBSCRIPTION


def test_newer_assignment_is_read_as_v3():
    newer = struct.pack(">h", 7) + encode_assignment(ASSIGNMENT, 3)[2:] + b"\x01"
    assert decode_assignment(newer) == ASSIGNMENT


@pytest.mark.parametrize(
    "data",
    [
        b"",  # no version
        b"\x00",  # half a version
        b"\xff\xff" + encode_assignment(ASSIGNMENT, 0)[2:],  # negative version
        encode_assignment(ASSIGNMENT, 0)[:-1],  # cut short
        encode_assignment(ASSIGNMENT, 0) + b"\x00",  # a byte left over in a known version
        b"\x00\x04\x00\x00",  # newer version, still cut short
    ],
)
def test_malformed_assignment_raises_decode_error(data):
    with pytest.raises(DecodeError):
        decode_assignment(data)


def test_malformed_subscription_raises_decode_error():
    with pytest.raises(DecodeError):
        decode_subscription(encode_subscription(SUBSCRIPTION, 2) + b"\x00")


def test_encode_refuses_unknown_versions():
    with pytest.raises(ValueError, match="no version 4"):
        encode_subscription(SUBSCRIPTION, 4)
