"""Resetting a group's committed offsets: when it is allowed and where each partition goes.

Shared by `kmock offsets reset` (cli/commands/offsets.py, over the Kafka protocol) and the
web console's POST /v1/groups/{id}/offsets/reset (broker/console/groups.py, inside the
broker), so that both refuse the same groups with the same words and compute the same plan.
They follow Kafka's ConsumerGroupCommand (ResetOffsets): only a group with no members may be
reset, and every new offset is kept between the partition's log start and log end
(checkOffsetsRange). Pure: the caller brings the offsets it looked up.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = ["INACTIVE_STATES", "TARGETS", "inactive_refusal", "plan_offsets"]

TopicPartition = tuple[str, int]

# Group states in which offsets may be reset (no members). Dead: the group does not exist
# (yet); committing creates it with the offsets.
INACTIVE_STATES = ("Empty", "Dead")
# Where a reset can send each partition.
TARGETS = ("earliest", "latest", "current", "offset", "timestamp", "shift")


def inactive_refusal(group_id: str, state: str, members: int) -> str | None:
    """None when the group may be reset, else ConsumerGroupCommand.resetOffsets' refusal."""
    if state in INACTIVE_STATES:
        return None
    return (
        f"Assignments can only be reset if the group '{group_id}' is inactive, but the "
        f"current state is {state}. It has {members} member(s): stop its consumers first."
    )


def plan_offsets(
    to: str,
    keys: Sequence[TopicPartition],
    *,
    starts: Mapping[TopicPartition, int],
    ends: Mapping[TopicPartition, int],
    committed: Mapping[TopicPartition, int],
    offset: int | Mapping[TopicPartition, int] | None = None,
    found: Mapping[TopicPartition, int] | None = None,
    shift_by: int | None = None,
) -> dict[TopicPartition, int]:
    """The new offset of each partition in `keys`.

    to="earliest": the log start; "latest": the log end; "current": the committed offset (the
    log end where there is none); "offset": `offset` (one for all, or one per partition);
    "timestamp": `found`, the first offset at or after the time (ListOffsets), the log end
    where none (-1) is; "shift": the committed offset plus `shift_by` (every key must have
    one). Explicit offsets are clamped into [log start, log end].
    """

    def clamp(k: TopicPartition, value: int) -> int:
        return min(max(value, starts[k]), ends[k])

    if to == "earliest":
        return {k: starts[k] for k in keys}
    if to == "latest":
        return {k: ends[k] for k in keys}
    if to == "current":
        return {k: committed.get(k, ends[k]) for k in keys}
    if to == "timestamp":
        assert found is not None
        return {k: found[k] if found[k] >= 0 else ends[k] for k in keys}
    if to == "shift":
        assert shift_by is not None
        return {k: clamp(k, committed[k] + shift_by) for k in keys}
    if to == "offset":
        assert offset is not None
        if isinstance(offset, int):
            return {k: clamp(k, offset) for k in keys}
        return {k: clamp(k, offset[k]) for k in keys}
    raise ValueError(f"unknown reset target {to!r} (known: {', '.join(TARGETS)})")
