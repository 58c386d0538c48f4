"""`kmock topics list | create NAME... | delete NAME... | describe [NAME...]`, with the options
users know from kafka-topics.sh."""

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
    p = tsub.add_parser(
        "create",
        parents=[common],
        help="create topics",
        description="Create one or more topics with the same settings. Every topic is "
        "validated first (CreateTopics with validate_only): if one is refused, none is "
        "created.",
    )
    p.add_argument("topic", nargs="+")
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
    p.add_argument(
        "--if-not-exists", action="store_true", help="skip the topics that exist already"
    )
    p.add_argument(
        "--dry-run", action="store_true", help="only validate (CreateTopics validate_only)"
    )
    p.set_defaults(func=run)
    p = tsub.add_parser(
        "delete",
        parents=[common],
        help="delete topics",
        description="Delete one or more topics. If one does not exist (and --if-exists is "
        "not given), none is deleted.",
    )
    p.add_argument("topic", nargs="+")
    p.add_argument("--if-exists", action="store_true", help="skip the topics that do not exist")
    p.add_argument("--dry-run", action="store_true", help="only say what would be deleted")
    p.set_defaults(func=run)
    p = tsub.add_parser(
        "describe",
        parents=[common],
        help="partitions, offsets and configs of topics",
        description="Each topic's partitions and offsets, and its configs: the ones set on "
        "the topic in the header line (as kafka-topics.sh prints them), every config with "
        "--all-configs (and always in --output json). No NAME: every topic.",
    )
    p.add_argument("topic", nargs="*")
    p.add_argument(
        "--all-configs", action="store_true", help="every config, defaults included, in a table"
    )
    p.add_argument("--exclude-internal", action="store_true", help="leave out __consumer_offsets")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code (and the client it uses) loads only now."""
    from cli.commands import topics

    return topics.ACTIONS[args.action](args, out)
