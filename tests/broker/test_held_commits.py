"""Offset commits held to the end of a reactor pass (broker.reactor `hold`, broker.runtime
`flush_commits`): the commits that reach one __consumer_offsets partition in one pass go
to the log as one batch, in Kafka's format, and are answered after it is written; the
offsets read back and replay after a restart; a failed append fails exactly its commits;
a pipelined commit waits for the one held before it; the strict durability mode holds
nothing and answers after the fsync.

The commits are sent with plain writes on the clients' sockets, one after the other with
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

from broker.reactor import LEAD_STEPS
from protocol.errors import ErrorCode
from protocol.frames import decode_response
from protocol.messages.offset_commit import OffsetCommitResponse
from protocol.records import build_batch, decode_records, iter_batches, validate_batch
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
assert CLIENTS < LEAD_STEPS  # one pass, at most one checkpoint of the leader within it


def _send_commits(clients: list[WireClient], groups: list[str], offset: int) -> None:
    """Each client's commit of `offset` + its index, written at once (no checkpoint)."""
    for i, (client, group) in enumerate(zip(clients, groups, strict=True)):
        frame = request_bytes(commit_request(group, {("t", 0): offset + i}), 9, correlation_id=i)
        assert os.write(client.stream.socket.fileno(), frame) == len(frame)


async def _answer_codes(client: WireClient, count: int = 1) -> list[tuple[int, int]]:
    """(correlation id, error code) of the next `count` OffsetCommit answers."""
    answers = []
    for _ in range(count):
        frame = await read_frame(client.stream)
        assert frame is not None, "connection closed instead of a response"
        correlation_id, response = decode_response(OffsetCommitResponse, 9, frame)
        answers.append((correlation_id, response.topics[0].partitions[0].error_code))
    return answers


def _raw_batches(broker: Any, pid: int) -> list[bytes]:
    plog = broker.coordinator.offsets_topic().partitions[pid].log
    data = plog.read_bytes(plog.log_start_offset, 64 * 1024 * 1024)
    return [data[pos : pos + header.size] for pos, header in iter_batches(data)]


async def test_commits_of_one_pass_share_one_batch_in_kafkas_format_and_replay(
    tmp_path: Path,
) -> None:
    with trio.fail_after(60):
        async with running(tmp_path) as broker:
            clients = [await WireClient.connect(broker) for _ in range(CLIENTS)]
            await create(clients[0], "t")
            pid, groups = _groups_of_one_partition(broker, CLIENTS)
            before = len(_raw_batches(broker, pid))
            _send_commits(clients, groups, 100)
            for i, client in enumerate(clients):
                assert await _answer_codes(client) == [(i, ErrorCode.NONE)]
            batches = _raw_batches(broker, pid)[before:]
            # One batch for the pass (two if the leader let other tasks run within it).
            assert 1 <= len(batches) <= 2
            assert sum(len(decode_records(b)) for b in batches) == CLIENTS
            for batch in batches:
                # Kafka's bytes (MemoryRecordsBuilder's, as build_batch writes them): the same
                # from the batch length on, but the base offset and partition leader epoch
                # the log stamps, which the CRC does not cover.
                validate_batch(batch)
                records = decode_records(batch)
                timestamp = records[0].timestamp
                expected = build_batch([(r.key, r.value, (), timestamp) for r in records])
                assert batch[8:12] == expected[8:12]
                assert batch[16:] == expected[16:]
            expected_offsets = {(g, "t", 0): 100 + i for i, g in enumerate(groups)}
            assert _committed_in_memory(broker, groups) == expected_offsets
            assert _committed_in_log(broker, pid) == expected_offsets
            for i in (0, CLIENTS - 1):  # read back through OffsetFetch
                assert await committed(broker, groups[i], "t") == 100 + i
            for client in clients:
                await client.aclose()
        async with running(tmp_path) as broker:
            assert _committed_in_memory(broker, groups) == expected_offsets


async def test_a_pipelined_commit_is_answered_after_the_held_one_before_it(
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
            assert os.write(client.stream.socket.fileno(), b"".join(frames)) > 0
            _send_commits([other], [other_group], 7)
            assert await _answer_codes(client, 3) == [(n, ErrorCode.NONE) for n in (1, 2, 3)]
            assert await _answer_codes(other) == [(0, ErrorCode.NONE)]
            expected = {(group, "t", 0): 3, (other_group, "t", 0): 7}
            assert _committed_in_memory(broker, [group, other_group]) == expected
            assert _committed_in_log(broker, pid) == expected
            await client.aclose()
            await other.aclose()


# The fixture of tests/broker/test_storage_errors.py: a disk whose writes to some files fail.
faulty_disk = pytest.fixture(test_storage_errors.faulty_os.__wrapped__)  # type: ignore[attr-defined]


@pytest.mark.expect_errors  # the coordinator runtime logs the failed __consumer_offsets write
async def test_a_failed_append_of_a_pass_fails_its_commits_and_the_next_pass_is_kept(
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


async def test_strict_durability_holds_no_commit_and_answers_after_the_fsync(
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
        assert broker.coordinator._held == {}  # none held in a batch of the pass
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
