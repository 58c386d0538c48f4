"""CoordinatorConfig: the group coordinator's settings, under Kafka's names."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CoordinatorConfig"]


@dataclass(frozen=True, slots=True)
class CoordinatorConfig:
    offsets_topic_num_partitions: int = 50  # offsets.topic.num.partitions
    group_min_session_timeout_ms: int = 6000  # group.min.session.timeout.ms
    group_max_session_timeout_ms: int = 1800000  # group.max.session.timeout.ms
    # group.initial.rebalance.delay.ms. Kafka's default is 3000; a dev broker answers the
    # first JoinGroup of an empty group without waiting for more members to turn up.
    group_initial_rebalance_delay_ms: int = 0
    group_max_size: int = 2**31 - 1  # group.max.size
    offsets_retention_minutes: int = 10080  # offsets.retention.minutes
    offsets_retention_check_interval_ms: int = 600000  # offsets.retention.check.interval.ms
    offset_metadata_max_bytes: int = 4096  # offset.metadata.max.bytes
