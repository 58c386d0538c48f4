"""A partition log's settings (`LogConfig`), named after Kafka's topic configs; what
`flush_mode` means is storage/log.py's module docstring."""

from __future__ import annotations

from dataclasses import dataclass

from protocol.records import BATCH_HEADER_SIZE

__all__ = ["LogConfig"]

_DAY_MS = 24 * 60 * 60 * 1000
_FLUSH_MODES = ("none", "interval", "always")
_CLEANUP_POLICIES = ("delete", "compact", "compact,delete", "delete,compact")
_TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")


@dataclass(frozen=True, slots=True, kw_only=True)
class LogConfig:
    """Per-log settings, named after Kafka's topic configs (broker default in brackets)."""

    segment_bytes: int = 1024 * 1024 * 1024  # segment.bytes [log.segment.bytes]
    segment_ms: int = 7 * _DAY_MS  # segment.ms [log.roll.ms]
    retention_ms: int = 7 * _DAY_MS  # retention.ms [log.retention.ms]; -1 = forever
    retention_bytes: int = -1  # retention.bytes [log.retention.bytes]; -1 = no limit
    index_interval_bytes: int = 4096  # index.interval.bytes [log.index.interval.bytes]
    cleanup_policy: str = "delete"  # cleanup.policy [log.cleanup.policy]
    delete_retention_ms: int = _DAY_MS  # delete.retention.ms [log.cleaner.delete.retention.ms]
    max_message_bytes: int = 1048588  # max.message.bytes [message.max.bytes]
    # message.timestamp.type [log.message.timestamp.type]: "CreateTime" or "LogAppendTime"
    message_timestamp_type: str = "CreateTime"
    # Not Kafka's: see storage/log.py's docstring. Kafka's log.flush.interval.ms/messages default to
    # "never" and rely on replication, which a single broker does not have.
    flush_mode: str = "interval"
    flush_interval_ms: int = 5
    # flush.messages [log.flush.interval.messages], Kafka's meaning: an append that leaves
    # this many messages unflushed fsyncs the log before it returns (UnifiedLog.append).
    flush_messages: int = 2**63 - 1

    def __post_init__(self) -> None:
        if self.flush_mode not in _FLUSH_MODES:
            raise ValueError(f"flush_mode must be one of {_FLUSH_MODES}, not {self.flush_mode!r}")
        if self.cleanup_policy not in _CLEANUP_POLICIES:
            raise ValueError(
                f"cleanup_policy must be one of {_CLEANUP_POLICIES}, not {self.cleanup_policy!r}"
            )
        if self.message_timestamp_type not in _TIMESTAMP_TYPES:
            raise ValueError(f"message_timestamp_type must be one of {_TIMESTAMP_TYPES}")
        if (
            self.segment_bytes < BATCH_HEADER_SIZE
            or self.index_interval_bytes < 0
            or self.flush_interval_ms < 0
        ):
            raise ValueError(
                "segment_bytes, index_interval_bytes or flush_interval_ms out of range"
            )

    @property
    def compacts(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def deletes(self) -> bool:
        return "delete" in self.cleanup_policy
