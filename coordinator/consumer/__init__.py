"""The consumer groups of KIP-848 (group.protocol=consumer): the server computes the
assignment and members converge through ConsumerGroupHeartbeat, with no group-wide barrier.

Owns: consumer groups, their members and epochs, the server-side assignors, reconciliation,
session and rebalance timeouts, their __consumer_offsets records, and replay.
Must not import: trio, `storage`, `broker`, or anything that reads a clock or does I/O;
time comes in as `now_ms`, topic metadata as an argument.
"""

from coordinator.consumer.assignors import ASSIGNORS, range_assign, uniform_assign
from coordinator.consumer.config import ConsumerGroupConfig
from coordinator.consumer.coordinator import ConsumerGroupCoordinator, CoordinatorResult
from coordinator.consumer.group import (
    ConsumerGroup,
    ConsumerGroupState,
    ResolvedRegularExpression,
    TopicImage,
)
from coordinator.consumer.member import (
    TRANSITIONS,
    ConsumerGroupMember,
    MemberState,
    reconcile,
    transition_to,
)
from coordinator.consumer.policy import ConsumerGroupMigrationPolicy
from coordinator.consumer.records import ConsumerGroupRecord

__all__ = [
    "ASSIGNORS",
    "TRANSITIONS",
    "ConsumerGroup",
    "ConsumerGroupConfig",
    "ConsumerGroupCoordinator",
    "ConsumerGroupMember",
    "ConsumerGroupMigrationPolicy",
    "ConsumerGroupRecord",
    "ConsumerGroupState",
    "CoordinatorResult",
    "MemberState",
    "ResolvedRegularExpression",
    "TopicImage",
    "range_assign",
    "reconcile",
    "transition_to",
    "uniform_assign",
]
