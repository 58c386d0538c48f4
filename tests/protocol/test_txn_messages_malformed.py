"""Malformed frames of the transaction APIs: every cut-short or padded body, and a few
corrupted lengths, raise DecodeError (the connection then closes), never anything else."""

import contextlib

import pytest

from protocol.primitives import DecodeError
from protocol.schema import decode, encode
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

MODULES = [
    test_add_partitions_to_txn,
    test_add_offsets_to_txn,
    test_end_txn,
    test_txn_offset_commit,
    test_write_txn_markers,
    test_describe_transactions,
    test_list_transactions,
    test_describe_producers,
]
CASES = [
    pytest.param(msg, version, id=f"{type(msg).__name__}-v{version}")
    for module in MODULES
    for msg in (module.REQUEST, module.RESPONSE)
    for version in type(msg).VERSIONS
]


@pytest.mark.parametrize(("msg", "version"), CASES)
def test_every_truncation_and_trailing_byte_is_a_decode_error(msg, version):
    data = encode(for_version(msg, version), version)
    for cut in range(len(data)):
        with pytest.raises(DecodeError):
            decode(type(msg), version, data[:cut])
    with pytest.raises(DecodeError):
        decode(type(msg), version, data + b"\x00")


@pytest.mark.parametrize(("msg", "version"), CASES)
def test_corrupted_leading_bytes_raise_nothing_but_decode_error(msg, version):
    data = bytearray(encode(for_version(msg, version), version))
    # Whatever the first field is, 0xff bytes make it a huge or negative length, or a
    # value followed by a length that does not fit.
    for i in range(min(4, len(data))):
        data[i] = 0xFF
    with contextlib.suppress(DecodeError):
        decode(type(msg), version, bytes(data))
