"""Fetch responses whose records go from the segment file to the socket (broker.sendfile).

Checked through real sockets against an in-process broker: the records sent from the file
are the log's bytes, byte for byte, and the same as those the general path reads into
memory (a fetch of records under SENDFILE_MIN_BYTES, or with the threshold raised, and a
read_committed fetch of a partition with an aborted transaction); a
response the client does not take at once is finished from where the socket stopped,
before the next one. `write_chunks` itself on a socket pair: buffers and slices in order,
a stop where the socket is full, and a file that ends inside its slice.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from broker import connection, sendfile
from broker.handlers import fetch
from broker.sendfile import SENDFILE_MIN_BYTES, write_chunks
from protocol.errors import ErrorCode
from protocol.frames import decode_response, frame_size
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchResponse, FetchTopic
from protocol.records import build_batch
from storage.segment import FileHandle, FileSlice
from tests.reliability.inproc import create_topics_request, running
from tests.wire import WireClient, request_bytes

KIB = 1024
BATCHES = 4
RECORDS = 1000  # of 100 bytes: batches of ~110 KB


def _batches() -> list[bytes]:
    return [
        build_batch([(None, os.urandom(100), (), 1_700_000_000_000 + i) for i in range(RECORDS)])
        for _ in range(BATCHES)
    ]


def _small_batch() -> bytes:
    return build_batch([(None, b"x" * 100, (), 1_700_000_000_000)])


def _fetch(isolation_level: int = 0, *, max_bytes: int = 4 * 1024 * KIB, offset: int = 0) -> Any:
    return FetchRequest(
        max_wait_ms=0,
        min_bytes=1,
        max_bytes=max_bytes,
        isolation_level=isolation_level,
        topics=[
            FetchTopic(
                topic="big",
                partitions=[
                    FetchPartition(partition=0, fetch_offset=offset, partition_max_bytes=max_bytes)
                ],
            )
        ],
    )


@contextlib.asynccontextmanager
async def _filled(tmp_path: Path, batches: list[bytes]) -> AsyncIterator[tuple[Any, bytes]]:
    """A broker whose topic "big" holds `batches` (appended to its log directly), and the
    bytes of its segment file."""
    data_dir = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data_dir) as broker:
            client = await WireClient.connect(broker)
            response = await client.call(create_topics_request("big", 1), 7)
            assert response.topics[0].error_code == ErrorCode.NONE
            await client.aclose()
            partition = broker.topics.partition("big", 0)
            for batch in batches:
                partition.append(batch, wall_ms=broker.wall_ms())
            yield broker, (data_dir / "big-0" / f"{0:020d}.log").read_bytes()


class _Sent:
    """Counts the sends through `write_chunks` (several for a response the socket takes in
    parts) and the slices read into memory instead."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        self.reads = 0
        read_bytes = FileSlice.read_bytes

        def counted(fd: int, chunks: list[Any]) -> int:
            self.count += 1
            return write_chunks(fd, chunks)

        def counted_read(piece: FileSlice) -> bytes:
            self.reads += 1
            return read_bytes(piece)

        monkeypatch.setattr(sendfile, "write_chunks", counted)
        monkeypatch.setattr(FileSlice, "read_bytes", counted_read)


async def test_records_sent_from_the_file_are_the_logs_bytes_as_the_general_path_reads_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _filled(tmp_path, [*_batches(), _small_batch()]) as (broker, log_file):
        sent = _Sent(monkeypatch)
        client = await WireClient.connect(broker)
        sent_from_file = [await client.call(_fetch(level), 11) for level in (0, 1)]
        assert (sent.count > 0, sent.reads) == (True, 0)
        sends = sent.count
        # The general path: records read into memory, then written with the response.
        monkeypatch.setattr(fetch, "SENDFILE_MIN_BYTES", 1 << 40)
        read = [await client.call(_fetch(level), 11) for level in (0, 1)]
        assert (sent.count, sent.reads) == (sends, 2)
        monkeypatch.undo()
        sent = _Sent(monkeypatch)
        for from_file, from_memory in zip(sent_from_file, read, strict=True):
            assert from_file == from_memory
            assert bytes(from_file.responses[0].partitions[0].records) == log_file
        # read_committed: no aborted transaction, none listed (the batches not read).
        assert sent_from_file[1].responses[0].partitions[0].aborted_transactions == []
        # Records under SENDFILE_MIN_BYTES (the last, small batch alone) are read too.
        small = await client.call(_fetch(offset=BATCHES * RECORDS), 11)
        assert (sent.count, sent.reads) == (0, 1)
        last = bytes(small.responses[0].partitions[0].records)
        assert 0 < len(last) < SENDFILE_MIN_BYTES
        assert log_file.endswith(last)
        await client.aclose()


async def test_a_response_the_client_takes_slowly_is_sent_whole_and_in_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with _filled(tmp_path, _batches()) as (broker, log_file):
        sent = _Sent(monkeypatch)
        sock = socket.create_connection(broker.addresses[0], timeout=5)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 16 * KIB)
        # Two fetches at once: the first response fills the socket and stops, the rest
        # of it goes from the file later, then the second response.
        sock.sendall(
            request_bytes(_fetch(), 11, correlation_id=1)
            + request_bytes(_fetch(offset=RECORDS), 11, correlation_id=2)
        )
        await trio.testing.wait_all_tasks_blocked(0.01)
        assert any(c.queue for c in broker.connections)
        sock.setblocking(False)
        got = bytearray()
        for correlation_id, expected in ((1, log_file), (2, log_file[len(log_file) // 4 :])):
            while len(got) < 4 or len(got) < 4 + frame_size(bytes(got[:4])):
                await trio.lowlevel.wait_readable(sock)
                got += sock.recv(1 << 20)
            size = 4 + frame_size(bytes(got[:4]))
            frame, got = bytes(got[4:size]), got[size:]
            answered, response = decode_response(FetchResponse, 11, frame)
            assert answered == correlation_id
            assert bytes(response.responses[0].partitions[0].records) == expected
        assert sent.count >= 3  # each response's first send, and the rest of the first
        sock.close()


def _file(tmp_path: Path, data: bytes) -> FileHandle:
    path = tmp_path / "segment"
    path.write_bytes(data)
    return FileHandle(os.open(path, os.O_RDWR))


def test_write_chunks_sends_buffers_and_slices_in_order_and_stops_where_the_socket_is_full(
    tmp_path: Path,
) -> None:
    data = os.urandom(600 * KIB)
    handle = _file(tmp_path, data)
    chunks: list[Any] = [b"head", memoryview(b"-mid-"), FileSlice(handle, 1000, 500 * KIB), b"t"]
    expected = b"head-mid-" + data[1000 : 1000 + 500 * KIB] + b"t"
    sender, receiver = socket.socketpair()
    sender.setblocking(False)
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 * KIB)
    got = bytearray()
    left = chunks
    stops = 0
    while left:
        n = write_chunks(sender.fileno(), left)
        total = sum(map(len, left))
        assert 0 <= n <= total
        if n < total:
            stops += 1
        left = connection._unsent(left, n) if n < total else []
        while True:  # what the socket holds now
            receiver.setblocking(False)
            try:
                got += receiver.recv(1 << 20)
            except BlockingIOError:
                break
    assert bytes(got) == expected
    assert stops > 0  # the socket was full at least once, in the middle of the slice
    sender.close()
    receiver.close()


def test_write_chunks_refuses_a_slice_whose_file_ends_inside_it(tmp_path: Path) -> None:
    handle = _file(tmp_path, os.urandom(100 * KIB))
    piece = FileSlice(handle, 0, 100 * KIB)
    os.ftruncate(handle.fd, 10 * KIB)  # truncated under the fetch
    sender, receiver = socket.socketpair()
    sender.setblocking(False)
    sender.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4 * 1024 * KIB)
    receiver.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * KIB)
    sent = write_chunks(sender.fileno(), [b"head", piece])
    assert sent == 4 + 10 * KIB  # as far as the file went
    with pytest.raises(OSError, match="ended inside the records"):
        write_chunks(sender.fileno(), [piece.after(10 * KIB)])
    sender.close()
    receiver.close()


async def test_transactions_over_the_wire_with_records_of_any_size_sent_from_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every fetch that can sends its records from the file; a read_committed one of a
    # partition with an aborted transaction reads them, to list the transactions they overlap.
    from tests.broker.handlers.test_transactions import test_abort_then_commit_over_the_wire

    monkeypatch.setattr(fetch, "SENDFILE_MIN_BYTES", 1)
    sent = _Sent(monkeypatch)
    await test_abort_then_commit_over_the_wire(tmp_path)
    assert sent.count > 0
    assert sent.reads > 0
