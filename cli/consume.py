"""`kmock consume TOPIC [--from-beginning] [--max-messages N] [--timeout-ms MS]`."""

from __future__ import annotations

import argparse
from typing import Any

from cli.options import client_options
from cli.output import Output

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add `consume` to the `kmock` subparsers."""
    common = client_options()
    p = sub.add_parser("consume", parents=[common], help="print a topic's records")
    p.add_argument("topic")
    p.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at the earliest offset (default: the latest)",
    )
    p.add_argument("--partition", type=int, metavar="P", help="only this partition")
    p.add_argument(
        "--offset", metavar="O", help="start offset in --partition: a number, earliest or latest"
    )
    p.add_argument("--max-messages", type=int, metavar="N", help="stop after N records")
    p.add_argument(
        "--timeout-ms",
        type=int,
        metavar="MS",
        help="stop when no record arrives for this long (default: never)",
    )
    for field in ("key", "partition", "offset", "timestamp", "headers"):
        p.add_argument(f"--print-{field}", action="store_true", help=f"print each record's {field}")
    p.add_argument("--separator", default="\t", help="between the printed fields (default: tab)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code (and the client it uses) loads only now."""
    from cli.commands import consume

    return consume.cmd_consume(args, out)
