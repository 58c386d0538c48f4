"""Reading a whole partition's log at start-up, for the replays of __consumer_offsets
(broker.offsets_scan), __transaction_state (broker.txn_runtime) and _schemas
(broker.schema_registry_http): a chunk at a time in a worker thread, each chunk's whole
batches past what the previous chunks held."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import trio

from protocol.records import iter_batches

if TYPE_CHECKING:
    from protocol.records import BatchHeader
    from storage.log import Log

__all__ = ["REPLAY_READ_BYTES", "Chunk", "log_chunks"]

REPLAY_READ_BYTES = 4 * 1024 * 1024

# ((header, bytes) of each whole batch read and not read before, the offset they were read
# from: a record below it is in a batch the log starts inside of)
Chunk = tuple[list[tuple["BatchHeader", memoryview]], int]


async def log_chunks(plog: Log, read_bytes: int = REPLAY_READ_BYTES) -> AsyncIterator[Chunk]:
    """The log from its start offset to its end offset at the call, as chunks of about
    `read_bytes` (one batch at least), in order; a checkpoint after each."""
    offset = plog.log_start_offset
    end = plog.log_end_offset
    while offset < end:
        data = await trio.to_thread.run_sync(plog.read_bytes, offset, read_bytes)
        view = memoryview(data)
        batches = [
            (h, view[pos : pos + h.size]) for pos, h in iter_batches(data) if h.next_offset > offset
        ]
        if not batches:
            break
        yield batches, offset
        offset = batches[-1][0].next_offset
        await trio.lowlevel.checkpoint()
