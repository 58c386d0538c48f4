"""An acknowledgement that promises durability is sent only after an fsync covers it.

The crash cycles cannot see this: a SIGKILL leaves the page cache intact, so data that was
acknowledged before its fsync survives a process crash anyway. Only an OS crash or power
loss would lose it. So these tests check the promise itself, in process: when the answer to
a Produce with acks=all, or to an OffsetCommit, reaches the client in the default
durability mode (group commit, log.flush.interval.ms=5), the log's `flushed_offset` must
already cover what was acknowledged.

Each case is checked for the first write to a log after it was opened (a new topic, or any
log after a restart), and for later writes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from protocol.errors import ErrorCode
from tests.reliability.inproc import commit, create, produce, running
from tests.wire import WireClient

GROUP = "durable-group"


def _unflushed(log: Any, acknowledged_end: int) -> str | None:
    if log.flushed_offset >= acknowledged_end:
        return None
    return (
        f"{log.path.name}: acknowledged up to offset {acknowledged_end}, "
        f"fsynced only below {log.flushed_offset}"
    )


async def _check_writes(broker: Any, topic: str) -> list[str]:
    problems = []
    client = await WireClient.connect(broker)
    try:
        await create(client, topic)
        plog = broker.topics.get(topic).partitions[0].log
        offsets = (
            broker.coordinator.offsets_topic()
            .partitions[broker.coordinator.coordinator.partition_for(GROUP)]
            .log
        )
        for i in range(3):
            code, base = await produce(client, topic, b"v%d" % i)
            assert code == ErrorCode.NONE
            problems.append(_unflushed(plog, base + 1))
            assert await commit(client, GROUP, topic, base + 1) == ErrorCode.NONE
            problems.append(_unflushed(offsets, offsets.log_end_offset))
    finally:
        await client.aclose()
    return [p for p in problems if p]


async def test_acks_all_and_commits_are_fsynced_before_the_answer(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running(tmp_path / "data") as broker:
            problems = await _check_writes(broker, "durable")
    assert not problems, "\n".join(problems)


async def test_acks_all_and_commits_after_a_restart_are_fsynced_before_the_answer(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        for _ in range(2):  # the second start reopens logs that already hold data
            async with running(tmp_path / "data") as broker:
                problems = await _check_writes(broker, "durable")
    assert not problems, "\n".join(problems)
