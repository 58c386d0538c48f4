"""The scan of one __consumer_offsets partition that replay starts with (broker.runtime):
every record's effect is "the state of this key is now this value", so only the last
record of each key matters (what the log cleaner keeps). The scan keeps the raw bytes of
each key's last record, in the order of those last writes, for the runtime to decode
(decoding is most of replay's cost), and the transactional commits still waiting for their
producer's marker."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from broker.log_replay import log_chunks
from protocol.control_records import read_txn_marker
from protocol.errors import KafkaError
from protocol.records import ControlRecordType, decode_records, validate_batch

if TYPE_CHECKING:
    from protocol.records import BatchHeader
    from storage.log import Log

__all__ = ["Latest", "OpenTxns", "scan_partition"]

# key -> (value, offset, batch header) of the key's last record, in the order of last writes.
Latest = dict[bytes, tuple[bytes | None, int, "BatchHeader"]]
# producer id -> its transactional commits (key, value, offset, header), in log order.
OpenTxns = dict[int, list[tuple[bytes, bytes | None, int, "BatchHeader"]]]


async def scan_partition(
    plog: Log, skip: Callable[[Log, BatchHeader, Exception], None]
) -> tuple[Latest, OpenTxns, int]:
    """(the last record of each key, the open transactions' commits, how many plain
    records were read) of one partition; `skip` is told of each batch it cannot read."""
    replayed = 0
    latest: Latest = {}
    # Transactional offset commits waiting for their producer's marker, in log order.
    open_txns: OpenTxns = {}
    async for batches, first in log_chunks(plog):
        for header, batch in batches:
            if header.is_control:
                try:
                    marker = read_txn_marker(batch)
                except KafkaError as e:
                    skip(plog, header, e)
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
                skip(plog, header, e)
                continue
            for record in records:
                if record.offset < first or record.key is None:
                    continue
                if header.is_transactional:
                    open_txns.setdefault(header.producer_id, []).append(
                        (record.key, record.value, record.offset, header)
                    )
                    continue
                latest.pop(record.key, None)  # keep the order of last writes
                latest[record.key] = (record.value, record.offset, header)
                replayed += 1
    return latest, open_txns, replayed
