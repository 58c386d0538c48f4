"""Recovery of a partition's directory when its log opens (what `Log.open` runs), and the
log start offset checkpoint.

Why each step (Kafka's LogLoader does the same work):

1. Leftovers of an interrupted compaction: a `*.cleaned` file was never finished, so it is
   deleted; a `*.log.swap` file was complete (it is fsynced before it gets that name), so
   the swap is finished: the segments it replaces are deleted and it becomes their `.log`.
   `*.tmp` files (index rewrites, checkpoints) are deleted.
2. Every segment is walked batch by batch (headers only, through an mmap). The walk
   rebuilds the in-memory indexes and the producer state, and cuts the file at the first
   batch that is cut short, has a bad magic or length, or has offsets going backwards
   (Segment.recover explains each check). The last segment's CRCs are verified too: it is
   the one that was being written when a crash could happen. Older segments were fsynced
   when they rolled; verifying their CRCs would mean reading every byte of the log at
   every start.
3. A segment that had to be cut, or that overlaps the one before it, ends the log: every
   later segment is deleted (as Kafka does), since offsets must follow on.
4. Index files that differ from the recomputed indexes are rewritten.

`log-start-offset-checkpoint` is written atomically (temp file, fsync, rename, fsync of the
directory) whenever retention or DeleteRecords moves the log start offset past the first
segment's base offset. Everything recovery changes is reported as a `RecoveryEvent`;
`recovery_log_lines` words them for the broker's log.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import NamedTuple

from storage.layout import (
    CLEANED_SUFFIX,
    INDEX_SUFFIX,
    LOG_SUFFIX,
    SWAP_SUFFIX,
    TIMEINDEX_SUFFIX,
    parse_segment_name,
    segment_path,
)
from storage.producer_state import ProducerStateManager
from storage.segment import Segment, fsync_directory, last_offset_in_file

__all__ = [
    "LOG_START_OFFSET_CHECKPOINT",
    "Recovered",
    "RecoveryEvent",
    "read_checkpoint",
    "recover_segments",
    "recovery_log_lines",
    "write_checkpoint",
]

LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
_CHECKPOINT_VERSION = 0
_TMP_SUFFIX = ".tmp"


class RecoveryEvent(NamedTuple):
    """Something `Log.open` changed on disk, for the broker to log."""

    path: Path
    action: str  # "truncated", "deleted", "index rebuilt", "swap completed", "leftover removed"
    bytes: int
    reason: str
    # For "truncated": where the segment file was cut, and the offset it now ends before.
    position: int = -1
    offset: int = -1


class Recovered(NamedTuple):
    log_start_offset: int
    producer_state: ProducerStateManager


def read_checkpoint(directory: Path) -> int:
    """The log start offset checkpoint of a partition directory (0 if there is none).

    Raises:
        OSError: the file exists but is not ours to read.
    """
    try:
        text = (directory / LOG_START_OFFSET_CHECKPOINT).read_text()
    except FileNotFoundError:
        return 0
    lines = text.split()
    if len(lines) == 2 and lines[0] == str(_CHECKPOINT_VERSION) and lines[1].isdigit():
        return int(lines[1])
    # It is written by rename, so it cannot be torn; anything else is not ours to guess.
    raise OSError(f"unreadable {LOG_START_OFFSET_CHECKPOINT}: {text[:40]!r}")


def write_checkpoint(directory: Path, log_start_offset: int) -> None:
    path = directory / LOG_START_OFFSET_CHECKPOINT
    tmp = path.with_name(path.name + _TMP_SUFFIX)
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"{_CHECKPOINT_VERSION}\n{log_start_offset}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
    fsync_directory(directory)


class _Recovery:
    def __init__(self, path: Path, index_interval_bytes: int, report: list[RecoveryEvent]) -> None:
        self.path = path
        self.index_interval_bytes = index_interval_bytes
        self.report = report

    def event(
        self,
        path: Path,
        action: str,
        size: int,
        reason: str,
        *,
        position: int = -1,
        offset: int = -1,
    ) -> None:
        self.report.append(RecoveryEvent(path, action, size, reason, position, offset))

    def clean_leftovers(self) -> None:
        for file in sorted(self.path.iterdir()):
            name = file.name
            ours_tmp = name.endswith(_TMP_SUFFIX) and (
                name == LOG_START_OFFSET_CHECKPOINT + _TMP_SUFFIX or name[:20].isdigit()
            )
            if name.endswith(CLEANED_SUFFIX) or ours_tmp:
                self.event(file, "leftover removed", file.stat().st_size, "unfinished write")
                file.unlink()
            elif name.endswith(SWAP_SUFFIX):
                self.finish_swap(file)

    def finish_swap(self, swap: Path) -> None:
        base = parse_segment_name(swap.name, SWAP_SUFFIX)
        if base is None:
            return
        size, last_offset = last_offset_in_file(swap)
        last_offset = max(last_offset, base)
        covered = [
            b
            for b in (parse_segment_name(p.name) for p in self.path.iterdir())
            if b is not None and base < b <= last_offset
        ]
        for other in covered:
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX):
                segment_path(self.path, other, suffix).unlink(missing_ok=True)
        os.replace(swap, segment_path(self.path, base))
        fsync_directory(self.path)
        self.event(
            swap, "swap completed", size, f"compaction replaced {len(covered) + 1} segment(s)"
        )

    def delete_segment_files(self, bases: list[int], reason: str) -> None:
        for base in bases:
            path = segment_path(self.path, base)
            self.event(path, "deleted", path.stat().st_size, reason)
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIMEINDEX_SUFFIX):
                segment_path(self.path, base, suffix).unlink(missing_ok=True)


def recover_segments(
    path: Path,
    segments: list[Segment],
    *,
    index_interval_bytes: int,
    now_wall_ms: int,
    report: list[RecoveryEvent],
) -> Recovered:
    """Recover the partition directory `path` (see the module docstring), filling
    `segments` (empty on entry; the caller's, so that it can close what was opened should
    this raise) with the segments that survive, oldest first, and at least one.

    Raises:
        OSError: the directory cannot be read or repaired.
    """
    recovery = _Recovery(path, index_interval_bytes, report)
    path.mkdir(parents=True, exist_ok=True)
    recovery.clean_leftovers()
    checkpoint = read_checkpoint(path)
    producer_state = ProducerStateManager()
    bases = sorted(b for b in (parse_segment_name(p.name) for p in path.iterdir()) if b is not None)
    last_offset = -1
    for i, base in enumerate(bases):
        segment_file = segment_path(path, base)
        if base <= last_offset:
            recovery.delete_segment_files(
                bases[i:], f"overlaps the previous segment, which ends at {last_offset}"
            )
            break
        segment = Segment.open(path, base, index_interval_bytes=index_interval_bytes)
        is_last = i == len(bases) - 1
        cut = segment.recover(
            verify_crc=is_last, min_offset=last_offset + 1, on_batch=producer_state.replay
        )
        if segment.roll_base_ms < 0:
            segment.roll_base_ms = now_wall_ms
        segments.append(segment)
        last_offset = segment.next_offset - 1
        if cut is not None:
            recovery.event(
                segment_file,
                "truncated",
                cut[0],
                cut[1],
                position=segment.size,
                offset=segment.next_offset,
            )
            if not is_last:
                recovery.delete_segment_files(
                    bases[i + 1 :], f"follows {segment_file.name}, which was truncated"
                )
                break
    for segment in segments:
        for what in segment.sync_index_files():
            recovery.event(segment.path, "index rebuilt", 0, what)
    log_end_offset = segments[-1].next_offset if segments else 0
    if checkpoint > log_end_offset:
        # DeleteRecords (or retention) had moved the start past data that a crash then
        # lost: the log restarts empty at the checkpoint, as Kafka's does.
        for segment in segments:
            segment.delete_files()
            recovery.event(
                segment.path, "deleted", segment.size, f"below the log start offset {checkpoint}"
            )
        segments.clear()
        producer_state = ProducerStateManager()
    if not segments:
        segments.append(
            Segment.create(
                path,
                max(checkpoint, log_end_offset),
                index_interval_bytes=index_interval_bytes,
                wall_ms=now_wall_ms,
            )
        )
    log_start_offset = max(checkpoint, segments[0].base_offset)
    producer_state.evict_below(log_start_offset)
    return Recovered(log_start_offset, producer_state)


def recovery_log_lines(partition: str, events: list[RecoveryEvent]) -> list[tuple[int, str]]:
    """The log lines (level, text) for what `Log.open` changed in one partition.

    A cut tail or a deleted segment is data that is gone: one WARNING line each. Index
    files are derived data, written when a segment rolls or the log closes, so after a
    crash every partition's are missing or behind: that is expected, one DEBUG line per
    partition (`load` sums them up at INFO). Finishing an interrupted compaction and
    removing unfinished temporary files lose nothing: INFO.
    """
    lines: list[tuple[int, str]] = []
    rebuilt: list[str] = []
    for e in events:
        if e.action == "truncated":
            lines.append(
                (
                    logging.WARNING,
                    f"recovered {partition}: truncated {e.path.name} at position {e.position}, "
                    f"a torn or corrupt tail (bytes={e.bytes}, next offset {e.offset}): "
                    f"{e.reason}",
                )
            )
        elif e.action == "deleted":
            lines.append(
                (
                    logging.WARNING,
                    f"recovered {partition}: deleted segment {e.path.name} "
                    f"({e.bytes} bytes): {e.reason}",
                )
            )
        elif e.action == "index rebuilt":
            rebuilt.append(f"{e.path.stem}.{e.reason}")  # "00000000000000000000.index: missing"
        elif e.action == "swap completed":
            lines.append(
                (
                    logging.INFO,
                    f"recovered {partition}: finished an interrupted compaction: "
                    f"{e.path.name} ({e.bytes} bytes), {e.reason}",
                )
            )
        else:  # "leftover removed"
            lines.append(
                (
                    logging.INFO,
                    f"recovered {partition}: removed {e.path.name} ({e.bytes} bytes), "
                    f"left by an {e.reason}",
                )
            )
    if rebuilt:
        lines.append((logging.DEBUG, f"recovered {partition}: index rebuilt: {'; '.join(rebuilt)}"))
    return lines
