"""Offset commits from many connections at once, to groups of one __consumer_offsets
partition: what must hold whatever order trio runs them in, and however a future runtime
groups their appends (Kafka's CoordinatorRuntime batches them by
group.coordinator.append.linger.ms; kmock appends each in the step that decides it, see
bench/README.md "Round 5"). No commit is visible in memory, so none answered, before its
record is in the log (checked after every task step); the log keeps the order of
decisions, so a restart rebuilds exactly what memory held, also when DeleteGroups race the
commits of their groups; a write that fails fails its commits and nothing else.
"""

from __future__ import annotations

import errno
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.context import RequestContext
from broker.handlers import Encoded, delete_groups, offset_commit
from broker.routes import ROUTES
from protocol.consumer_offsets import OffsetCommitKey, decode_record
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.records import decode_records, iter_batches
from storage.layout import OFFSETS_TOPIC
from tests.broker import test_storage_errors
from tests.broker.handlers.test_offset_commit import commit_request
from tests.broker.test_storage_errors import FaultyOs
from tests.reliability.inproc import commit, create, running
from tests.wire import WireClient

CLIENTS = 12
COMMITS = 6


def _groups_of_one_partition(broker: Any, n: int) -> tuple[int, list[str]]:
    """`n` group ids whose offsets go to the same __consumer_offsets partition."""
    partition_for = broker.coordinator.coordinator.partition_for
    pid = partition_for("g0")
    groups = [g for g in (f"g{i}" for i in range(10_000)) if partition_for(g) == pid]
    return pid, groups[:n]


def _log_batches(broker: Any, pid: int) -> list[list[tuple[Any, Any]]]:
    """The partition's batches, each as its decoded (key, value) records."""
    plog = broker.topics.get(OFFSETS_TOPIC).partitions[pid].log
    data = plog.read_bytes(plog.log_start_offset, 64 * 1024 * 1024)
    return [
        [decode_record(r.key, r.value) for r in decode_records(memoryview(data)[pos:])]
        for pos, _ in iter_batches(data)
    ]


def _committed_in_log(broker: Any, pid: int) -> dict[tuple[str, str, int], int]:
    """Each (group, topic, partition)'s last offset in the log (a tombstone removes it)."""
    latest: dict[tuple[str, str, int], int] = {}
    for batch in _log_batches(broker, pid):
        for key, value in batch:
            if isinstance(key, OffsetCommitKey):
                tp = (key.group, key.topic, key.partition)
                if value is None:
                    latest.pop(tp, None)
                else:
                    latest[tp] = value.offset
    return latest


def _committed_in_memory(broker: Any, groups: list[str]) -> dict[tuple[str, str, int], int]:
    coordinator = broker.coordinator.coordinator
    memory = {}
    for g in groups:
        group = coordinator.group(g)
        for (topic, partition), offset in getattr(group, "offsets", {}).items():
            memory[(g, topic, partition)] = offset.offset
    return memory


class _MemoryFollowsLog(trio.abc.Instrument):
    """After each task step: every offset memory holds (and so every commit answered) is
    the last one of its partition in the log."""

    def __init__(self, broker: Any, pid: int, groups: list[str]) -> None:
        self.broker, self.pid, self.groups = broker, pid, groups
        self.violations: list[str] = []
        self.steps = 0

    def after_task_step(self, task: trio.lowlevel.Task) -> None:
        self.steps += 1
        memory = _committed_in_memory(self.broker, self.groups)
        if memory and memory != _committed_in_log(self.broker, self.pid):
            self.violations.append(f"after a step of {task.name}: memory ahead of the log")


async def test_concurrent_commits_are_never_in_memory_before_their_record_is_in_the_log(
    tmp_path: Path,
) -> None:
    with trio.fail_after(60):
        async with running(tmp_path) as broker:
            clients = [await WireClient.connect(broker) for _ in range(CLIENTS)]
            await create(clients[0], "t")
            pid, groups = _groups_of_one_partition(broker, CLIENTS)
            check = _MemoryFollowsLog(broker, pid, groups)
            codes: list[int] = []

            async def commits(client: WireClient, group: str) -> None:
                for n in range(COMMITS):
                    codes.append(await commit(client, group, "t", n))

            trio.lowlevel.add_instrument(check)
            try:
                async with trio.open_nursery() as nursery:
                    for client, group in zip(clients, groups, strict=True):
                        nursery.start_soon(commits, client, group)
            finally:
                trio.lowlevel.remove_instrument(check)
            assert codes == [ErrorCode.NONE] * (CLIENTS * COMMITS)
            assert check.steps > 0
            assert check.violations == []
            assert sum(map(len, _log_batches(broker, pid))) == CLIENTS * COMMITS
            expected = {(g, "t", 0): COMMITS - 1 for g in groups}
            assert _committed_in_memory(broker, groups) == expected
            for client in clients:
                await client.aclose()
        async with running(tmp_path) as broker:
            assert _committed_in_memory(broker, groups) == expected


async def test_a_delete_groups_racing_commits_leaves_the_log_as_memory_holds_it(
    tmp_path: Path,
) -> None:
    """Commits and a DeleteGroups of the same groups, started together so that trio runs
    them in either order: whatever memory ends with, a restart rebuilds the same."""
    with trio.fail_after(60):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            await client.aclose()
            pid, groups = _groups_of_one_partition(broker, 8)
            ctx = RequestContext(broker, 9, "client", "/127.0.0.1", 1, ROUTES)
            delete_ctx = RequestContext(broker, 2, "client", "/127.0.0.1", 2, ROUTES)
            codes: list[int] = []

            async def commit_one(group: str, offset: int) -> None:
                try:
                    response = await offset_commit.handle(
                        ctx, commit_request(group, {("t", 0): offset})
                    )
                except KafkaError as e:  # the group is Dead until its tombstone is written
                    codes.append(e.code)
                else:
                    if isinstance(response, Encoded):  # an answer kept with its body
                        response = response.response
                    codes.append(response.topics[0].partitions[0].error_code)

            # Each DeleteGroups deletes a group of another partition too: its records span
            # two partitions (a write that no per-partition batch could take).
            partition_for = broker.coordinator.coordinator.partition_for
            others = [g for g in (f"o{i}" for i in range(1000)) if partition_for(g) != pid]
            others = others[: len(groups)]

            async def delete(group: str, other: str) -> None:
                await delete_groups.handle(
                    delete_ctx, DeleteGroupsRequest(groups_names=[group, other])
                )

            for round_ in range(4):
                for other in others:
                    await offset_commit.handle(ctx, commit_request(other, {("t", 0): 1}))
                async with trio.open_nursery() as nursery:
                    for group, other in zip(groups, others, strict=True):
                        nursery.start_soon(commit_one, group, round_)
                        nursery.start_soon(delete, group, other)
                memory = _committed_in_memory(broker, groups)
                assert memory == _committed_in_log(broker, pid)
            assert set(codes) <= {ErrorCode.NONE, ErrorCode.COORDINATOR_NOT_AVAILABLE}
            assert ErrorCode.NONE in codes
        async with running(tmp_path) as broker:
            assert _committed_in_memory(broker, groups) == memory


# The fixture of tests/broker/test_storage_errors.py: a disk whose writes to some files fail.
faulty_disk = pytest.fixture(test_storage_errors.faulty_os.__wrapped__)  # type: ignore[attr-defined]


@pytest.mark.expect_errors  # the coordinator runtime logs the failed __consumer_offsets write
async def test_concurrent_commits_whose_write_fails_fail_alone_and_the_next_ones_are_kept(
    tmp_path: Path, faulty_disk: Callable[[str], FaultyOs]
) -> None:
    with trio.fail_after(60):
        async with running(tmp_path / "data") as broker:
            clients = [await WireClient.connect(broker) for _ in range(CLIENTS)]
            await create(clients[0], "t")
            pid, groups = _groups_of_one_partition(broker, CLIENTS)
            fault = faulty_disk(f"/{OFFSETS_TOPIC}-{pid}/")
            for client, group in zip(clients, groups, strict=True):
                assert await commit(client, group, "t", 10) == ErrorCode.NONE
            fault.failing = errno.EIO
            codes: list[int] = []

            async def refused(client: WireClient, group: str) -> None:
                codes.append(await commit(client, group, "t", 20))

            async with trio.open_nursery() as nursery:
                for client, group in zip(clients, groups, strict=True):
                    nursery.start_soon(refused, client, group)
            assert codes == [ErrorCode.KAFKA_STORAGE_ERROR] * CLIENTS
            assert fault.failures > 0
            fault.failing = None
            assert _committed_in_memory(broker, groups) == {(g, "t", 0): 10 for g in groups}
            for client, group in zip(clients, groups, strict=True):
                assert await commit(client, group, "t", 30) == ErrorCode.NONE
            for client in clients:
                await client.aclose()
        async with running(tmp_path / "data") as broker:
            assert _committed_in_memory(broker, groups) == {(g, "t", 0): 30 for g in groups}
