"""A consumer group saved before a change, to put back should the change's records not be
written: Kafka's runtime reverts its state to the last written offset (the consumer group
coordinator applies its records as it builds them)."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.consumer.coordinator import ConsumerGroupCoordinator
from coordinator.consumer.group import ConsumerGroup

__all__ = ["TIMER_RETRY_BACKOFF_MS", "SavedGroup", "restore", "save"]

# How soon a timer whose records could not be written runs again (Kafka's CoordinatorTimer
# reschedules a failed timeout with a 500 ms backoff).
TIMER_RETRY_BACKOFF_MS = 500


@dataclass(frozen=True, slots=True)
class SavedGroup:
    """A consumer group as it was (None: there was none) and its members' timers: what
    `restore` puts back when the records of a change are not written."""

    group_id: str
    group: ConsumerGroup | None
    # (group, member) -> its session, rebalance (deadline, epoch), join and sync deadlines.
    timers: dict[tuple[str, str], tuple[int | None, tuple[int, int] | None, int | None, int | None]]


def save(c: ConsumerGroupCoordinator, group_id: str) -> SavedGroup:
    """The group and its members' timers as they are now (see `restore`)."""
    group = c.groups.get(group_id)
    timers = {}
    if group is not None:
        for member_id in group.members:
            key = (group_id, member_id)
            timers[key] = (
                c._session_deadlines.get(key),
                c._rebalance_deadlines.get(key),
                c.join_deadlines.get(key),
                c.sync_deadlines.get(key),
            )
    return SavedGroup(group_id, None if group is None else group.copy(), timers)


def restore(c: ConsumerGroupCoordinator, saved: SavedGroup, now_ms: int) -> None:
    """Put a saved group back: the records written since were not (Kafka's runtime
    reverts to the last written offset). A timer that was due runs again after
    TIMER_RETRY_BACKOFF_MS, as Kafka retries a timeout whose write failed."""
    group_id = saved.group_id
    # A session restarted since stays restarted (the member did send a request; Kafka's
    # timers are not part of what its runtime reverts).
    sessions = {key: c._session_deadlines.get(key) for key in saved.timers}
    current = c.groups.get(group_id)
    if current is not None:
        for member_id in current.members:
            c.cancel_timers(group_id, member_id)
    if saved.group is None:
        c.groups.pop(group_id, None)
    else:
        c.groups[group_id] = saved.group.copy()
    retry_ms = now_ms + TIMER_RETRY_BACKOFF_MS

    def later(deadline: int) -> int:
        return deadline if deadline > now_ms else retry_ms

    for key, (session, rebalance, join, sync) in saved.timers.items():
        c.cancel_timers(*key)
        if session is not None:
            c._session_deadlines[key] = later(max(session, sessions[key] or session))
        if rebalance is not None:
            c._rebalance_deadlines[key] = (later(rebalance[0]), rebalance[1])
        if join is not None:
            c.join_deadlines[key] = later(join)
        if sync is not None:
            c.sync_deadlines[key] = later(sync)
