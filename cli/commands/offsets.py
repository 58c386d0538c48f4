"""What `kmock offsets` does; its parser is `cli.offsets`."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Mapping
from typing import Any

from cli.commands.admin import connect, describe_group, print_offset_rows
from cli.output import EXIT_OK, Failed, Output, Refused, UsageError
from client import EARLIEST, LATEST, KafkaClient

__all__ = ["ACTIONS"]

# Group states in which offsets may be reset (no members).
_GROUP_INACTIVE = ("Empty", "Dead")


def cmd_offsets_show(args: argparse.Namespace, out: Output) -> int:
    with connect(args) as client:
        group, _, rows = describe_group(client, args.group)
    if args.output == "json":
        out.json({"group_id": group.group_id, "state": group.group_state, "offsets": rows})
    else:
        print_offset_rows(out, rows, title=f"Group {group.group_id} ({group.group_state})")
    return EXIT_OK


def _parse_topic_spec(spec: str) -> tuple[str, list[int] | None]:
    topic, sep, parts = spec.partition(":")
    if not topic:
        raise UsageError(f"--topic {spec!r}: no topic name")
    if not sep:
        return topic, None
    try:
        return topic, sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise UsageError(f"--topic {spec!r}: partitions must be numbers (TOPIC:0,1)") from None


def _parse_datetime_ms(text: str) -> int:
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--to-datetime {text!r} is not an ISO 8601 date and time") from None
    return int(when.timestamp() * 1000)  # naive: local time, as Kafka's tool reads it


def _reset_targets(
    client: KafkaClient, args: argparse.Namespace, committed: Mapping[tuple[str, int], Any]
) -> list[tuple[str, int]]:
    if args.all_topics:
        return sorted(committed)
    keys: set[tuple[str, int]] = set()
    for spec in args.topic:
        topic, partitions = _parse_topic_spec(spec)
        count = client.partition_count(topic)
        for p in partitions if partitions is not None else range(count):
            if not 0 <= p < count:
                raise Failed(f"topic {topic!r} has no partition {p} (it has {count})")
            keys.add((topic, p))
    return sorted(keys)


def cmd_offsets_reset(args: argparse.Namespace, out: Output) -> int:
    timestamp = _parse_datetime_ms(args.to_datetime) if args.to_datetime is not None else None
    with connect(args) as client:
        group = client.describe_group(args.group)
        if group.group_state not in _GROUP_INACTIVE:
            raise Refused(
                f"offsets can only be reset while group {args.group!r} is inactive, but it "
                f"is {group.group_state} with {len(group.members)} member(s); stop its "
                f"consumers first"
            )
        committed = client.committed_offsets(args.group)
        keys = _reset_targets(client, args, committed)
        starts = client.list_offsets(keys, EARLIEST)
        ends = client.list_offsets(keys, LATEST)
        if args.to_earliest:
            new = dict(starts)
        elif args.to_latest:
            new = dict(ends)
        elif timestamp is not None:
            found = client.list_offsets(keys, timestamp)
            # No record at or after the time: the log end, as Kafka's tool does.
            new = {k: o if o >= 0 else ends[k] for k, o in found.items()}
        else:
            new = {k: min(max(args.to_offset, starts[k]), ends[k]) for k in keys}
        plan: list[dict[str, Any]] = [
            {
                "topic": t,
                "partition": p,
                "current_offset": committed[(t, p)].offset if (t, p) in committed else None,
                "new_offset": new[(t, p)],
            }
            for t, p in keys
        ]
        if args.execute and plan:
            client.commit_offsets(
                args.group, {(r["topic"], r["partition"]): r["new_offset"] for r in plan}
            )
    if args.output == "json":
        out.json({"group_id": args.group, "executed": bool(args.execute), "plan": plan})
        return EXIT_OK
    title = (
        f"Committed for group {args.group}"
        if args.execute
        else f"Dry run for group {args.group}: nothing committed (add --execute)"
    )
    out.table(
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"],
        [[r["topic"], r["partition"], r["current_offset"], r["new_offset"]] for r in plan],
        title=title,
    )
    return EXIT_OK


ACTIONS = {
    "show": cmd_offsets_show,
    "reset": cmd_offsets_reset,
}
