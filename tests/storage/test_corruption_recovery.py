"""Damaged data files, seen through a real broker restart: what clients get afterwards.

tests/storage/test_recovery.py checks `Log.open` on its own. Here the broker is stopped,
its files are damaged, and it is started again on them (in process, `serve` on the same
data directory). After each start:

  * it serves (no crash, nothing at ERROR for damage it can repair);
  * each partition holds exactly the batches before the first damaged one, every served
    batch passes its CRC, and the next append continues right after them;
  * committed offsets are the last commit before the damage, never garbage;
  * the broker logged what it dropped: one WARNING line per cut tail ("recovered
    <partition>: truncated <segment> at position <p>, a torn or corrupt tail (bytes=<n>,
    next offset <o>): <why>"); rebuilt index files, expected after any crash, one DEBUG
    line per partition and one INFO line in all. A crash that lost nothing logs no WARNING.

Damage covered: flipped bytes and cuts in the last segment of a topic and of
__consumer_offsets, zero-filled tails, and index files that are missing, garbled, cut or
too long. A flipped byte in an older __consumer_offsets segment (whose CRCs recovery does
not read) must not keep the broker from starting either.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import trio

from broker.topics import OFFSETS_TOPIC, TopicRegistry
from coordinator.config import CoordinatorConfig
from coordinator.coordinator import GroupCoordinator
from protocol.errors import ErrorCode
from protocol.records import build_batch, decode_records, iter_batches
from tests.conftest import broker_config
from tests.reliability.inproc import (
    T0,
    commit,
    committed,
    contents,
    create,
    produce_values,
    running,
)
from tests.storage.helpers import SEGMENT_0
from tests.wire import WireClient

TOPIC = "damaged"
GROUP = "damaged-group"
SETTINGS = {"offsets.topic.num.partitions": 1, "log.index.interval.bytes": 100}


def segments(partition_dir: Path) -> list[Path]:
    return sorted(partition_dir.glob("*.log"))


def batch_positions(segment: Path) -> list[int]:
    return [pos for pos, _ in iter_batches(segment.read_bytes())]


def flip(path: Path, position: int) -> None:
    data = bytearray(path.read_bytes())
    data[position] ^= 0x5A
    path.write_bytes(data)


def truncation_note(partition: str, segment: Path, position: int) -> str:
    """The start of the WARNING for a tail cut from `segment` at `position`, up to the
    byte count that follows it."""
    return (
        f"recovered {partition}: truncated {segment.name} at position {position}, "
        "a torn or corrupt tail (bytes="
    )


def recovery_notes(
    caplog: pytest.LogCaptureFixture, partition: str, level: int | None = None
) -> list[str]:
    """What the broker logged about recovering `partition` (at `level` only, if given)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "broker.topics"
        and r.getMessage().startswith(f"recovered {partition}:")
        and (level is None or r.levelno == level)
    ]


async def _fill(data_dir: Path, n: int, **settings: object) -> dict[int, str]:
    """Start a broker, write `n` one-record batches to TOPIC-0 and commit after each, stop."""
    async with running(data_dir, **{**SETTINGS, **settings}) as broker:
        client = await WireClient.connect(broker)
        await create(client, TOPIC)
        written = await produce_values(client, TOPIC, [f"value-{i:03d}" for i in range(n)])
        for offset in sorted(written):
            assert await commit(client, GROUP, TOPIC, offset + 1) == ErrorCode.NONE
        await client.aclose()
    return written


# --- the last segment of a topic ---------------------------------------------------------

TopicDamage = Callable[[Path, list[int]], int]  # (segment, batch positions) -> first bad batch


def _flip_in_records(segment: Path, positions: list[int]) -> int:
    flip(segment, positions[6] + 70)  # inside batch 6's records: its CRC fails
    return 6


def _flip_in_length(segment: Path, positions: list[int]) -> int:
    flip(segment, positions[6] + 10)  # batch 6's batchLength: the chain of lengths breaks
    return 6


def _flip_magic(segment: Path, positions: list[int]) -> int:
    flip(segment, positions[6] + 16)
    return 6


def _cut_mid_batch(segment: Path, positions: list[int]) -> int:
    os.truncate(segment, positions[8] + 30)
    return 8


def _cut_in_first_header(segment: Path, positions: list[int]) -> int:
    os.truncate(segment, 20)
    return 0


def _zero_tail(segment: Path, positions: list[int]) -> int:
    with open(segment, "ab") as f:
        f.write(bytes(8192))
    return len(positions)


def _damage(damage: TopicDamage, why: str) -> Any:
    """A (damage, why) case, named after the damage; `why` is the start of Segment.recover's
    reason for it (the rest varies), with {} for the position of the cut."""
    return pytest.param(damage, why, id=damage.__name__.strip("_"))


@pytest.mark.parametrize(
    ("damage", "why"),
    [
        _damage(_flip_in_records, "batch at {} fails its CRC"),
        _damage(_flip_in_length, "batch at {} "),
        _damage(_flip_magic, "batch at {} has unknown magic"),
        _damage(_cut_mid_batch, "batch header at {} cut short"),
        _damage(_cut_in_first_header, "batch header at {} cut short"),
        _damage(_zero_tail, "batch at {} has magic 0"),
    ],
)
async def test_damaged_last_segment_of_a_topic_recovers_to_the_last_whole_batch(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: TopicDamage, why: str
) -> None:
    caplog.set_level(logging.INFO)
    data = tmp_path / "data"
    with trio.fail_after(30):
        written = await _fill(data, 10)
        (segment,) = segments(data / f"{TOPIC}-0")
        positions = batch_positions(segment)
        size = segment.stat().st_size
        first_bad = damage(segment, positions)
        cut_at = positions[first_bad] if first_bad < len(positions) else size
        damaged_size = segment.stat().st_size
        async with running(data, **SETTINGS) as broker:
            kept = {o: v for o, v in written.items() if o < first_bad}
            assert await contents(broker, TOPIC) == kept
            client = await WireClient.connect(broker)
            (offset,) = await produce_values(client, TOPIC, ["after-restart"])
            assert offset == first_bad
            await client.aclose()
    (warning,) = recovery_notes(caplog, f"{TOPIC}-0", logging.WARNING)
    assert warning.startswith(
        truncation_note(f"{TOPIC}-0", segment, cut_at)
        + f"{damaged_size - cut_at}, next offset {first_bad}): "
        + why.format(cut_at)
    ), warning


# --- the last segment of __consumer_offsets ---------------------------------------------


@pytest.mark.parametrize("how", ["flip", "cut"])
async def test_damaged_last_commits_fall_back_to_the_commit_before_them(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, how: str
) -> None:
    caplog.set_level(logging.INFO)
    data = tmp_path / "data"
    with trio.fail_after(30):
        await _fill(data, 10)  # commits 1..10, one batch each, in __consumer_offsets-0
        (segment,) = segments(data / f"{OFFSETS_TOPIC}-0")
        positions = batch_positions(segment)
        assert len(positions) == 10
        if how == "flip":
            flip(segment, positions[7] + 65)  # the 8th commit (offset 8) no longer checks
        else:
            os.truncate(segment, positions[7] + 40)
        async with running(data, **SETTINGS) as broker:
            assert await committed(broker, GROUP, TOPIC) == 7
            client = await WireClient.connect(broker)
            assert await commit(client, GROUP, TOPIC, 11) == ErrorCode.NONE
            await client.aclose()
        async with running(data, **SETTINGS) as broker:
            assert await committed(broker, GROUP, TOPIC) == 11
    (warning,) = recovery_notes(caplog, f"{OFFSETS_TOPIC}-0", logging.WARNING)
    assert warning.startswith(truncation_note(f"{OFFSETS_TOPIC}-0", segment, positions[7])), warning


# --- index files -------------------------------------------------------------------------


def _remove(path: Path) -> None:
    path.unlink()


def _garble(path: Path) -> None:
    path.write_bytes(bytes(range(256)) * 2)


def _cut(path: Path) -> None:
    path.write_bytes(path.read_bytes()[:5])


def _extend(path: Path) -> None:
    path.write_bytes(path.read_bytes() * 3)


@pytest.mark.parametrize("suffix", [".index", ".timeindex"])
@pytest.mark.parametrize(
    "damage", [_remove, _garble, _cut, _extend], ids=lambda f: f.__name__.strip("_")
)
async def test_wrong_index_files_are_rebuilt_and_every_offset_reads_back(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Callable[[Path], None], suffix: str
) -> None:
    caplog.set_level(logging.INFO)
    caplog.set_level(logging.DEBUG, logger="broker.topics")
    data = tmp_path / "data"
    with trio.fail_after(30):
        # Segments of ~4 batches, so there are closed segments with complete index files.
        written = await _fill(data, 20, **{"log.segment.bytes": 400})
        older = segments(data / f"{TOPIC}-0")[:-1]
        assert len(older) >= 3
        victim = older[1].with_suffix(suffix)
        assert victim.stat().st_size > 0
        damage(victim)
        async with running(data, **SETTINGS, **{"log.segment.bytes": 400}) as broker:
            assert await contents(broker, TOPIC) == written
            # Reads from every offset (each goes through the offset index).
            plog = broker.topics.get(TOPIC).partitions[0].log
            for offset in written:
                slice_ = plog.read(offset, 1 << 20)
                assert slice_.size > 0
                first = next(iter_batches(slice_.read_bytes()))[1]
                assert first.base_offset <= offset <= first.last_offset
            # Lookups by timestamp (the time index): the i-th record has timestamp T0 + i.
            for i, offset in enumerate(sorted(written)):
                assert plog.offset_for_timestamp(T0 + i) == (offset, T0 + i)
        # Derived data, rebuilt as after any crash: DEBUG, and nothing at WARNING.
        (note,) = recovery_notes(caplog, f"{TOPIC}-0", logging.DEBUG)
        assert note.startswith(f"recovered {TOPIC}-0: index rebuilt: "), note
        assert f"{victim.name}: " in note, note
        assert recovery_notes(caplog, f"{TOPIC}-0", logging.WARNING) == []
        assert "rebuilt the index files of 1 partition(s)" in _info_lines(caplog)


def _info_lines(caplog: pytest.LogCaptureFixture) -> str:
    return "\n".join(
        r.getMessage()
        for r in caplog.records
        if r.name == "broker.topics" and r.levelno == logging.INFO
    )


def test_a_crash_that_lost_nothing_logs_no_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # A kill -9 leaves every partition's index files unwritten (they are written on roll
    # and close): recovery rebuilds them all, which is routine, not a warning.
    config = broker_config(tmp_path, **{"log.index.interval.bytes": 100})
    registry = TopicRegistry(config, tmp_path)
    topic = registry.create(TOPIC, 3, {}, now_wall_ms=T0)
    for p in topic.partitions[:2]:
        for i in range(10):
            p.log.append(build_batch([(None, b"v%d" % i, (), T0)]), wall_ms=T0)
    # No close: the process died here.
    caplog.set_level(logging.DEBUG, logger="broker.topics")
    reopened = TopicRegistry(config, tmp_path)
    reopened.load(T0)
    assert [p.log.log_end_offset for p in reopened.get(TOPIC).partitions] == [10, 10, 0]
    levels = {r.levelno for r in caplog.records if r.name == "broker.topics"}
    assert levels == {logging.DEBUG, logging.INFO}
    assert _info_lines(caplog) == (
        "rebuilt the index files of 3 partition(s), as after any unclean shutdown; "
        "the DEBUG log names them"
    )
    assert recovery_notes(caplog, f"{TOPIC}-0", logging.DEBUG) == [
        f"recovered {TOPIC}-0: index rebuilt: {SEGMENT_0}.index: missing; "
        f"{SEGMENT_0}.timeindex: missing"
    ]
    reopened.close()


# --- an older segment of __consumer_offsets ----------------------------------------------


def _group_on_other_partition(group: str, partitions: int) -> str:
    coordinator = GroupCoordinator(CoordinatorConfig(offsets_topic_num_partitions=partitions))
    home = coordinator.partition_for(group)
    return next(
        g for g in (f"other-{i}" for i in range(100)) if coordinator.partition_for(g) != home
    )


@pytest.mark.expect_errors  # the damaged record may well be logged at ERROR
async def test_bit_rot_in_an_older_offsets_segment_does_not_stop_the_broker(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # Recovery checks CRCs in the last segment only; older ones are trusted. A flipped byte
    # inside a commit record of an older segment then reaches the coordinator's replay.
    # Kafka fails the load of that one __consumer_offsets partition and logs it; the broker,
    # and the groups of every other partition, carry on.
    caplog.set_level(logging.INFO)
    data = tmp_path / "data"
    settings = {**SETTINGS, "offsets.topic.num.partitions": 2, "offsets.topic.segment.bytes": 600}
    other = _group_on_other_partition(GROUP, 2)
    with trio.fail_after(30):
        async with running(data, **settings) as broker:
            client = await WireClient.connect(broker)
            await create(client, TOPIC)
            for offset in range(1, 13):
                assert await commit(client, GROUP, TOPIC, offset) == ErrorCode.NONE
            assert await commit(client, other, TOPIC, 3) == ErrorCode.NONE
            home = broker.coordinator.coordinator.partition_for(GROUP)
            await client.aclose()
        older = segments(data / f"{OFFSETS_TOPIC}-{home}")
        assert len(older) >= 2
        first = older[0]
        raw = first.read_bytes()
        (record,) = decode_records(raw[: next(iter_batches(raw))[1].size])
        flip(first, raw.index(record.key) + 3)  # the length of the group name in its key
        async with running(data, **settings) as broker:
            assert await committed(broker, other, TOPIC) == 3
            client = await WireClient.connect(broker)
            assert await commit(client, other, TOPIC, 4) == ErrorCode.NONE
            (offset,) = await produce_values(client, TOPIC, ["still-serving"])
            await client.aclose()
            assert await contents(broker, TOPIC) == {offset: "still-serving"}
