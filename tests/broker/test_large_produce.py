"""Large Produce requests (over RECEIVE_BYTES, up to DIRECT_FRAME_BYTES), as a producer
with a large batch.size sends them: answered in place by the reactor's step when the whole
frame is in the socket (`_Connection._take_large`), by a task of the connection's own when
it is not (`_receive_large`). Both must store the same bytes, and give back the memory.

Checked through real sockets against an in-process broker, with requests that carry a
batch for each of two partitions: the log files read back byte for byte (each partition's
batches as sent, base offsets assigned), the same after a restart, and the way each frame
was received (the number of times a task served the connection).
"""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from broker import connection
from broker.limits import DIRECT_FRAME_BYTES, direct_frame_buffer
from protocol.errors import ErrorCode
from protocol.frames import decode_response, frame_size
from protocol.messages.fetch import FetchPartition, FetchRequest, FetchTopic
from protocol.messages.produce import (
    PartitionProduceData,
    ProduceRequest,
    ProduceResponse,
    TopicProduceData,
)
from protocol.records import build_batch, set_base_offset
from tests.reliability.inproc import create_topics_request, running
from tests.wire import WireClient, request_bytes

KIB = 1024
REQUESTS = 4
PARTITIONS = 2  # a batch for each in every request
RECORDS = 750  # of 200 bytes: batches of ~155 KiB, a request of ~310 KiB


def _batches() -> list[list[bytes]]:
    """Per request, one batch per partition."""
    return [
        [
            build_batch(
                [(None, os.urandom(200), (), 1_700_000_000_000 + i) for i in range(RECORDS)]
            )
            for _ in range(PARTITIONS)
        ]
        for _ in range(REQUESTS)
    ]


def _frame(batches: list[bytes], correlation_id: int) -> bytes:
    request = ProduceRequest(
        acks=-1,
        timeout_ms=5000,
        topic_data=[
            TopicProduceData(
                name="big",
                partition_data=[
                    PartitionProduceData(index=p, records=batch) for p, batch in enumerate(batches)
                ],
            )
        ],
    )
    return request_bytes(request, 9, correlation_id=correlation_id)


def _expected_log(batches: list[list[bytes]], partition: int) -> bytes:
    """The partition's log file: its batches in request order, base offsets assigned."""
    out = bytearray()
    for i, request in enumerate(batches):
        stored = bytearray(request[partition])
        set_base_offset(stored, 0, i * RECORDS)
        out += stored
    return bytes(out)


def _check_logs(data_dir: Path, batches: list[list[bytes]]) -> None:
    for p in range(PARTITIONS):
        log = (data_dir / f"big-{p}" / f"{0:020d}.log").read_bytes()
        assert log == _expected_log(batches, p), f"big-{p}"


def _check_response(response: ProduceResponse, i: int) -> None:
    parts = response.responses[0].partition_responses
    assert [(p.index, p.error_code, p.base_offset) for p in parts] == [
        (p, ErrorCode.NONE, i * RECORDS) for p in range(PARTITIONS)
    ]


class _Served:
    """Counts the times a task of its own served a connection (`_Connection.serve`)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        serve = connection._Connection.serve

        async def counted(conn: Any, *args: Any) -> None:
            self.count += 1
            await serve(conn, *args)

        monkeypatch.setattr(connection._Connection, "serve", counted)


async def _receive_response(sock: socket.socket) -> tuple[int, ProduceResponse]:
    prefix = b""
    while len(prefix) < 4:
        await trio.lowlevel.wait_readable(sock)
        prefix += sock.recv(4 - len(prefix))
    size = frame_size(prefix)
    body = b""
    while len(body) < size:
        await trio.lowlevel.wait_readable(sock)
        body += sock.recv(size - len(body))
    correlation_id, response = decode_response(ProduceResponse, 9, body)
    return correlation_id, response


async def _create(broker: Any) -> None:
    client = await WireClient.connect(broker)
    response = await client.call(create_topics_request("big", PARTITIONS), 7)
    assert response.topics[0].error_code == ErrorCode.NONE
    await client.aclose()


def _client(broker: Any) -> socket.socket:
    """A plain socket whose send buffer takes a whole request at once: a send of one
    returns with all of it on its way, so the broker finds the frame whole (a client with
    a large batch sends it in one writev, as librdkafka does)."""
    sock = socket.create_connection(broker.addresses[0], timeout=5)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 8 * 1024 * KIB)
    return sock


async def test_large_produce_requests_sent_whole_are_answered_in_place_and_stored_as_sent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    batches = _batches()
    data_dir = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data_dir) as broker:
            await _create(broker)
            served = _Served(monkeypatch)
            sock = _client(broker)
            for i, batch in enumerate(batches):
                sock.sendall(_frame(batch, 100 + i))  # the whole frame, before the broker runs
                correlation_id, response = await _receive_response(sock)
                assert correlation_id == 100 + i
                _check_response(response, i)
            assert served.count == 0  # every frame answered by the reactor's step
            assert broker.memory_pool.used == 0
            assert broker.memory_pool.peak >= PARTITIONS * len(batches[0][0])
            sock.close()
            _check_logs(data_dir, batches)
    # Recovered from the file after a restart: the same bytes, read back by a Fetch.
    with trio.fail_after(30):
        async with running(data_dir) as broker:
            client = await WireClient.connect(broker)
            fetch = FetchRequest(
                max_wait_ms=0,
                min_bytes=1,
                max_bytes=8 * 1024 * KIB,
                isolation_level=0,
                topics=[
                    FetchTopic(
                        topic="big",
                        partitions=[
                            FetchPartition(
                                partition=p, fetch_offset=0, partition_max_bytes=4 * 1024 * KIB
                            )
                            for p in range(PARTITIONS)
                        ],
                    )
                ],
            )
            response = await client.call(fetch, 11)
            for p, partition in enumerate(response.responses[0].partitions):
                assert partition.high_watermark == REQUESTS * RECORDS
                assert bytes(partition.records) == _expected_log(batches, p)
            await client.aclose()


@pytest.mark.parametrize("first", [100 * KIB, 64 * KIB + 1])
async def test_a_large_frame_whose_rest_arrives_later_is_finished_by_a_task_with_the_same_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, first: int
) -> None:
    # The step begins the frame (its first `first` bytes are in the socket), finds no more,
    # and hands it to a task, which receives the rest into the same buffer.
    batches = _batches()
    data_dir = tmp_path / "data"
    with trio.fail_after(30):
        async with running(data_dir) as broker:
            await _create(broker)
            served = _Served(monkeypatch)
            sock = _client(broker)
            for i, batch in enumerate(batches):
                frame = _frame(batch, 100 + i)
                sock.sendall(frame[:first])
                await trio.testing.wait_all_tasks_blocked(0.01)
                assert broker.memory_pool.used == len(frame) - 4  # reserved whole, once
                sock.sendall(frame[first:])
                correlation_id, response = await _receive_response(sock)
                assert correlation_id == 100 + i
                _check_response(response, i)
            assert served.count == REQUESTS
            assert broker.memory_pool.used == 0
            sock.close()
            _check_logs(data_dir, batches)


async def test_a_client_closing_in_a_large_frame_begun_in_place_is_closed_and_frees_its_memory(
    tmp_path: Path,
) -> None:
    batch = _batches()[0]
    with trio.fail_after(30):
        async with running(tmp_path / "data") as broker:
            await _create(broker)
            sock = _client(broker)
            sock.sendall(_frame(batch, 1)[: 100 * KIB])
            await trio.testing.wait_all_tasks_blocked(0.01)
            assert broker.memory_pool.used > 0
            sock.close()
            await trio.testing.wait_all_tasks_blocked(0.01)
            assert broker.memory_pool.used == 0
            assert not broker.connections
            # The broker goes on: a whole one on a new connection is stored at offset 0.
            sock = _client(broker)
            sock.sendall(_frame(batch, 2))
            _, response = await _receive_response(sock)
            _check_response(response, 0)
            sock.close()


@pytest.mark.parametrize("size", [64 * KIB + 1, 300 * KIB, DIRECT_FRAME_BYTES])
def test_a_direct_frame_buffer_is_a_bytearray_of_its_size_that_takes_every_byte(size: int) -> None:
    # Not zeroed (broker.limits): what is checked is that it is a plain bytearray of
    # exactly `size` bytes, every one writable, as the frame's receive and decoder need.
    data = os.urandom(size)
    buffer = direct_frame_buffer(size)
    assert type(buffer) is bytearray
    assert len(buffer) == size
    memoryview(buffer)[:] = data
    assert buffer == data
    buffer.append(1)  # an ordinary bytearray: it can grow, and is freed like one
    assert len(buffer) == size + 1


@pytest.mark.parametrize("buffered", [0, 10])
async def test_a_large_frame_read_first_goes_straight_to_its_buffer_as_one_begun_buffered(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, buffered: int
) -> None:
    # With nothing buffered, the step's first read of a large frame is copied straight into
    # the frame's own buffer (`_take_first`); when a part of the frame came before it (here
    # `buffered` bytes, read on their own), the frame is begun from the receive buffer
    # (FrameBuffer.start_large_frame). The same bytes are stored either way.
    batches = _batches()
    data_dir = tmp_path / "data"
    begun: list[int] = []
    start_large_frame = connection.FrameBuffer.start_large_frame

    def counted(frames: Any, *args: Any) -> Any:
        begun.append(len(frames))
        return start_large_frame(frames, *args)

    with trio.fail_after(30):
        async with running(data_dir) as broker:
            await _create(broker)
            monkeypatch.setattr(connection.FrameBuffer, "start_large_frame", counted)
            sock = _client(broker)
            for i, batch in enumerate(batches):
                frame = _frame(batch, 100 + i)
                if buffered:
                    sock.sendall(frame[:buffered])
                    await trio.testing.wait_all_tasks_blocked(0.01)
                sock.sendall(frame[buffered:])
                correlation_id, response = await _receive_response(sock)
                assert correlation_id == 100 + i
                _check_response(response, i)
            assert broker.memory_pool.used == 0
            sock.close()
            _check_logs(data_dir, batches)
    # The frames read first went straight to their buffers; the others were begun from the
    # receive buffer, holding the bytes read before and a full read after them.
    assert begun == ([buffered + connection.RECEIVE_BYTES] * REQUESTS if buffered else [])
