"""`kmock groups list | describe GROUP`: consumer groups, their members, offsets and lag."""

from __future__ import annotations

import argparse
from typing import Any

from cli.options import client_options
from cli.output import Output, Parser

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add `groups` to the `kmock` subparsers."""
    common = client_options()
    groups = sub.add_parser("groups", help="list and describe consumer groups")
    gsub = groups.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=Parser
    )
    p = gsub.add_parser("list", parents=[common], help="list groups")
    p.set_defaults(func=run)
    p = gsub.add_parser(
        "describe", parents=[common], help="members, assignments, committed offsets and lag"
    )
    p.add_argument("group")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code (and the client it uses) loads only now."""
    from cli.commands import groups

    return groups.ACTIONS[args.action](args, out)
