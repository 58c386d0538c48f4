"""The settings of KIP-848 consumer groups (group.consumer.*), checked as Kafka's
GroupCoordinatorConfig checks them."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.consumer.assignors import ASSIGNORS
from coordinator.consumer.policy import ConsumerGroupMigrationPolicy

__all__ = ["ConsumerGroupConfig"]


@dataclass(frozen=True, slots=True)
class ConsumerGroupConfig:
    session_timeout_ms: int = 45000  # group.consumer.session.timeout.ms
    heartbeat_interval_ms: int = 5000  # group.consumer.heartbeat.interval.ms
    max_size: int = 2**31 - 1  # group.consumer.max.size
    assignors: tuple[str, ...] = ("uniform", "range")  # group.consumer.assignors; first: default
    # group.consumer.migration.policy
    migration_policy: ConsumerGroupMigrationPolicy = ConsumerGroupMigrationPolicy.BIDIRECTIONAL

    def __post_init__(self) -> None:
        unknown = [name for name in self.assignors if name not in ASSIGNORS]
        if not self.assignors or unknown:
            raise ValueError(
                f"group.consumer.assignors: {list(self.assignors)} must name one or more of "
                f"{sorted(ASSIGNORS)}"
            )
        for setting, value in (
            ("group.consumer.session.timeout.ms", self.session_timeout_ms),
            ("group.consumer.heartbeat.interval.ms", self.heartbeat_interval_ms),
            ("group.consumer.max.size", self.max_size),
        ):
            if value < 1:
                raise ValueError(f"{setting} must be at least 1, not {value}")
        if self.heartbeat_interval_ms >= self.session_timeout_ms:
            raise ValueError(
                f"group.consumer.heartbeat.interval.ms ({self.heartbeat_interval_ms}) must be "
                f"less than group.consumer.session.timeout.ms ({self.session_timeout_ms})"
            )
