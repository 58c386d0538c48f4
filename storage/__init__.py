"""Durable partition logs in Kafka's on-disk layout: segments, offset and time indexes,
crash recovery, idempotent-producer state, retention and compaction.

Owns: files under a partition directory. Imports only the stdlib and `protocol` (record
batches, error codes). Must not import trio, `coordinator` or `broker`: it is plain
synchronous file I/O, run by the broker on its own thread (fsync possibly in a worker).
"""

from typing import TYPE_CHECKING, Any

from storage.log import AppendInfo, Log, LogConfig, RecoveryEvent, apply_retention, flush_logs
from storage.producer_state import BatchMetadata, ProducerStateManager
from storage.segment import FileSlice, Segment

if TYPE_CHECKING:
    from storage.compaction import CompactionReport, compact


def __getattr__(name: str) -> Any:
    """storage.compaction's names, imported on first use (PEP 562): a broker compacts only
    after log.cleaner.backoff.ms, and a start need not import it."""
    if name in ("CompactionReport", "compact"):
        from storage import compaction

        return getattr(compaction, name)
    raise AttributeError(f"module 'storage' has no attribute {name!r}")


__all__ = [
    "AppendInfo",
    "BatchMetadata",
    "CompactionReport",
    "FileSlice",
    "Log",
    "LogConfig",
    "ProducerStateManager",
    "RecoveryEvent",
    "Segment",
    "apply_retention",
    "compact",
    "flush_logs",
]
