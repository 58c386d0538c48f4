"""What an acknowledgement promises, in each durability mode (broker.durability).

kmock.durability=strict: an acknowledgement that promises durability is sent only after an
fsync covers it. The crash cycles cannot see this: a SIGKILL leaves the page cache intact, so
data that was acknowledged before its fsync survives a process crash anyway. Only an OS crash
or power loss would lose it. So these tests check the promise itself, in process: when the
answer to a Produce with acks=all, or to an OffsetCommit, reaches the client, the log's
`flushed_offset` must already cover what was acknowledged. Each case is checked for the
first write to a log after it was opened (a new topic, or any log after a restart), and for
later writes.

kmock.durability=kafka (the default): the same answers come from the page cache, with no
fsync before them and none scheduled by default (Kafka's flush.ms and flush.messages
defaults: never); flush.messages, flush.ms and segment rolls fsync as in Kafka.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from broker import durability
from protocol.errors import ErrorCode
from tests.reliability.inproc import commit, create, produce, running
from tests.wire import WireClient

GROUP = "durable-group"
STRICT = {"kmock.durability": "strict"}


def _unflushed(log: Any, acknowledged_end: int) -> str | None:
    if log.flushed_offset >= acknowledged_end:
        return None
    return (
        f"{log.path.name}: acknowledged up to offset {acknowledged_end}, "
        f"fsynced only below {log.flushed_offset}"
    )


async def _create_log(client: WireClient, broker: Any, topic: str) -> Any:
    """Create `topic` (by auto-creation); the log of its partition 0."""
    await create(client, topic)
    return broker.topics.get(topic).partitions[0].log


async def _check_writes(broker: Any, topic: str) -> list[str]:
    problems = []
    client = await WireClient.connect(broker)
    try:
        plog = await _create_log(client, broker, topic)
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
        async with running(tmp_path / "data", **STRICT) as broker:
            problems = await _check_writes(broker, "durable")
    assert not problems, "\n".join(problems)


async def test_acks_all_and_commits_after_a_restart_are_fsynced_before_the_answer(
    tmp_path: Path,
) -> None:
    with trio.fail_after(30):
        for _ in range(2):  # the second start reopens logs that already hold data
            async with running(tmp_path / "data", **STRICT) as broker:
                problems = await _check_writes(broker, "durable")
    assert not problems, "\n".join(problems)


async def test_a_write_waited_for_is_fsynced_at_once_not_after_the_flush_interval(
    tmp_path: Path,
) -> None:
    """log.flush.interval.ms bounds how long a write nobody waits for stays unflushed. A
    write somebody waits for (acks=all, an OffsetCommit) starts an fsync at once, so a client
    writing one record at a time waits one fsync per write, not the interval: here 60 s,
    three times over, inside a 20 s limit."""
    with trio.fail_after(20):
        async with running(
            tmp_path / "data", **STRICT, **{"log.flush.interval.ms": 60_000}
        ) as broker:
            problems = await _check_writes(broker, "prompt")
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("mode", ["kafka", "strict"])
async def test_a_write_nobody_waits_for_is_fsynced_within_the_flush_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    """acks=1 is answered after the write; the fsync follows within log.flush.interval.ms
    (the loss window the README states), not at once and not never."""
    interval_s = 0.5
    flushed: list[trio.Event] = [trio.Event()]
    flush_logs = durability.flush_logs

    def flush_and_tell(logs: list[Any]) -> Any:  # runs in the fsync worker thread
        failed = flush_logs(logs)
        trio.from_thread.run_sync(flushed[-1].set)
        return failed

    monkeypatch.setattr(durability, "flush_logs", flush_and_tell)
    with trio.fail_after(20):
        async with running(
            tmp_path / "data",
            **{"kmock.durability": mode, "log.flush.interval.ms": int(interval_s * 1000)},
        ) as broker:
            client = await WireClient.connect(broker)
            plog = await _create_log(client, broker, "later")
            code, base = await produce(client, "later", b"first", acks=-1)
            assert code == ErrorCode.NONE
            # The first write to any log starts a round at once (no round ran before it):
            # in the strict mode the answer waited for it, otherwise wait for it here.
            with trio.fail_after(5):
                await flushed[-1].wait()
            flushed.append(trio.Event())
            code, base = await produce(client, "later", b"second", acks=1)
            assert code == ErrorCode.NONE
            assert plog.flushed_offset <= base, "fsynced at once, though nobody waited"
            with trio.fail_after(interval_s + 5):  # the interval, plus slack for the fsync
                await flushed[-1].wait()
            assert plog.flushed_offset > base, "the round after the acks=1 write missed it"
            await client.aclose()


async def test_group_commit_delay_holds_back_the_next_fsync_for_waiting_writes(
    tmp_path: Path,
) -> None:
    """group.commit.delay.ms: a round for waiting writes starts no sooner than that long
    after the previous one began, so three acks=all writes in a row take two delays at least,
    and each is still fsynced before its answer."""
    delay_s = 0.3
    with trio.fail_after(30):
        async with running(
            tmp_path / "data", **STRICT, **{"group.commit.delay.ms": int(delay_s * 1000)}
        ) as broker:
            client = await WireClient.connect(broker)
            plog = await _create_log(client, broker, "delayed")
            started = trio.current_time()
            for i in range(3):
                code, base = await produce(client, "delayed", b"v%d" % i)
                assert code == ErrorCode.NONE
                assert _unflushed(plog, base + 1) is None
            assert trio.current_time() - started >= 2 * delay_s
            await client.aclose()


# --- kmock.durability=kafka --------------------------------------------------------------


async def test_by_default_answers_come_from_the_page_cache(tmp_path: Path) -> None:
    """Kafka's default: acks=all and OffsetCommit are answered once written, with no fsync
    before the answer and none scheduled after it (flush.ms and flush.messages: never). The
    writes are in the logs (and so survive a kill -9: the crash cycles show it)."""
    with trio.fail_after(30):
        async with running(tmp_path / "data") as broker:
            assert not broker.durability.strict
            client = await WireClient.connect(broker)
            plog = await _create_log(client, broker, "cached")
            assert (plog.config.flush_mode, plog.config.flush_messages) == ("none", 2**63 - 1)
            for i in range(3):
                code, base = await produce(client, "cached", b"v%d" % i)
                assert code == ErrorCode.NONE
                assert await commit(client, GROUP, "cached", base + 1) == ErrorCode.NONE
            offsets = (
                broker.coordinator.offsets_topic()
                .partitions[broker.coordinator.coordinator.partition_for(GROUP)]
                .log
            )
            assert plog.log_end_offset == 3
            assert plog.flushed_offset == 0, "fsynced though nothing asked for it"
            assert offsets.flushed_offset == 0
            assert not broker.durability._running, "an fsync round was scheduled"
            await client.aclose()


async def test_flush_messages_fsyncs_the_write_that_reaches_the_count(tmp_path: Path) -> None:
    """log.flush.interval.messages=N, Kafka's meaning: once a log holds N unflushed
    messages, the write that made it so is fsynced before it is answered."""
    with trio.fail_after(30):
        async with running(tmp_path / "data", **{"log.flush.interval.messages": 3}) as broker:
            client = await WireClient.connect(broker)
            plog = await _create_log(client, broker, "counted")
            seen = []
            for i in range(7):
                code, _ = await produce(client, "counted", b"v%d" % i, acks=1)
                assert code == ErrorCode.NONE
                seen.append(plog.flushed_offset)
            assert seen == [0, 0, 3, 3, 3, 6, 6]
            await client.aclose()


async def test_a_segment_roll_fsyncs_the_segment_it_closes(tmp_path: Path) -> None:
    with trio.fail_after(30):
        async with running(tmp_path / "data", **{"log.segment.bytes": 200}) as broker:
            client = await WireClient.connect(broker)
            plog = await _create_log(client, broker, "rolled")
            for i in range(2):
                code, _ = await produce(client, "rolled", b"x" * 120 + b"%d" % i)
                assert code == ErrorCode.NONE
            assert plog.flushed_offset == 1  # the first segment, closed by the second write
            assert plog.log_end_offset == 2
            await client.aclose()


async def test_a_commit_is_fsynced_within_the_flush_interval(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An OffsetCommit answered from the page cache (the default mode) schedules the fsync
    log.flush.interval.ms asks for, like an acks=1 write: the commit path's note of its
    write (the log's end, read by the durability itself) must not be lost."""
    flush_logs = durability.flush_logs
    target: list[Any] = []  # the group's __consumer_offsets log
    fsynced = trio.Event()

    def seen(logs: list[Any]) -> None:
        if target and target[0] in logs:
            fsynced.set()

    def flush_and_tell(logs: list[Any]) -> Any:  # runs in the fsync worker thread
        failed = flush_logs(logs)
        trio.from_thread.run_sync(seen, logs)
        return failed

    monkeypatch.setattr(durability, "flush_logs", flush_and_tell)
    with trio.fail_after(20):
        async with running(tmp_path / "data", **{"log.flush.interval.ms": 200}) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            pid = broker.coordinator.coordinator.partition_for(GROUP)
            target.append(broker.coordinator.offsets_topic().partitions[pid].log)
            assert await commit(client, GROUP, "t", 7) == ErrorCode.NONE
            end = target[0].log_end_offset
            with trio.fail_after(5):  # the interval, plus slack for the fsync
                await fsynced.wait()
            assert target[0].flushed_offset >= end
            await client.aclose()
