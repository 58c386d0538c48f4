"""The transaction APIs against kafka-python's own codec (generated from Kafka's JSON
schemas), at every version both know: it reads what we write field for field, and we read
what it writes back to the same message."""

import pytest
from kafka.protocol.admin import transactions as kp_admin
from kafka.protocol.producer import transaction as kp_producer

from protocol.schema import Struct, decode, encode
from tests.protocol import (
    test_add_offsets_to_txn,
    test_add_partitions_to_txn,
    test_describe_producers,
    test_describe_transactions,
    test_end_txn,
    test_list_transactions,
    test_txn_offset_commit,
    test_write_txn_markers,
)
from tests.protocol.roundtrip import for_version

PAIRS = [
    (test_add_partitions_to_txn, kp_producer.AddPartitionsToTxnRequest, "REQUEST"),
    (test_add_partitions_to_txn, kp_producer.AddPartitionsToTxnResponse, "RESPONSE"),
    (test_add_offsets_to_txn, kp_producer.AddOffsetsToTxnRequest, "REQUEST"),
    (test_add_offsets_to_txn, kp_producer.AddOffsetsToTxnResponse, "RESPONSE"),
    (test_end_txn, kp_producer.EndTxnRequest, "REQUEST"),
    (test_end_txn, kp_producer.EndTxnResponse, "RESPONSE"),
    (test_txn_offset_commit, kp_producer.TxnOffsetCommitRequest, "REQUEST"),
    (test_txn_offset_commit, kp_producer.TxnOffsetCommitResponse, "RESPONSE"),
    (test_write_txn_markers, kp_producer.WriteTxnMarkersRequest, "REQUEST"),
    (test_write_txn_markers, kp_producer.WriteTxnMarkersResponse, "RESPONSE"),
    (test_describe_transactions, kp_admin.DescribeTransactionsRequest, "REQUEST"),
    (test_describe_transactions, kp_admin.DescribeTransactionsResponse, "RESPONSE"),
    (test_list_transactions, kp_admin.ListTransactionsRequest, "REQUEST"),
    (test_list_transactions, kp_admin.ListTransactionsResponse, "RESPONSE"),
    (test_describe_producers, kp_admin.DescribeProducersRequest, "REQUEST"),
    (test_describe_producers, kp_admin.DescribeProducersResponse, "RESPONSE"),
]


def _as_dict(obj, version):
    if isinstance(obj, list):
        return [_as_dict(x, version) for x in obj]
    if not isinstance(obj, Struct):
        return obj
    return {
        name: _as_dict(getattr(obj, name), version)
        for name, w in type(obj)._wire_fields
        if w.present_in(version) and w.tag is None
    }


CASES = []
for module, kp_class, which in PAIRS:
    msg = getattr(module, which)
    lowest, highest = kp_class.valid_versions
    for version in type(msg).VERSIONS:
        if lowest <= version <= highest:
            CASES.append(pytest.param(msg, kp_class, version, id=f"{kp_class.__name__}-v{version}"))


def test_every_api_is_compared_at_several_versions():
    assert len(CASES) >= 40


@pytest.mark.parametrize(("msg", "kp_class", "version"), CASES)
def test_kafka_python_reads_what_we_write(msg, kp_class, version):
    msg = for_version(msg, version)
    decoded = kp_class.decode(encode(msg, version), version=version)
    assert decoded.to_dict() == _as_dict(msg, version)


# Our struct names are Kafka's, except where two structs of one API share a name, and where
# TxnOffsetCommitResponse's structs are OffsetCommitResponse's (the same layout).
_KAFKA_NAMES = {
    "ListedTransactionState": "TransactionState",
    "OffsetCommitResponseTopic": "TxnOffsetCommitResponseTopic",
    "OffsetCommitResponsePartition": "TxnOffsetCommitResponsePartition",
}


def _as_kafka_python(kp_class, obj, version):
    fields = {}
    for name, w in type(obj)._wire_fields:
        if not w.present_in(version) or w.tag is not None:
            continue
        value = getattr(obj, name)
        if isinstance(value, list) and value and isinstance(value[0], Struct):
            struct_name = type(value[0]).__name__
            nested = getattr(kp_class, _KAFKA_NAMES.get(struct_name, struct_name))
            value = [_as_kafka_python(nested, x, version) for x in value]
        fields[name] = value
    return kp_class(version=version, **fields)


@pytest.mark.parametrize(("msg", "kp_class", "version"), CASES)
def test_we_read_what_kafka_python_writes(msg, kp_class, version):
    msg = for_version(msg, version)
    data = _as_kafka_python(kp_class, msg, version).encode(version=version)
    assert decode(type(msg), version, data) == msg
