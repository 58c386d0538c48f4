"""What `kmock offsets` does; its parser is `cli.offsets`."""

from __future__ import annotations

import argparse
import csv
import re
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from cli.commands.admin import connect, describe_group, print_offset_rows
from cli.output import EXIT_OK, Failed, Output, Refused, UsageError
from client import EARLIEST, LATEST, KafkaClient
from coordinator.offset_reset import inactive_refusal, plan_offsets
from protocol.errors import ErrorCode
from protocol.record_file import parse_datetime_ms

__all__ = ["ACTIONS"]


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
        partitions = sorted({int(p) for p in parts.split(",")})
    except ValueError:
        raise UsageError(f"--topic {spec!r}: partitions must be numbers (TOPIC:0,1)") from None
    if any(p < 0 for p in partitions):
        raise UsageError(f"--topic {spec!r}: partitions are numbers >= 0")
    return topic, partitions


# java.time.Duration.parse's grammar (kafka-consumer-groups --by-duration): PnDTnHnMn.nS,
# each part optional but one, signs allowed on the whole and on each part.
_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?"
    r"(T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration_ms(text: str) -> int:
    """An ISO 8601 duration as java.time.Duration.parse reads it, in ms.

    Raises:
      UsageError: it is not one.
    """
    m = _DURATION.fullmatch(text.strip())
    if m is None or (m[2] is None and m[3] is None) or m[3] == "T" or m[3] == "t":
        raise UsageError(
            f"--by-duration {text!r} is not an ISO 8601 duration (PnDTnHnMnS: P1D, PT30M, "
            f"PT1H30M, PT0.5S)"
        )
    sign, days, _, hours, minutes, seconds, fraction = m.groups()
    total_ms = (
        int(days or 0) * 86_400_000
        + int(hours or 0) * 3_600_000
        + int(minutes or 0) * 60_000
        + int(seconds or 0) * 1000
    )
    if fraction:
        millis = int(fraction[:3].ljust(3, "0"))
        total_ms += -millis if (seconds or "").startswith("-") else millis
    return -total_ms if sign == "-" else total_ms


def _read_plan(path: Path, group_id: str) -> dict[tuple[str, int], tuple[int, int]]:
    """The offsets a CSV file gives the group: {(topic, partition): (offset, line)}.

    Kafka's ConsumerGroupCommand writes topic,partition,offset for one group and
    group,topic,partition,offset for several (CsvUtils); it reads either, and so do we:
    the first line sets the shape, and only the lines of `group_id` count.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8"
        raise UsageError(f"--from-file {path}: cannot read it ({why})") from None
    width = 0
    plan: dict[tuple[str, int], tuple[int, int]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        fields = [f.strip() for f in next(csv.reader([line]))]
        width = width or len(fields)
        if width not in (3, 4) or len(fields) != width:
            shape = "group,topic,partition,offset" if width == 4 else "topic,partition,offset"
            raise UsageError(f"{path} line {lineno}: expected {shape}, got {line!r}")
        if width == 4:
            group, *fields = fields
            if group != group_id:
                continue
        topic, partition, offset = fields
        try:
            key = (topic, int(partition))
            value = int(offset)
        except ValueError:
            raise UsageError(
                f"{path} line {lineno}: partition and offset must be numbers, got {line!r}"
            ) from None
        if not topic or key[1] < 0:
            raise UsageError(f"{path} line {lineno}: no topic, or a negative partition: {line!r}")
        plan[key] = (value, lineno)  # a later line wins, as in Kafka's reader
    if not plan:
        raise UsageError(
            f"{path}: no offsets for group {group_id!r}" if width == 4 else f"{path}: no offsets"
        )
    return plan


def _timestamp_ms(args: argparse.Namespace) -> int | None:
    if args.to_datetime is not None:
        try:
            return parse_datetime_ms(args.to_datetime)
        except ValueError as e:
            raise UsageError(f"--to-datetime {e}") from None
    if args.by_duration is not None:
        # ResetOffsets' resetByDuration: now minus the duration.
        return int(time.time() * 1000) - parse_duration_ms(args.by_duration)
    return None


def _counts(client: KafkaClient, topics: Iterable[str]) -> dict[str, tuple[int, int]]:
    """{topic: (error code, partition count)}, without creating any topic."""
    response = client.metadata(sorted(set(topics)))
    return {
        t.name: (t.error_code, len(t.partitions)) for t in response.topics if t.name is not None
    }


def _existing(
    counts: dict[str, tuple[int, int]], where: str, topic: str, partitions: Iterable[int] | None
) -> list[tuple[str, int]]:
    """The partitions named, all of them for None; raises Failed naming `where` (the argument
    or the CSV line) for a topic or partition that does not exist (Kafka's
    checkAllTopicPartitionsValid refuses them too, before anything is committed)."""
    code, count = counts.get(topic, (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, 0))
    if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise Failed(f"{where}: topic {topic!r} does not exist")
    if code:
        raise Failed(f"{where}: topic {topic!r}: {ErrorCode(code).name}")
    chosen = list(range(count) if partitions is None else partitions)
    for p in chosen:
        if not 0 <= p < count:
            raise Failed(f"{where}: topic {topic!r} has no partition {p} (it has {count})")
    return [(topic, p) for p in chosen]


def _inactive_or_refuse(group: Any) -> None:
    # ConsumerGroupCommand.resetOffsets: only Empty and Dead groups, with its message.
    refusal = inactive_refusal(group.group_id, group.group_state, len(group.members))
    if refusal is not None:
        raise Refused(refusal)


def cmd_offsets_reset(args: argparse.Namespace, out: Output) -> int:
    # Everything that needs no broker is checked first.
    if args.from_file is not None and (args.topic or args.all_topics):
        raise UsageError("--from-file names the partitions itself: leave out --topic/--all-topics")
    if args.from_file is None and not (args.topic or args.all_topics):
        raise UsageError("name the partitions: --topic TOPIC[:P,...] or --all-topics")
    timestamp = _timestamp_ms(args)
    specs = [(spec, *_parse_topic_spec(spec)) for spec in args.topic]
    file_plan = _read_plan(args.from_file, args.group) if args.from_file is not None else None
    with connect(args) as client:
        group = client.describe_group(args.group)
        _inactive_or_refuse(group)
        committed = client.committed_offsets(args.group)
        if args.all_topics:
            if not committed:
                raise Failed(
                    f"--all-topics: group {args.group!r} has no committed offsets"
                    + (" (it does not exist)" if group.group_state == "Dead" else "")
                )
            counts = _counts(client, (t for t, _ in committed))
            for t, p in committed:
                _existing(counts, "--all-topics", t, [p])
            keys = sorted(committed)
        elif file_plan is not None:
            counts = _counts(client, (t for t, _ in file_plan))
            for (t, p), (_, lineno) in file_plan.items():
                _existing(counts, f"{args.from_file} line {lineno}", t, [p])
            keys = sorted(file_plan)
        else:
            counts = _counts(client, (topic for _, topic, _ in specs))
            keys = sorted(
                {
                    k
                    for spec, topic, partitions in specs
                    for k in _existing(counts, f"--topic {spec!r}", topic, partitions)
                }
            )
        if args.shift_by is not None:
            missing = [k for k in keys if k not in committed]
            if missing:
                t, p = missing[0]
                raise Failed(
                    f"--shift-by: cannot shift {t}-{p}: group {args.group!r} has no committed "
                    f"offset for it"
                )
        starts = client.list_offsets(keys, EARLIEST)
        ends = client.list_offsets(keys, LATEST)

        current = {k: c.offset for k, c in committed.items()}
        options: dict[str, Any]
        if args.to_earliest:
            to, options = "earliest", {}
        elif args.to_latest:
            to, options = "latest", {}
        elif args.to_current:
            to, options = "current", {}
        elif timestamp is not None:
            to, options = "timestamp", {"found": client.list_offsets(keys, timestamp)}
        elif args.shift_by is not None:
            to, options = "shift", {"shift_by": args.shift_by}
        elif file_plan is not None:
            to, options = "offset", {"offset": {k: file_plan[k][0] for k in keys}}
        else:
            to, options = "offset", {"offset": args.to_offset}
        new = plan_offsets(to, keys, starts=starts, ends=ends, committed=current, **options)
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
    elif args.export:
        # ConsumerGroupCommand.exportOffsetsToCsv for one group: topic,partition,offset.
        for r in plan:
            out.line(f"{r['topic']},{r['partition']},{r['new_offset']}")
    else:
        _print_plan(out, args.group, plan)
    if not args.execute:
        out.stderr.write("Dry run: nothing was committed (add --execute to commit).\n")
    return EXIT_OK


def _print_plan(out: Output, group_id: str, plan: list[dict[str, Any]]) -> None:
    """GroupOffsetsResetter.printOffsetsToReset's table: a blank line, the header, a row per
    partition; group and topic columns at least 15 wide."""
    gw = max(15, len(group_id))
    tw = max([15, *(len(r["topic"]) for r in plan)])
    out.line()
    out.line(f"{'GROUP':<{gw}} {'TOPIC':<{tw}} {'PARTITION':<10} NEW-OFFSET")
    for r in plan:
        out.line(f"{group_id:<{gw}} {r['topic']:<{tw}} {r['partition']!s:<10} {r['new_offset']}")


ACTIONS = {
    "show": cmd_offsets_show,
    "reset": cmd_offsets_reset,
}
