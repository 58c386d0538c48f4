"""`kmock offsets show GROUP | reset GROUP --topic T (--to-earliest | ...) [--execute]`."""

from __future__ import annotations

import argparse
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
        description="Like kafka-consumer-groups --reset-offsets: prints the plan, and commits "
        "it with --execute. The group must have no members (state Empty or "
        "Dead); otherwise nothing is done and the exit code is 3.",
    )
    p.add_argument("group")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,P]",
        help="a topic, or some of its partitions (repeatable)",
    )
    which.add_argument(
        "--all-topics", action="store_true", help="every topic the group has committed offsets for"
    )
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument(
        "--to-datetime",
        metavar="ISO",
        help="first offset at or after this time (2025-01-31T12:00:00, local time "
        "unless it carries an offset or Z)",
    )
    to.add_argument(
        "--to-offset", type=int, metavar="N", help="this offset (clamped to what the log holds)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the plan")
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (default)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code (and the client it uses) loads only now."""
    from cli.commands import offsets

    return offsets.ACTIONS[args.action](args, out)
