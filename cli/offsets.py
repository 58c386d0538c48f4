"""`kmock offsets show GROUP | reset GROUP --topic T (--to-earliest | ...) [--execute]`."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.options import client_options
from cli.output import Output, Parser

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add `offsets` to the `kmock` subparsers."""
    common = client_options()
    offsets = sub.add_parser("offsets", help="show and reset a group's committed offsets")
    osub = offsets.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=Parser
    )
    p = osub.add_parser("show", parents=[common], help="committed offsets and lag")
    p.add_argument("group")
    p.set_defaults(func=run)
    p = osub.add_parser(
        "reset",
        parents=[common],
        help="reset committed offsets (dry run unless --execute)",
        description="Like kafka-consumer-groups --reset-offsets: prints the plan (Kafka's "
        "table, or its CSV with --export), and commits it with --execute. The group must "
        "have no members (state Empty, or Dead: a group that does not exist yet gets the "
        "offsets); otherwise nothing is done and the exit code is 3. New offsets are kept "
        "between each partition's log start and end, as Kafka does. Every argument, "
        "topic, partition and CSV line is checked before anything is committed.",
    )
    p.add_argument("group")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,P]",
        help="a topic, or some of its partitions (repeatable)",
    )
    which.add_argument(
        "--all-topics", action="store_true", help="every partition the group has committed"
    )
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true", help="each log's start")
    to.add_argument("--to-latest", action="store_true", help="each log's end")
    to.add_argument(
        "--to-current",
        action="store_true",
        help="the committed offset (the log end where there is none): with --export, "
        "saves the group's offsets",
    )
    to.add_argument("--to-offset", type=int, metavar="N", help="this offset")
    to.add_argument(
        "--to-datetime",
        metavar="ISO",
        help="the first offset at or after this time (2025-01-31T12:00:00.000, UTC unless "
        "it carries an offset such as +01:00 or Z, as in Kafka); the log end if none",
    )
    to.add_argument(
        "--by-duration",
        metavar="PnDTnHnMnS",
        help="as --to-datetime, for the time this long ago (ISO 8601 duration: P1D, PT30M)",
    )
    to.add_argument(
        "--shift-by",
        type=int,
        metavar="N",
        help="the committed offset plus N (negative: back); needs a committed offset",
    )
    to.add_argument(
        "--from-file",
        type=Path,
        metavar="CSV",
        help="the offsets of a CSV file as --export writes it (topic,partition,offset, or "
        "group,topic,partition,offset); it names the partitions, so no --topic",
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the plan")
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (default)")
    p.add_argument(
        "--export", action="store_true", help="print the plan as CSV (topic,partition,offset)"
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code (and the client it uses) loads only now."""
    from cli.commands import offsets

    return offsets.ACTIONS[args.action](args, out)
