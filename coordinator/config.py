"""CoordinatorConfig: the group coordinator's settings, under Kafka's names.

`COORDINATOR_SETTINGS` is the one table of them: each Kafka setting name with kmock's
default and the CoordinatorConfig field it fills. The config takes its defaults from it,
and the broker's settings (broker/config.py) take theirs from it too, so a default is stated
once. Where kmock's default differs from Kafka's, the table says so.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

__all__ = ["COORDINATOR_SETTINGS", "CoordinatorConfig", "CoordinatorSetting"]


class CoordinatorSetting(NamedTuple):
    name: str  # Kafka's setting name
    field: str  # the CoordinatorConfig field
    default: int
    kafka_default: int | None = None  # when it differs from kmock's


COORDINATOR_SETTINGS: dict[str, CoordinatorSetting] = {
    s.name: s
    for s in (
        CoordinatorSetting("offsets.topic.num.partitions", "offsets_topic_num_partitions", 50),
        CoordinatorSetting("group.min.session.timeout.ms", "group_min_session_timeout_ms", 6000),
        CoordinatorSetting("group.max.session.timeout.ms", "group_max_session_timeout_ms", 1800000),
        # Kafka's default is 3000; a dev broker answers the first JoinGroup of an empty
        # group without waiting for more members to turn up.
        CoordinatorSetting(
            "group.initial.rebalance.delay.ms", "group_initial_rebalance_delay_ms", 0, 3000
        ),
        CoordinatorSetting("group.max.size", "group_max_size", 2**31 - 1),
        CoordinatorSetting("offsets.retention.minutes", "offsets_retention_minutes", 10080),
        CoordinatorSetting(
            "offsets.retention.check.interval.ms", "offsets_retention_check_interval_ms", 600000
        ),
        CoordinatorSetting("offset.metadata.max.bytes", "offset_metadata_max_bytes", 4096),
    )
}
_DEFAULTS = {s.field: s.default for s in COORDINATOR_SETTINGS.values()}


# A NamedTuple rather than a frozen dataclass: made in a fifth of the time, at every start.
class CoordinatorConfig(NamedTuple):
    offsets_topic_num_partitions: int = _DEFAULTS["offsets_topic_num_partitions"]
    group_min_session_timeout_ms: int = _DEFAULTS["group_min_session_timeout_ms"]
    group_max_session_timeout_ms: int = _DEFAULTS["group_max_session_timeout_ms"]
    group_initial_rebalance_delay_ms: int = _DEFAULTS["group_initial_rebalance_delay_ms"]
    group_max_size: int = _DEFAULTS["group_max_size"]
    offsets_retention_minutes: int = _DEFAULTS["offsets_retention_minutes"]
    offsets_retention_check_interval_ms: int = _DEFAULTS["offsets_retention_check_interval_ms"]
    offset_metadata_max_bytes: int = _DEFAULTS["offset_metadata_max_bytes"]

    @classmethod
    def from_settings(cls, setting: Callable[[str], int]) -> CoordinatorConfig:
        """The config from a lookup of Kafka setting names (the broker's settings)."""
        return cls(**{s.field: setting(s.name) for s in COORDINATOR_SETTINGS.values()})


# Every field has its row, and every row its field.
assert set(CoordinatorConfig._fields) == set(_DEFAULTS)
