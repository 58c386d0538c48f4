"""WallClock: the wall-clock time of group state changes, from calls that carry only now_ms.

Group calls carry only the monotonic clock. The wall-clock time of a state change, which
GroupMetadataValue.currentStateTimestamp stores and which Empty groups' offsets expire from
after a restart, is derived from the wall-minus-monotonic offset seen at the last call that
carried both (`commit_offsets`, `expire`). Before any such call it is unknown (-1 in the
record, as Kafka's older record versions write).
"""

from __future__ import annotations

from coordinator.classic.group import Group

__all__ = ["WallClock"]


class WallClock:
    __slots__ = ("offset_ms",)

    def __init__(self) -> None:
        self.offset_ms: int | None = None  # wall_ms - now_ms at the last call with both

    def seen(self, now_ms: int, wall_ms: int) -> None:
        self.offset_ms = wall_ms - now_ms

    def state_wall_ms(self, group: Group) -> int:
        """When the group entered its state (wall-clock ms), or -1 when unknown."""
        wall_ms = group.state_wall_ms(self.offset_ms)
        return -1 if wall_ms is None else wall_ms
