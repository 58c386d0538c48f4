"""The coordinator's batch template (broker.coordinator_batch) writes the bytes
`protocol.records.build_batch` writes for the same records, and they read back."""

from __future__ import annotations

import pytest

from broker.coordinator_batch import (
    _SMALL,
    _commit_batch,
    _one_record_batch,
    _varint,
    build_coordinator_batch,
)
from coordinator.classic.group import OffsetAndMetadata
from coordinator.records import OffsetCommitRecord
from protocol.primitives import uvarint_bytes
from protocol.records import build_batch, decode_records, parse_batch_header, validate_batch

CASES = [
    [(b"k", b"v")],
    [(b"key", None)],  # a tombstone
    [(b"k" * 63, b"v" * 64)],  # one-byte and two-byte varint lengths
    [(b"k" * 200, b"v" * 20_000)],  # a record length of three varint bytes
    [(bytes([i]) * (i + 1), None if i % 3 == 0 else b"x" * i) for i in range(70)],
]


@pytest.mark.parametrize("records", CASES)
@pytest.mark.parametrize("timestamp", [0, 1_700_000_000_000, -1])
def test_template_batch_is_build_batchs(
    records: list[tuple[bytes, bytes | None]], timestamp: int
) -> None:
    batch = build_coordinator_batch(records, timestamp)
    assert batch == build_batch([(k, v, (), timestamp) for k, v in records])
    validate_batch(batch)  # the CRC and the lengths hold
    header = parse_batch_header(batch)
    assert (header.records_count, header.max_timestamp) == (len(records), timestamp)
    decoded = decode_records(batch)
    assert [(r.key, r.value) for r in decoded] == records
    assert [r.offset for r in decoded] == list(range(len(records)))


def test_varint_table_is_uvarint_bytes() -> None:
    for v in range(3000):
        assert _varint(v) == uvarint_bytes(v << 1)
    assert all(_SMALL[v] == uvarint_bytes(v << 1) for v in range(len(_SMALL)))


@pytest.mark.parametrize("base_offset", [0, 1, 2**40 + 7])
@pytest.mark.parametrize("records", [c for c in CASES if len(c) == 1])
def test_one_record_header_is_the_parsed_one(
    records: list[tuple[bytes, bytes | None]], base_offset: int
) -> None:
    # append_one hands the log this header instead of letting it parse the batch.
    ((key, value),) = records
    batch, header = _one_record_batch(key, value, 1_700_000_000_000, base_offset)
    assert header == parse_batch_header(batch)
    assert type(header) is type(parse_batch_header(batch))
    assert header.size == len(batch)
    assert header.base_offset == base_offset
    # The base offset is outside the CRC: the batch at 0 but for its first 8 bytes.
    at_zero = build_coordinator_batch(records, 1_700_000_000_000)
    assert batch == base_offset.to_bytes(8, "big") + at_zero[8:]
    validate_batch(batch)


@pytest.mark.parametrize("group_id", ["g", "g" * 40, "g" * 63, "é" * 70, "g" * 300])
@pytest.mark.parametrize(
    ("offset", "leader_epoch", "timestamp"),
    [(0, -1, 0), (1000, 7, 1_700_000_000_000), (2**63 - 1, 2**31 - 1, -1)],
)
def test_a_plain_commits_template_batch_is_the_general_ones(
    group_id: str, offset: int, leader_epoch: int, timestamp: int
) -> None:
    # Key lengths across the varint steps of the key, record and batch lengths; the same
    # key twice, the second time from the kept template.
    record = OffsetCommitRecord(
        group_id, "topic", 3, OffsetAndMetadata(offset, leader_epoch, "", timestamp)
    )
    plain = record.plain_value()
    assert plain is not None
    for base_offset in (0, 12345):
        general = _one_record_batch(
            record.key_bytes(), record.value_bytes(), timestamp, base_offset
        )
        for _ in range(2):
            batch, header = _commit_batch(record.key_bytes(), plain, timestamp, base_offset)
            assert (batch, header) == general
            assert type(header) is type(general[1])


def test_only_a_commit_without_metadata_or_expiry_is_plain() -> None:
    def record(metadata: str, expire: int | None) -> OffsetCommitRecord:
        return OffsetCommitRecord("g", "t", 0, OffsetAndMetadata(1, -1, metadata, 5, expire))

    assert record("", None).plain_value() == (3, 1, -1, 0, 5)
    assert record("m", None).plain_value() is None
    assert record("", 10).plain_value() is None
