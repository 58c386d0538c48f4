"""The record batches of a group coordinator's records in __consumer_offsets, and their
append: plain batches built from a template.

A group coordinator's records go in a plain batch (no producer, no compression, every
record at the append's wall-clock time), one per partition per outcome: for a commit, one
batch of one record. Only the records, the lengths, the timestamps and the CRC vary, so
the batch is packed here from constant parts rather than by `protocol.records.build_batch`,
whose general form (any timestamps, producer fields, compression, headers) cost a commit
more than its record did. The bytes are the same as `build_batch(records_in)`'s
(tests/broker/test_coordinator_batch.py compares them), which is what Kafka's
MemoryRecordsBuilder writes for the coordinator's records. Transactional batches
(TxnOffsetCommit) still go through `build_batch`. The transaction coordinator's records in
__transaction_state are plain batches of the same form (Kafka's TransactionStateManager
appends them uncompressed, at the append's time): broker.txn_runtime appends them with
`append_records` too.
"""

from __future__ import annotations

import struct
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from coordinator.records import PLAIN_VALUE_FORMAT, PLAIN_VALUE_SIZE, OffsetCommitRecord
from protocol.kept import keep
from protocol.primitives import uvarint_bytes
from protocol.records import BATCH_HEADER_SIZE, MAGIC, BatchHeader, build_batch, crc32c

if TYPE_CHECKING:
    from broker.topics import Topic, TopicRegistry
    from coordinator.outcome import AnyRecord
    from storage.log import Log

__all__ = ["Keyed", "append_one", "append_records", "build_coordinator_batch"]


class Keyed(Protocol):
    """A coordinator's record, as its batch holds it (coordinator.records' and
    coordinator.transactions.records')."""

    def key_bytes(self) -> bytes: ...

    def value_bytes(self) -> bytes | None: ...


def append_records(
    topic: Topic,
    wall_ms: int,
    by_partition: Mapping[int, Sequence[Keyed]],
    producer: tuple[int, int] | None = None,
) -> list[tuple[Log, int]]:
    """Append each partition's records (of __consumer_offsets or __transaction_state) as one
    batch at `wall_ms` (with `producer`, a transactional batch of that producer id and
    epoch); returns (log, end offset) of each."""
    written = []
    for pid, records in by_partition.items():
        partition = topic.partitions[pid]
        if producer is None:
            pairs = [(r.key_bytes(), r.value_bytes()) for r in records]
            batch = build_coordinator_batch(pairs, wall_ms)
        else:
            # Sequence -1, as Kafka's coordinator writes them: the epoch alone fences.
            batch = build_batch(
                [(r.key_bytes(), r.value_bytes(), (), wall_ms) for r in records],
                producer_id=producer[0],
                producer_epoch=producer[1],
                is_transactional=True,
            )
        partition.append(batch, wall_ms=wall_ms)
        written.append((partition.log, partition.log.log_end_offset))
    return written


def append_one(topics: TopicRegistry, wall_ms: int, pid: int, record: AnyRecord) -> Log:
    """`append_records` of one record to partition `pid`, no producer: the log written.
    The batch is packed at the log end offset, with the header it was packed from, so the
    log writes it as it is (`Log.append_stamped`) instead of parsing and stamping it."""
    partition = topics.offsets_topic(now_wall_ms=wall_ms).partitions[pid]
    log = partition.log
    base_offset = log.log_end_offset
    plain = record.plain_value() if type(record) is OffsetCommitRecord else None
    if plain is None:
        key, value = record.key_bytes(), record.value_bytes()
        batch, header = _one_record_batch(key, value, wall_ms, base_offset)
    else:
        batch, header = _commit_batch(record.key_bytes(), plain, wall_ms, base_offset)
    partition.append_stamped(batch, header, wall_ms=wall_ms)
    return log


# baseOffset, batchLength, partitionLeaderEpoch -1, magic 2, crc.
_PREFIX = struct.Struct(">qiibI")
# attributes 0, lastOffsetDelta, baseTimestamp, maxTimestamp, then the constant rest.
_TAIL = struct.Struct(">hiqq")
# producerId -1, producerEpoch -1, baseSequence -1 (recordsCount follows).
_NO_PRODUCER = struct.pack(">qhi", -1, -1, -1)
_COUNT = struct.Struct(">i")
# The zigzag varints of 0-1023 (one byte below 64, two from there): the lengths of almost
# every record and key, looked up rather than encoded by a call.
_SMALL = [uvarint_bytes(v << 1) for v in range(1024)]
_SMALL_LIMIT = len(_SMALL)
# A record's attributes 0 and timestampDelta 0 (every record has the batch's timestamp).
_RECORD_START = b"\x00\x00"
_NULL = b"\x01"  # zigzag(-1): a null value (a tombstone)
_NO_HEADERS = b"\x00"


def _varint(value: int) -> bytes:
    """Zigzag varint of a non-negative int (a length, an offset delta)."""
    if value < _SMALL_LIMIT:
        return _SMALL[value]
    return uvarint_bytes(value << 1)


def build_coordinator_batch(records: Sequence[tuple[bytes, bytes | None]], timestamp: int) -> bytes:
    """A v2 batch of (key, value) records (value None: a tombstone), all at `timestamp`,
    without producer id or compression; base offset 0. At least one record."""
    if len(records) == 1:
        return _one_record_batch(records[0][0], records[0][1], timestamp)[0]
    section: list[bytes] = []
    for delta, (key, value) in enumerate(records):
        n = len(key)
        parts = [
            _RECORD_START,
            _SMALL[delta] if delta < _SMALL_LIMIT else _varint(delta),
            _SMALL[n] if n < _SMALL_LIMIT else _varint(n),
            key,
        ]
        if value is None:
            parts.append(_NULL)
        else:
            n = len(value)
            parts += (_SMALL[n] if n < _SMALL_LIMIT else _varint(n), value)
        parts.append(_NO_HEADERS)
        record = b"".join(parts)
        n = len(record)
        section += (_SMALL[n] if n < _SMALL_LIMIT else _varint(n), record)
    count = len(records)
    tail = b"".join(
        (_TAIL.pack(0, count - 1, timestamp, timestamp), _NO_PRODUCER, _COUNT.pack(count))
    )
    body = b"".join(section)
    crc = crc32c(body, crc32c(tail))
    length = BATCH_HEADER_SIZE - 12 + len(body)
    return b"".join((_PREFIX.pack(0, length, -1, MAGIC, crc), tail, body))


# The whole header after the CRC for one record: attributes 0, lastOffsetDelta 0, the two
# timestamps, no producer, recordsCount 1.
_ONE_TAIL = struct.Struct(">hiqqqhii")
# A record's attributes 0, timestampDelta 0, offsetDelta 0.
_ONE_RECORD_START = b"\x00\x00\x00"
# BatchHeader from its fields without NamedTuple's Python-level __new__ (as protocol.records
# makes the headers it parses).
_new_header = tuple.__new__


def _one_record_batch(
    key: bytes, value: bytes | None, timestamp: int, base_offset: int = 0
) -> tuple[bytes, BatchHeader]:
    """`build_coordinator_batch` of one record (every commit of one partition) at
    `base_offset` (outside the CRC), and the batch's header: the record's length summed
    rather than measured, one join for the records section."""
    n = len(key)
    key_length = _SMALL[n] if n < _SMALL_LIMIT else _varint(n)
    if value is None:
        value_length, value = _NULL, b""
    else:
        n = len(value)
        value_length = _SMALL[n] if n < _SMALL_LIMIT else _varint(n)
    n = 4 + len(key_length) + len(key) + len(value_length) + len(value)  # 3 + ... + headers
    body = b"".join(
        (
            _SMALL[n] if n < _SMALL_LIMIT else _varint(n),
            _ONE_RECORD_START,
            key_length,
            key,
            value_length,
            value,
            _NO_HEADERS,
        )
    )
    tail = _ONE_TAIL.pack(0, 0, timestamp, timestamp, -1, -1, -1, 1)
    crc = crc32c(body, crc32c(tail))
    length = BATCH_HEADER_SIZE - 12 + len(body)
    header = (base_offset, length, -1, MAGIC, crc, 0, 0, timestamp, timestamp, -1, -1, -1, 1)
    batch = b"".join((_PREFIX.pack(base_offset, length, -1, MAGIC, crc), tail, body))
    return batch, _new_header(BatchHeader, header)


# The batch of a commit whose value is plain (coordinator.records.PLAIN_VALUE_FORMAT), by
# its key: everything after the CRC is one struct per key, whose fields are the two
# timestamps, the constant run from the producer fields to the value (no producer,
# recordsCount 1, the record's length, start and key, the value's length), and the value's
# fields; attributes and lastOffsetDelta (0) and the record's headers (none) are its pad
# bytes. Made once per key (at most ~10,000 kept, emptied when full), as the keys are.
_COMMIT_TEMPLATES: dict[bytes, tuple[struct.Struct, int, bytes]] = {}
_COMMIT_TEMPLATES_KEPT = 10_000


def _commit_template(key: bytes) -> tuple[struct.Struct, int, bytes]:
    key_length = _varint(len(key))
    value_length = _varint(PLAIN_VALUE_SIZE)
    record_length = len(_ONE_RECORD_START) + len(key_length) + len(key) + len(value_length)
    record_length += PLAIN_VALUE_SIZE + len(_NO_HEADERS)
    run = b"".join(
        (
            _NO_PRODUCER,
            _COUNT.pack(1),
            _varint(record_length),
            _ONE_RECORD_START,
            key_length,
            key,
            value_length,
        )
    )
    body = struct.Struct(f">6xqq{len(run)}s{PLAIN_VALUE_FORMAT}x")
    template = (body, _PREFIX.size - 12 + body.size, run)
    return keep(_COMMIT_TEMPLATES, key, template, _COMMIT_TEMPLATES_KEPT)


def _commit_batch(
    key: bytes, plain: tuple[int, int, int, int, int], timestamp: int, base_offset: int
) -> tuple[bytes, BatchHeader]:
    """`_one_record_batch(key, value, timestamp, base_offset)` of a commit whose value is
    plain, from the key's template: one pack and one CRC."""
    template = _COMMIT_TEMPLATES.get(key)
    if template is None:
        template = _commit_template(key)
    body, length, run = template
    after_crc = body.pack(timestamp, timestamp, run, *plain)
    crc = crc32c(after_crc)
    header = (base_offset, length, -1, MAGIC, crc, 0, 0, timestamp, timestamp, -1, -1, -1, 1)
    batch = _PREFIX.pack(base_offset, length, -1, MAGIC, crc) + after_crc
    return batch, _new_header(BatchHeader, header)
