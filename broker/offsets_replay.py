"""The replay of a __consumer_offsets partition at start (broker.runtime's
CoordinatorRuntime.run): only the last record of each key is decoded and replayed, and a
damaged batch or record is skipped and reported rather than failing the load.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

import trio

from protocol.control_records import read_txn_marker
from protocol.errors import KafkaError
from protocol.records import ControlRecordType, decode_records, iter_batches, validate_batch
from protocol.schema import DecodeError

if TYPE_CHECKING:
    from coordinator.coordinator import GroupCoordinator
    from protocol.records import BatchHeader
    from storage.log import Log

log = logging.getLogger("broker.runtime")

REPLAY_READ_BYTES = 4 * 1024 * 1024


class Replaying(Protocol):
    """What the replay reads and counts of the runtime."""

    coordinator: GroupCoordinator
    replayed_records: int
    replay_errors: int
    # Transactional offset commits without a marker (log, producer id, key, value, batch).
    open_txn_offsets: list[tuple[Log, int, bytes, bytes | None, BatchHeader]]


async def replay_partition(runtime: Replaying, plog: Log) -> None:
    """Replay one partition: every record's effect is "the state of this key is now
    this value", so only the last record of each key matters (what the log cleaner
    keeps). The scan keeps the raw bytes of each key's last record, in the order of
    those last writes, and decodes only them: equivalent to replaying everything, and
    several times faster on an uncompacted log (decoding is most of replay's cost)."""
    latest: dict[bytes, tuple[bytes | None, int, BatchHeader]] = {}
    # Transactional offset commits waiting for their producer's marker, in log order.
    open_txns: dict[int, list[tuple[bytes, bytes | None, int, BatchHeader]]] = {}
    offset = plog.log_start_offset
    end = plog.log_end_offset
    while offset < end:
        data = await trio.to_thread.run_sync(plog.read_bytes, offset, REPLAY_READ_BYTES)
        if not data:
            break
        for pos, header in iter_batches(data):
            if header.next_offset <= offset:
                continue
            batch = memoryview(data)[pos : pos + header.size]
            if header.is_control:
                offset = header.next_offset
                try:
                    marker = read_txn_marker(batch)
                except KafkaError as e:
                    skip_unreadable(runtime, plog, header, e)
                    continue
                for key, value, record_offset, txn_header in open_txns.pop(header.producer_id, ()):
                    if marker.control_type is ControlRecordType.COMMIT:
                        latest.pop(key, None)
                        latest[key] = (value, record_offset, txn_header)
                continue
            try:
                # Recovery checked the CRCs of the last segment only; older segments
                # are trusted by storage, so check them here, where we decode.
                validate_batch(batch)
                records = decode_records(batch)
            except KafkaError as e:
                skip_unreadable(runtime, plog, header, e)
                offset = header.next_offset
                continue
            for record in records:
                if record.offset < offset or record.key is None:
                    continue
                if header.is_transactional:
                    open_txns.setdefault(header.producer_id, []).append(
                        (record.key, record.value, record.offset, header)
                    )
                    continue
                latest.pop(record.key, None)  # keep the order of last writes
                latest[record.key] = (record.value, record.offset, header)
                runtime.replayed_records += 1
            offset = header.next_offset
        await trio.lowlevel.checkpoint()
    for i, (key, (value, record_offset, header)) in enumerate(latest.items()):
        try:
            runtime.coordinator.replay(key, value)
        except DecodeError as e:
            skip_unreadable(runtime, plog, header, e, record_offset)
        if i % 4096 == 4095:
            await trio.lowlevel.checkpoint()
    runtime.open_txn_offsets.extend(
        (plog, producer_id, key, value, header)
        for producer_id, records in open_txns.items()
        for key, value, _, header in records
    )


def skip_unreadable(
    runtime: Replaying, plog: Log, header: BatchHeader, error: Exception, offset: int | None = None
) -> None:
    """A damaged __consumer_offsets batch or record: Kafka fails the load of that
    partition; kmock skips what it cannot read, says so, and loads the rest, so one
    flipped bit costs the offsets it held, not every group on the partition."""
    where = (
        f"offset {offset}"
        if offset is not None
        else f"batch {header.base_offset}-{header.last_offset}"
    )
    runtime.replay_errors += 1
    log.error("skipped unreadable %s of %s during replay: %s", where, plog.path.name, error)
