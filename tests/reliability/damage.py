"""Damage a stopped broker's data directory the way a machine crash or a bad disk can.

A SIGKILL alone never tears a write (the page cache holds whatever a write() call put
there), so the crash-cycle tests add, on some restarts, what an OS crash or power loss
leaves behind at the end of the active segment. Everything here works on files only, with
the broker not running, and returns a `Damage` saying what recovery should report.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path

from protocol.records import build_batch, iter_batches

TORN_PREFIX = "torn"  # values of records that only ever existed in damaged bytes


@dataclass(frozen=True)
class Damage:
    partition_dir: str  # e.g. "orders-0" or "__consumer_offsets-7"
    segment: Path
    kind: str
    bytes_added: int
    valid_size: int  # the size recovery must cut the segment back to


def active_segment(partition_dir: Path) -> Path:
    return max(partition_dir.glob("*.log"), key=lambda p: p.name)


def next_offset(segment: Path) -> int:
    data = segment.read_bytes()
    base = int(segment.name[:20])
    last = base - 1
    for _, header in iter_batches(data):
        last = header.last_offset
    return last + 1


def tear_tail(partition_dir: Path, rng: random.Random, *, label: str) -> Damage:
    """Append to the active segment what an interrupted write leaves:

    * "torn batch": the first part of a batch (the rest never reached the disk);
    * "bad crc": a whole batch whose bytes are not what was written;
    * "zeros": blocks the file grew by whose data never arrived.
    """
    segment = active_segment(partition_dir)
    valid_size = segment.stat().st_size
    batch = bytearray(
        build_batch(
            [
                (b"k", f"{TORN_PREFIX}-{label}-{i}".encode(), (), 1_700_000_000_000 + i)
                for i in range(rng.randint(1, 5))
            ],
            base_offset=next_offset(segment),
        )
    )
    kind = rng.choice(["torn batch", "bad crc", "zeros"])
    if kind == "torn batch":
        tail = bytes(batch[: rng.randint(1, len(batch) - 1)])
    elif kind == "bad crc":
        batch[rng.randrange(61, len(batch))] ^= 1 << rng.randrange(8)
        tail = bytes(batch)
    else:
        tail = bytes(rng.choice([512, 4096, 8192]))
    with open(segment, "ab") as f:
        f.write(tail)
    return Damage(partition_dir.name, segment, kind, len(tail), valid_size)


def partitions_with_data(data_dir: Path) -> list[Path]:
    """Partition directories whose active segment is not empty."""
    return sorted(
        d
        for d in data_dir.iterdir()
        if d.is_dir() and any(d.glob("*.log")) and active_segment(d).stat().st_size > 0
    )
