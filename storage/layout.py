"""File and directory names of Kafka's on-disk layout: the one place that spells them.

    <data dir>/<topic>-<partition>/                  one directory per partition
    <data dir>/broker-<id>/<topic>-<partition>/      the same, with several brokers
                                                     (kmock.brokers): under the partition's
                                                     preferred replica
    <topic>-<partition>/<20-digit base offset>.log   a segment, with .index and .timeindex
                                                     (and .txnindex once a transaction in
                                                     it is aborted)

The broker, the pipeline and `kmock dump-log` all call these functions instead of
formatting names themselves (Kafka: `UnifiedLog.logDirName`, `LogFileUtils.logFile`,
`LogFileUtils.filenamePrefixFromOffset`). Plain string work, no file I/O.
"""

from __future__ import annotations

import re
from pathlib import Path

__all__ = [
    "CLEANED_SUFFIX",
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "OFFSETS_TOPIC",
    "SCHEMAS_TOPIC",
    "SWAP_SUFFIX",
    "TIMEINDEX_SUFFIX",
    "TRANSACTION_STATE_TOPIC",
    "TXN_INDEX_SUFFIX",
    "broker_dir_name",
    "is_offsets_partition_dir",
    "parse_partition_dir",
    "parse_segment_name",
    "partition_dir",
    "partition_dir_name",
    "segment_name",
    "segment_path",
]

# The group coordinator's topic (Kafka's Topic.GROUP_METADATA_TOPIC_NAME). Storage does not
# read its records; the name is here because every layer that finds its directories does.
OFFSETS_TOPIC = "__consumer_offsets"
# The transaction coordinator's topic (Kafka's Topic.TRANSACTION_STATE_TOPIC_NAME).
TRANSACTION_STATE_TOPIC = "__transaction_state"
SCHEMAS_TOPIC = "_schemas"  # the schema registry's (Confluent's kafkastore.topic default)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIMEINDEX_SUFFIX = ".timeindex"
TXN_INDEX_SUFFIX = ".txnindex"  # aborted transactions (storage.txn_index)
# Compaction's output while it is written, and once it is complete (see compaction.py).
CLEANED_SUFFIX = LOG_SUFFIX + ".cleaned"
SWAP_SUFFIX = LOG_SUFFIX + ".swap"

# Topic names may contain '-': the partition is the last field. Kafka's deleted
# "<topic>-<n>.<uuid>-delete" directories do not match.
_PARTITION_DIR = re.compile(r"(?P<topic>.+)-(?P<partition>\d+)")


def broker_dir_name(node_id: int) -> str:
    """The directory of one broker's partitions when a process serves several: the log dir
    of broker `node_id` (each Kafka broker has log.dirs of its own)."""
    return f"broker-{node_id}"


def partition_dir_name(topic: str, partition: int) -> str:
    """Kafka's directory name for a partition: "<topic>-<partition>"."""
    return f"{topic}-{partition}"


def partition_dir(data_dir: Path, topic: str, partition: int) -> Path:
    """The directory of partition `partition` of `topic` under `data_dir`."""
    return data_dir / partition_dir_name(topic, partition)


def parse_partition_dir(name: str) -> tuple[str, int] | None:
    """(topic, partition) from a partition directory's name, or None if it is not one."""
    m = _PARTITION_DIR.fullmatch(name)
    return None if m is None else (m["topic"], int(m["partition"]))


def is_offsets_partition_dir(name: str) -> bool:
    """Whether `name` is the directory of a partition of __consumer_offsets."""
    parsed = parse_partition_dir(name)
    return parsed is not None and parsed[0] == OFFSETS_TOPIC


def segment_name(base_offset: int, suffix: str = LOG_SUFFIX) -> str:
    """Kafka's file name for a segment file: the base offset in 20 digits, then the suffix."""
    return f"{base_offset:020d}{suffix}"


def segment_path(directory: Path, base_offset: int, suffix: str = LOG_SUFFIX) -> Path:
    """The path of a segment file of the partition in `directory`."""
    return directory / segment_name(base_offset, suffix)


def parse_segment_name(name: str, suffix: str = LOG_SUFFIX) -> int | None:
    """The base offset encoded in a segment file name, or None if `name` is not one."""
    stem = name[: -len(suffix)] if name.endswith(suffix) else ""
    if len(stem) == 20 and stem.isdigit():
        return int(stem)
    return None
