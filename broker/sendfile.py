"""Responses with records sent from their segment file, not through Python's memory.

A Fetch answered from the log (broker.handlers.fetch) may carry its records as a
`storage.FileSlice`, a run of batches in a segment file, instead of their bytes. Read into
memory and written to the socket, a fetch's records cross the kernel boundary twice (the
page cache copied into a `bytes`, that copied into the socket); `os.sendfile` hands the
page cache to the socket without either copy, as Kafka's network layer does for its
FileRecords (FileRecords.writeTo -> FileChannel.transferTo, which is sendfile(2) on Linux).

A response is a list of chunks that `os.writev` takes in one call. When a FileSlice is
among them, writev refuses the list (TypeError, before it writes anything), and
`write_some`, which the connection sends every response with, falls back to
`write_chunks`: writev for the bytes before the slice, sendfile for the slice, and so on.
That costs two more system calls per slice than one writev, so the fetch handler sends
small runs of records as bytes (SENDFILE_MIN_BYTES).
"""

from __future__ import annotations

import os
from typing import Any

from storage.segment import IOV_MAX, FileSlice

__all__ = ["SENDFILE_MIN_BYTES", "write_chunks", "write_some"]

# Records below this size go out as bytes: a pread and one writev cost less than the
# writev, sendfile and writev a slice among the chunks takes.
SENDFILE_MIN_BYTES = 64 * 1024


def write_some(fd: int, chunks: list[Any]) -> int:
    """Write what the non-blocking socket `fd` takes now of `chunks` (a response: buffers,
    and FileSlices among them for records sent from their file): the bytes written, 0 when
    it took nothing. One writev when the chunks are all buffers, as nearly always.

    Raises:
      OSError: as `write_chunks`, or the socket is gone.
    """
    try:
        return os.writev(fd, chunks if len(chunks) <= IOV_MAX else chunks[:IOV_MAX])
    except BlockingIOError:
        return 0
    except TypeError:  # a FileSlice among them: writev refused the list, writing nothing
        return write_chunks(fd, chunks)


def write_chunks(fd: int, chunks: list[Any]) -> int:
    """Write `chunks` (buffers and FileSlices) to the non-blocking socket `fd`, in order,
    as far as it takes them without waiting.

    Returns:
      The bytes written: fewer than the chunks hold when the socket took no more
      (0 when it took nothing).

    Raises:
      OSError: a slice's file ends before the slice does (truncated under the fetch;
        Kafka's FileRecords.writeTo fails the same way), or the socket is gone.
    """
    sent = 0
    i = 0
    n = len(chunks)
    while i < n:
        chunk = chunks[i]
        if type(chunk) is FileSlice:
            want = chunk.size
            try:
                k = os.sendfile(fd, chunk.fd, chunk.position, want) if want else 0
            except BlockingIOError:
                return sent
            if k == 0 and want:
                raise OSError(
                    f"segment file ended inside the records being sent ({want} bytes "
                    f"at {chunk.position})"
                )
            i += 1
        else:
            j = i + 1
            while j < n and j - i < IOV_MAX and type(chunks[j]) is not FileSlice:
                j += 1
            run = chunks[i:j]
            want = sum(map(len, run))
            try:
                k = os.writev(fd, run)
            except BlockingIOError:
                return sent
            i = j
        sent += k
        if k < want:
            return sent
    return sent
