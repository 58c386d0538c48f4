"""Responses sent together at the end of a reactor pass (broker.reactor, "Replies"): in a
pass of several connections each step leaves its responses in its connection's outbox,
sent once the pass is over. Commits made at once over real sockets are all acknowledged,
each after its record is in the log, read back, and replayed after a restart; a pipelined
client gets its answers in order; a failed append fails exactly its commits; a client
that does not read gets the rest of its answers from a task once it reads; the strict
durability mode still answers a commit only after its fsync.

The requests are sent with plain writes on the clients' sockets, one after the other with
no checkpoint between them, so that the reactor finds them all in one poll.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from broker.connection import _Connection
from broker.reactor import TASK
from protocol.errors import ErrorCode
from protocol.frames import decode_response, parse_response_header
from protocol.messages.api_versions import ApiVersionsRequest
from protocol.messages.offset_commit import OffsetCommitResponse
from storage.layout import OFFSETS_TOPIC
from tests.broker import test_storage_errors
from tests.broker.handlers.test_offset_commit import commit_request
from tests.broker.test_concurrent_commits import (
    _committed_in_log,
    _committed_in_memory,
    _groups_of_one_partition,
)
from tests.broker.test_storage_errors import FaultyOs
from tests.reliability.inproc import committed, create, running
from tests.wire import WireClient, read_frame, request_bytes

CLIENTS = 12


def _write(client: WireClient, data: bytes) -> None:
    """Send without a checkpoint (the socket takes it whole: it is small)."""
    assert os.write(client.stream.socket.fileno(), data) == len(data)


def _send_commits(clients: list[WireClient], groups: list[str], offset: int) -> None:
    """Each client's commit of `offset` + its index, written at once."""
    for i, (client, group) in enumerate(zip(clients, groups, strict=True)):
        _write(
            client,
            request_bytes(commit_request(group, {("t", 0): offset + i}), 9, correlation_id=i),
        )


async def _answer_codes(client: WireClient, count: int = 1) -> list[tuple[int, int]]:
    """(correlation id, error code) of the next `count` OffsetCommit answers."""
    answers = []
    for _ in range(count):
        frame = await read_frame(client.stream)
        assert frame is not None, "connection closed instead of a response"
        correlation_id, response = decode_response(OffsetCommitResponse, 9, frame)
        answers.append((correlation_id, response.topics[0].partitions[0].error_code))
    return answers


class _Sends:
    """The number of responses each end-of-pass send of the broker's reactor had."""

    def __init__(self, broker: Any, monkeypatch: pytest.MonkeyPatch) -> None:
        self.sizes: list[int] = []
        reactor = broker.reactors[broker.node_id]
        send = reactor._send_outgoing

        def counted() -> None:
            self.sizes.append(len(reactor.outgoing))
            send()

        monkeypatch.setattr(reactor, "_send_outgoing", counted)


async def test_commits_of_one_pass_are_answered_together_after_their_records(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with trio.fail_after(60):
        async with running(tmp_path) as broker:
            clients = [await WireClient.connect(broker) for _ in range(CLIENTS)]
            await create(clients[0], "t")
            pid, groups = _groups_of_one_partition(broker, CLIENTS)
            sends = _Sends(broker, monkeypatch)
            _send_commits(clients, groups, 100)
            for i, client in enumerate(clients):
                assert await _answer_codes(client) == [(i, ErrorCode.NONE)]
            assert max(sends.sizes) > 1  # answered together at the end of a pass
            expected = {(g, "t", 0): 100 + i for i, g in enumerate(groups)}
            assert _committed_in_memory(broker, groups) == expected
            assert _committed_in_log(broker, pid) == expected
            for i in (0, CLIENTS - 1):  # read back through OffsetFetch
                assert await committed(broker, groups[i], "t") == 100 + i
            for client in clients:
                await client.aclose()
        async with running(tmp_path) as broker:
            assert _committed_in_memory(broker, groups) == expected


async def test_a_pipelining_client_in_a_pass_of_several_gets_its_answers_in_order(
    tmp_path: Path,
) -> None:
    with trio.fail_after(60):
        async with running(tmp_path) as broker:
            client, other = await WireClient.connect(broker), await WireClient.connect(broker)
            await create(client, "t")
            pid, (group, other_group) = _groups_of_one_partition(broker, 2)
            frames = [
                request_bytes(commit_request(group, {("t", 0): n}), 9, correlation_id=n)
                for n in (1, 2, 3)
            ]
            _write(client, b"".join(frames))
            _send_commits([other], [other_group], 7)
            assert await _answer_codes(client, 3) == [(n, ErrorCode.NONE) for n in (1, 2, 3)]
            assert await _answer_codes(other) == [(0, ErrorCode.NONE)]
            expected = {(group, "t", 0): 3, (other_group, "t", 0): 7}
            assert _committed_in_memory(broker, [group, other_group]) == expected
            assert _committed_in_log(broker, pid) == expected
            await client.aclose()
            await other.aclose()


async def test_a_client_that_stops_reading_in_a_pass_of_several_is_answered_once_it_reads(
    broker: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both clients pipeline more than a step answers, so that every pass has both and their
    # answers go at its end: the silent client's fill its socket there.
    count = 2000  # ~1 MB of ApiVersions answers: more than the socket buffers hold
    requests = b"".join(
        request_bytes(ApiVersionsRequest(), 3, correlation_id=i) for i in range(count)
    )
    results = []
    send_outbox = _Connection.send_outbox

    def recorded(conn: Any) -> Any:
        results.append(send_outbox(conn))
        return results[-1]

    monkeypatch.setattr(_Connection, "send_outbox", recorded)
    with trio.fail_after(30):
        client = await WireClient.connect(broker)
        other = await WireClient.connect(broker)
        _write(client, requests)
        _write(other, requests)
        for i in range(count):  # the reactor is not stuck on the full socket
            frame = await read_frame(other.stream)
            assert frame is not None
            assert parse_response_header(frame, False)[0] == i
        await trio.testing.wait_all_tasks_blocked()
        (conn,) = [c for c in broker.connections if c.reactor is None]
        assert conn.write_since is not None  # a task of its own waits to send the rest
        assert TASK in results  # handed to it by an end-of-pass send the socket cut short
        for i in range(count):
            frame = await read_frame(client.stream)
            assert frame is not None
            assert parse_response_header(frame, False)[0] == i
        await trio.testing.wait_all_tasks_blocked()
        assert conn.reactor is broker.reactors[broker.node_id]


# The fixture of tests/broker/test_storage_errors.py: a disk whose writes to some files fail.
faulty_disk = pytest.fixture(test_storage_errors.faulty_os.__wrapped__)  # type: ignore[attr-defined]


@pytest.mark.expect_errors  # the coordinator runtime logs the failed __consumer_offsets write
async def test_a_failed_append_in_a_pass_fails_its_commits_and_the_next_pass_is_kept(
    tmp_path: Path, faulty_disk: Callable[[str], FaultyOs]
) -> None:
    with trio.fail_after(60):
        async with running(tmp_path / "data") as broker:
            clients = [await WireClient.connect(broker) for _ in range(CLIENTS)]
            await create(clients[0], "t")
            pid, groups = _groups_of_one_partition(broker, CLIENTS)
            _send_commits(clients, groups, 10)
            for i, client in enumerate(clients):
                assert await _answer_codes(client) == [(i, ErrorCode.NONE)]
            fault = faulty_disk(f"/{OFFSETS_TOPIC}-{pid}/")
            fault.failing = errno.EIO
            _send_commits(clients, groups, 20)
            for i, client in enumerate(clients):
                assert await _answer_codes(client) == [(i, ErrorCode.KAFKA_STORAGE_ERROR)]
            assert fault.failures > 0
            fault.failing = None
            kept = {(g, "t", 0): 10 + i for i, g in enumerate(groups)}
            assert _committed_in_memory(broker, groups) == kept
            assert not broker.coordinator.coordinator.has_pending_commits(groups)
            _send_commits(clients, groups, 30)
            for i, client in enumerate(clients):
                assert await _answer_codes(client) == [(i, ErrorCode.NONE)]
            for client in clients:
                await client.aclose()
        async with running(tmp_path / "data") as broker:
            assert _committed_in_memory(broker, groups) == {
                (g, "t", 0): 30 + i for i, g in enumerate(groups)
            }


async def test_strict_durability_answers_commits_of_a_pass_only_after_the_fsync(
    broker: Any, fsync_gate: trio.Event, nursery: trio.Nursery
) -> None:
    with trio.fail_after(30):
        clients = [await WireClient.connect(broker) for _ in range(4)]
        await create(clients[0], "t")
        _, groups = _groups_of_one_partition(broker, len(clients))
        answers: list[list[tuple[int, int]]] = []

        async def answer(client: WireClient) -> None:
            answers.append(await _answer_codes(client))

        _send_commits(clients, groups, 5)
        for client in clients:
            nursery.start_soon(answer, client)
        await trio.testing.wait_all_tasks_blocked()
        assert answers == []  # every commit waits for its fsync
        assert _committed_in_memory(broker, groups) == {}
        fsync_gate.set()
        while len(answers) < len(clients):
            await trio.testing.wait_all_tasks_blocked()
        assert sorted(answers) == [[(i, ErrorCode.NONE)] for i in range(len(clients))]
        assert _committed_in_memory(broker, groups) == {
            (g, "t", 0): 5 + i for i, g in enumerate(groups)
        }
        for client in clients:
            await client.aclose()
