"""`kmock produce TOPIC < lines`: stdin's lines as records, batched per partition."""

from __future__ import annotations

import argparse
from typing import Any

from cli.options import client_options
from cli.output import Output
from protocol.compression import CompressionType

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add `produce` to the `kmock` subparsers."""
    common = client_options()
    p = sub.add_parser("produce", parents=[common], help="produce stdin's lines as records")
    p.add_argument("topic")
    p.add_argument(
        "--key-separator", metavar="SEP", help="split each line at the first SEP into key and value"
    )
    p.add_argument(
        "--partition",
        type=int,
        metavar="P",
        help="default: by key hash as Kafka's partitioner, else one per batch",
    )
    p.add_argument(
        "--compression", default="none", choices=[c.name.lower() for c in CompressionType]
    )
    p.add_argument(
        "--batch-size", type=int, default=500, metavar="N", help="records per batch (default 500)"
    )
    p.add_argument("--acks", type=int, default=-1, choices=(-1, 1), help="-1 (all, default) or 1")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code (and the client it uses) loads only now."""
    from cli.commands import produce

    return produce.cmd_produce(args, out)
