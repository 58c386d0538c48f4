"""`kmock topics list | create NAME | delete NAME | describe NAME`."""

from __future__ import annotations

import argparse
from typing import Any

from cli.options import client_options
from cli.output import Output, Parser

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add `topics` to the `kmock` subparsers."""
    common = client_options()
    topics = sub.add_parser("topics", help="list, create, delete, describe topics")
    tsub = topics.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=Parser
    )
    p = tsub.add_parser("list", parents=[common], help="list topics")
    p.add_argument("--exclude-internal", action="store_true", help="leave out __consumer_offsets")
    p.set_defaults(func=run)
    p = tsub.add_parser("create", parents=[common], help="create a topic")
    p.add_argument("topic")
    p.add_argument(
        "--partitions",
        type=int,
        default=-1,
        metavar="N",
        help="default: the broker's num.partitions",
    )
    p.add_argument("--replication-factor", type=int, default=-1, metavar="N")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config (retention.ms=60000; repeatable)",
    )
    p.add_argument("--if-not-exists", action="store_true")
    p.set_defaults(func=run)
    p = tsub.add_parser("delete", parents=[common], help="delete a topic")
    p.add_argument("topic")
    p.add_argument("--if-exists", action="store_true")
    p.set_defaults(func=run)
    p = tsub.add_parser(
        "describe", parents=[common], help="partitions, offsets and configs of a topic"
    )
    p.add_argument("topic")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code (and the client it uses) loads only now."""
    from cli.commands import topics

    return topics.ACTIONS[args.action](args, out)
