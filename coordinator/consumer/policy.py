"""group.consumer.migration.policy: whether groups convert between the classic and the
consumer protocol online (Kafka's ConsumerGroupMigrationPolicy).

    disabled       no conversion of a group that has members
    upgrade        a classic group becomes a consumer group when a consumer-protocol
                   member joins it
    downgrade      a consumer group becomes a classic group when its last consumer-protocol
                   member leaves and classic members remain
    bidirectional  both (Kafka 4.x's default, and kmock's)

An empty group changes type under every policy (Kafka's maybeDeleteEmptyClassicGroup and
its classic JoinGroup to an empty consumer group).
"""

from __future__ import annotations

from enum import Enum

__all__ = ["ConsumerGroupMigrationPolicy"]


class ConsumerGroupMigrationPolicy(Enum):
    DISABLED = "disabled"
    UPGRADE = "upgrade"
    DOWNGRADE = "downgrade"
    BIDIRECTIONAL = "bidirectional"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, name: str) -> ConsumerGroupMigrationPolicy:
        """The policy by name, case-insensitive as Kafka's.

        Raises:
          ValueError: not a policy, naming the setting.
        """
        try:
            return cls(name.strip().lower())
        except ValueError:
            raise ValueError(
                f"group.consumer.migration.policy: {name!r} is not one of "
                f"{', '.join(p.value for p in cls)}"
            ) from None

    @property
    def is_upgrade_enabled(self) -> bool:
        return self in (
            ConsumerGroupMigrationPolicy.UPGRADE,
            ConsumerGroupMigrationPolicy.BIDIRECTIONAL,
        )

    @property
    def is_downgrade_enabled(self) -> bool:
        return self in (
            ConsumerGroupMigrationPolicy.DOWNGRADE,
            ConsumerGroupMigrationPolicy.BIDIRECTIONAL,
        )
