"""`kmock faults | clock | journal | connections`: the test controls of a running broker.

    kmock faults list | add API [ERROR] [--count N] [--topic T] ... | storage fsync|append | clear
    kmock clock show | advance MS
    kmock journal [--api A] [--group-id G] [--since SEQ] [--follow] | kmock journal --clear
    kmock connections list | close [--connection N] [--client-id C] [--address HOST:PORT]
    kmock cluster show | leader TOPIC PARTITION BROKER | coordinator BROKER --group-id G
                  | stop ID | start ID          (with kmock.brokers > 1)

They talk to the broker's admin endpoint (`--admin-server`, the /v1 paths of
docs/controls.md), not to its Kafka listener. The parser only; `cli.commands.controls`
does the work.
"""

from __future__ import annotations

import argparse
from typing import Any

from cli.output import Output, Parser

__all__ = ["DEFAULT_ADMIN", "register", "run"]

DEFAULT_ADMIN = "127.0.0.1:9644"


def _admin_options() -> Parser:
    common = Parser(add_help=False)
    common.add_argument(
        "--admin-server",
        default=DEFAULT_ADMIN,
        metavar="HOST:PORT",
        help=f"the broker's admin endpoint, `kmock serve --admin-port` (default {DEFAULT_ADMIN})",
    )
    common.add_argument(
        "--output", choices=("text", "json"), default="text", help="text, or json for scripts"
    )
    return common


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", help="only requests naming this topic")
    p.add_argument("--partition", type=int, help="only this partition of --topic")


def register(sub: Any) -> None:
    """Add `faults`, `clock`, `journal` and `connections` to the `kmock` subparsers."""
    common = _admin_options()

    faults = sub.add_parser("faults", help="inject Kafka errors, delays, disconnects")
    fsub = faults.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=Parser
    )
    fsub.add_parser("list", parents=[common], help="the faults waiting to fire").set_defaults(
        func=run, family="faults"
    )
    p = fsub.add_parser(
        "add",
        parents=[common],
        help="answer the next requests of an API with an error (where Kafka puts it), "
        "late, or not at all",
    )
    p.add_argument("api", help="API name or key: Produce, OffsetCommit, 0, ...")
    p.add_argument("error", nargs="?", help="Kafka error name or code: NOT_LEADER_OR_FOLLOWER, 6")
    p.add_argument("--count", type=int, default=1, help="how many requests (default 1)")
    _filters(p)
    p.add_argument("--group-id", help="only requests naming this group")
    p.add_argument("--client-id", help="only requests from this client id")
    p.add_argument("--delay-ms", type=int, help="answer this much later")
    p.add_argument(
        "--action",
        choices=("disconnect", "drop"),
        help="close the connection instead of answering, or never answer",
    )
    p.set_defaults(func=run, family="faults")
    p = fsub.add_parser(
        "storage", parents=[common], help="fail the next append or fsync (KAFKA_STORAGE_ERROR)"
    )
    p.add_argument("what", choices=("append", "fsync"))
    p.add_argument("--count", type=int, default=1, help="how many (default 1)")
    _filters(p)
    p.set_defaults(func=run, family="faults")
    fsub.add_parser("clear", parents=[common], help="remove every fault").set_defaults(
        func=run, family="faults"
    )

    clock = sub.add_parser("clock", help="the broker's clock (advance a virtual one)")
    csub = clock.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=Parser)
    csub.add_parser("show", parents=[common], help="mode and time").set_defaults(
        func=run, family="clock"
    )
    p = csub.add_parser(
        "advance", parents=[common], help="move a virtual clock on, firing every timer due"
    )
    p.add_argument("ms", type=int, help="milliseconds")
    p.set_defaults(func=run, family="clock")

    p = sub.add_parser(
        "journal",
        parents=[common],
        help="the requests the broker answered, decoded, one line each",
    )
    p.add_argument("--api", help="only this API (name or key)")
    p.add_argument("--group-id", help="only requests naming this group")
    p.add_argument("--client-id", help="only requests from this client id")
    p.add_argument("--topic", help="only requests naming this topic")
    p.add_argument("--since", type=int, default=0, metavar="SEQ", help="only entries after SEQ")
    p.add_argument("--follow", "-f", action="store_true", help="keep printing new entries")
    p.add_argument("--clear", action="store_true", help="empty the journal instead")
    p.set_defaults(func=run, family="journal", action="show")

    conns = sub.add_parser("connections", help="client connections: list, close")
    nsub = conns.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=Parser)
    nsub.add_parser("list", parents=[common], help="client id, address, API versions").set_defaults(
        func=run, family="connections"
    )
    p = nsub.add_parser(
        "close", parents=[common], help="close connections (all, or those matching)"
    )
    p.add_argument("--connection", type=int, help="a connection id (from `list`)")
    p.add_argument("--client-id", help="the connections of this client id")
    p.add_argument("--address", metavar="HOST:PORT", help="the connection from this address")
    p.set_defaults(func=run, family="connections")

    cluster = sub.add_parser("cluster", help="several brokers: leaders, coordinators, stop/start")
    ksub = cluster.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=Parser
    )
    ksub.add_parser(
        "show", parents=[common], help="brokers, and each partition's leader, epoch and ISR"
    ).set_defaults(func=run, family="cluster")
    p = ksub.add_parser("leader", parents=[common], help="move a partition's leader")
    p.add_argument("topic")
    p.add_argument("partition", type=int)
    p.add_argument("broker", type=int, help="a running in-sync replica")
    p.set_defaults(func=run, family="cluster")
    p = ksub.add_parser("coordinator", parents=[common], help="move a group's coordinator")
    p.add_argument("broker", type=int)
    key = p.add_mutually_exclusive_group(required=True)
    key.add_argument("--group-id")
    key.add_argument("--transactional-id")
    p.set_defaults(func=run, family="cluster")
    for action, text in (("stop", "stop a broker"), ("start", "start a stopped broker")):
        p = ksub.add_parser(action, parents=[common], help=text)
        p.add_argument("id", type=int, help="the broker id")
        p.set_defaults(func=run, family="cluster")


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code loads only now."""
    from cli.commands import controls

    return controls.run(args, out)
