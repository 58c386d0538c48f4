"""The group coordinator (classic protocol) as a pure, synchronous state machine.

Owns: groups, members, rebalances, committed offsets, their timers and expiry, the
__consumer_offsets record formats it writes, and replay of that log at startup.
Must not import: trio, `storage`, `broker`, or anything that reads a clock or does I/O;
time comes in as `now_ms` (monotonic) and `wall_ms` arguments.
"""

from coordinator.classic.state import TRANSITIONS, GroupState
from coordinator.config import CoordinatorConfig
from coordinator.coordinator import GroupCoordinator
from coordinator.offsets import CommittedOffset
from coordinator.outcome import GenerationStarted, Outcome, Reply, RequestContext
from coordinator.records import CoordinatorRecord

__all__ = [
    "TRANSITIONS",
    "CommittedOffset",
    "CoordinatorConfig",
    "CoordinatorRecord",
    "GenerationStarted",
    "GroupCoordinator",
    "GroupState",
    "Outcome",
    "Reply",
    "RequestContext",
]
