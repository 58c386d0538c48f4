"""The console's consumer groups: list, describe with lag, reset offsets (/v1/groups...).

A group is described from the coordinator's answers to DescribeGroups (classic groups) and
ConsumerGroupDescribe (KIP-848 consumer groups), as an admin client would see it, with its
committed offsets (what OffsetFetch answers: durable commits only) and, per partition, the
high watermark and the lag (high watermark - committed offset, never below 0). The log end
is the high watermark here: a single broker has no followers to wait for.

Offsets are reset as `kmock offsets reset` resets them (coordinator.offset_reset): refused
while the group has members, each new offset within [log start, log end]. A dry run (the
default) only answers the plan; otherwise the plan is committed by an OffsetCommit with no
member and generation -1 (the admin client's commit), through the coordinator runtime, so
the commit is durable in __consumer_offsets before the answer, and the coordinator itself
refuses it if a member joined meanwhile.
"""

from __future__ import annotations

import contextlib
from typing import Any

from broker.console.params import (
    Caller,
    ConsoleError,
    check_params,
    json_body,
    page,
    ready_coordinator,
    timestamp_ms,
)
from coordinator.offset_reset import TARGETS, inactive_refusal, plan_offsets
from protocol.errors import ErrorCode
from protocol.schema import DecodeError

__all__ = ["decoded_assignment", "describe_group", "group_row", "list_groups", "reset_offsets"]

_TYPES = ("classic", "consumer")


def group_row(coordinator: Any, group_id: str) -> dict[str, Any] | None:
    """One line of the group list; None for a group that does not exist."""
    group_type = coordinator.group_type(group_id)
    if group_type is None:
        return None
    if group_type == "consumer":
        cg = coordinator.consumer.groups[group_id]
        return {
            "group_id": group_id,
            "type": "consumer",
            "state": str(cg.state),
            "protocol_type": "consumer",
            "protocol": None,
            "members": len(cg.members),
            "epoch": cg.group_epoch,
        }
    g = coordinator.group(group_id)
    return {
        "group_id": group_id,
        "type": "classic",
        "state": str(g.state),
        "protocol_type": g.protocol_type or "",
        "protocol": g.protocol_name,
        "members": len(g.members),
        "epoch": g.generation_id,
    }


async def list_groups(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    check_params(params, {"filter", "type", "state", "offset", "limit"})
    coordinator = ready_coordinator(broker)
    kind = params.get("type", "").strip().lower()
    if kind and kind not in _TYPES:
        raise ConsoleError(400, "type", f"expected classic or consumer, not {kind!r}")
    state = params.get("state", "").strip().lower()
    needle = params.get("filter", "").lower()
    rows = []
    for group_id in sorted(coordinator.group_ids()):
        if needle not in group_id.lower():
            continue
        row = group_row(coordinator, group_id)
        if row is None or (kind and row["type"] != kind):
            continue
        if state and row["state"].lower() != state:
            continue
        rows.append(row)
    window = page(params)
    return {"total": len(rows), "offset": window.start, "groups": rows[window]}


def _group_or_404(coordinator: Any, group_id: str) -> dict[str, Any]:
    row = group_row(coordinator, group_id)
    if row is None:
        raise ConsoleError(404, "group", f"group {group_id!r} does not exist", "GROUP_ID_NOT_FOUND")
    return row


def decoded_assignment(data: bytes) -> dict[str, list[int]]:
    from protocol.consumer_protocol import decode_assignment

    if not data:
        return {}
    with contextlib.suppress(DecodeError):
        a = decode_assignment(data)
        return {tp.topic: sorted(tp.partitions) for tp in a.assigned_partitions}
    return {}


def _subscription(data: bytes) -> list[str]:
    from protocol.consumer_protocol import decode_subscription

    with contextlib.suppress(DecodeError):
        if data:
            return list(decode_subscription(data).topics)
    return []


async def _members(broker: Any, row: dict[str, Any]) -> list[dict[str, Any]]:
    runtime = broker.coordinator
    group_id = row["group_id"]
    if row["type"] == "consumer":
        from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest

        request = ConsumerGroupDescribeRequest(
            group_ids=[group_id], include_authorized_operations=False
        )
        described = runtime.consumer_group_describe(Caller(0), request).groups[0]
        return [
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "client_id": m.client_id,
                "client_host": m.client_host,
                "member_epoch": m.member_epoch,
                "subscription": sorted(m.subscribed_topic_names),
                "assignment": {
                    t.topic_name: sorted(t.partitions) for t in m.assignment.topic_partitions
                },
            }
            for m in described.members
        ]
    from protocol.messages.describe_groups import DescribeGroupsRequest

    describe = DescribeGroupsRequest(groups=[group_id], include_authorized_operations=False)
    described = runtime.describe_groups(Caller(5), describe).groups[0]
    consumer = row["protocol_type"] == "consumer"
    return [
        {
            "member_id": m.member_id,
            "group_instance_id": m.group_instance_id,
            "client_id": m.client_id,
            "client_host": m.client_host,
            "subscription": _subscription(m.member_metadata) if consumer else [],
            "assignment": decoded_assignment(m.member_assignment) if consumer else {},
        }
        for m in described.members
    ]


def _offsets(
    broker: Any, coordinator: Any, group_id: str, members: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """One row per partition committed or assigned: committed offset, high watermark, lag,
    and the member that holds it."""
    group = coordinator.group(group_id)
    committed = {} if group is None else {k: v.offset for k, v in group.offsets.items()}
    owners = {(topic, p): m for m in members for topic, ps in m["assignment"].items() for p in ps}
    rows = []
    for topic, partition in sorted(set(committed) | set(owners)):
        t = broker.topics.get(topic)
        end = (
            t.partitions[partition].log.high_watermark
            if t is not None and partition < len(t.partitions)
            else None
        )
        c = committed.get((topic, partition))
        owner = owners.get((topic, partition))
        rows.append(
            {
                "topic": topic,
                "partition": partition,
                "committed_offset": c,
                "high_watermark": end,
                "lag": None if c is None or end is None else max(0, end - c),
                "member_id": None if owner is None else owner["member_id"],
                "client_id": None if owner is None else owner["client_id"],
            }
        )
    return rows


async def describe_group(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    check_params(params, set())
    coordinator = ready_coordinator(broker)
    row = _group_or_404(coordinator, args[0])
    members = await _members(broker, row)
    offsets = _offsets(broker, coordinator, row["group_id"], members)
    lags = [r["lag"] for r in offsets if r["lag"] is not None]
    return {
        **row,
        "leader": None
        if row["type"] == "consumer"
        else coordinator.group(row["group_id"]).leader_id,
        "member_list": members,
        "offsets": offsets,
        "total_lag": sum(lags),
    }


# --- reset --------------------------------------------------------------------------------


def _partitions(
    broker: Any, spec: dict[str, Any], committed: dict[tuple[str, int], int]
) -> list[tuple[str, int]]:
    """The partitions a reset names: `topics` (every partition of each), or `topic` and
    `partitions`, or by default every partition the group has committed. Each must exist."""
    keys: set[tuple[str, int]] = set()
    if "topics" in spec or "topic" in spec:
        if "topics" in spec and "topic" in spec:
            raise ConsoleError(400, "topics", "give topics, or a topic and its partitions")
        names = spec.get("topics", [spec.get("topic")])
        if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
            raise ConsoleError(400, "topics", f"expected a list of topic names, not {names!r}")
        chosen = spec.get("partitions")
        if chosen is not None and (
            "topic" not in spec
            or not isinstance(chosen, list)
            or not all(isinstance(p, int) and not isinstance(p, bool) for p in chosen)
        ):
            raise ConsoleError(400, "partitions", "expected a list of partition numbers of topic")
        for name in names:
            t = broker.topics.get(name)
            if t is None:
                raise ConsoleError(
                    404, "topics", f"topic {name!r} does not exist", "UNKNOWN_TOPIC_OR_PARTITION"
                )
            for p in range(len(t.partitions)) if chosen is None else chosen:
                if not 0 <= p < len(t.partitions):
                    raise ConsoleError(
                        400,
                        "partitions",
                        f"topic {name!r} has no partition {p} (it has {len(t.partitions)})",
                        "UNKNOWN_TOPIC_OR_PARTITION",
                    )
                keys.add((name, p))
    else:
        if not committed:
            raise ConsoleError(
                400, "topics", "the group has no committed offsets: name the topics to reset"
            )
        for name, p in committed:
            t = broker.topics.get(name)
            if t is None or p >= len(t.partitions):
                raise ConsoleError(
                    400, "topics", f"the group committed {name}-{p}, which no longer exists"
                )
            keys.add((name, p))
    return sorted(keys)


async def reset_offsets(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    from protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    check_params(params, set())
    spec = json_body(
        body, {"to", "offset", "timestamp", "shift_by", "topics", "topic", "partitions", "dry_run"}
    )
    coordinator = ready_coordinator(broker)
    group_id = args[0]
    to = spec.get("to")
    if to not in TARGETS:
        raise ConsoleError(400, "to", f"expected one of {', '.join(TARGETS)}, not {to!r}")
    dry_run = spec.get("dry_run", True)
    if not isinstance(dry_run, bool):
        raise ConsoleError(400, "dry_run", f"expected true or false, not {dry_run!r}")
    options: dict[str, Any] = {}
    if to == "offset":
        offset = spec.get("offset")
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ConsoleError(400, "offset", f"expected an offset, 0 or more, not {offset!r}")
        options["offset"] = offset
    when = None
    if to == "timestamp":
        raw = spec.get("timestamp")
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise ConsoleError(400, "timestamp", f"expected ms or an ISO date, not {raw!r}")
        when = timestamp_ms(str(raw), "timestamp")
    if to == "shift":
        shift = spec.get("shift_by")
        if isinstance(shift, bool) or not isinstance(shift, int):
            raise ConsoleError(400, "shift_by", f"expected an integer, not {shift!r}")
        options["shift_by"] = shift
    row = group_row(coordinator, group_id)
    state = "Dead" if row is None else row["state"]
    refusal = inactive_refusal(group_id, state, 0 if row is None else row["members"])
    if refusal is not None:
        raise ConsoleError(409, "group", refusal, ErrorCode.NON_EMPTY_GROUP.name)
    group = coordinator.group(group_id)
    committed = {} if group is None else {k: v.offset for k, v in group.offsets.items()}
    keys = _partitions(broker, spec, committed)
    if to == "shift":
        missing = [k for k in keys if k not in committed]
        if missing:
            raise ConsoleError(
                400,
                "shift_by",
                f"cannot shift {missing[0][0]}-{missing[0][1]}: no committed offset",
            )
    logs = {(t, p): broker.topics.get(t).partitions[p].log for t, p in keys}
    starts = {k: log.log_start_offset for k, log in logs.items()}
    ends = {k: log.high_watermark for k, log in logs.items()}
    if when is not None:
        found = {k: log.offset_for_timestamp(when) for k, log in logs.items()}
        options["found"] = {k: -1 if f is None else f[0] for k, f in found.items()}
    new = plan_offsets(to, keys, starts=starts, ends=ends, committed=committed, **options)
    plan = [
        {
            "topic": t,
            "partition": p,
            "current_offset": committed.get((t, p)),
            "new_offset": new[(t, p)],
            "log_start_offset": starts[(t, p)],
            "high_watermark": ends[(t, p)],
        }
        for t, p in keys
    ]
    if not dry_run and plan:
        by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
        for r in plan:
            by_topic.setdefault(r["topic"], []).append(
                OffsetCommitRequestPartition(
                    partition_index=r["partition"],
                    committed_offset=r["new_offset"],
                    committed_metadata="",
                )
            )
        request = OffsetCommitRequest(
            group_id=group_id,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[OffsetCommitRequestTopic(name=t, partitions=ps) for t, ps in by_topic.items()],
        )
        response = await broker.coordinator.offset_commit(Caller(8), request)
        failed = [
            (t.name, p.partition_index, ErrorCode(p.error_code).name)
            for t in response.topics
            for p in t.partitions
            if p.error_code != ErrorCode.NONE
        ]
        if failed:
            t, p, name = failed[0]
            status = 409 if name in ("UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION") else 400
            raise ConsoleError(status, "group", f"the commit of {t}-{p} was refused: {name}", name)
    return {
        "group_id": group_id,
        "to": to,
        "dry_run": dry_run,
        "executed": not dry_run,
        "plan": plan,
    }
