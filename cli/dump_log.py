"""`kmock dump-log PATH`: decode log segments offline, without a broker.

Like Kafka's kafka-dump-log: batches and records of a segment file, or of every segment in a
partition directory; records of `__consumer_offsets` are decoded field by field, those of the
schema registry's `_schemas` shown as their JSON keys and values.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.output import Output

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add `dump-log` to the `kmock` subparsers."""
    p = sub.add_parser(
        "dump-log",
        help="decode log segments offline",
        description="Decode the batches and records of a segment file (<base offset>.log) "
        "or of every segment in a partition directory, without a broker. Records "
        "of __consumer_offsets and __transaction_state are decoded field by field, "
        "transaction markers (control batches) are shown as COMMIT or ABORT, and the records "
        "of _schemas (the schema registry's) as their JSON keys and values.",
    )
    p.add_argument("path", type=Path)
    p.add_argument("--batches-only", action="store_true", help="do not print records")
    p.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="decode records as __consumer_offsets records (automatic for a "
        "__consumer_offsets-N directory)",
    )
    p.add_argument(
        "--transaction-log-decoder",
        action="store_true",
        help="decode records as __transaction_state records (automatic for a "
        "__transaction_state-N directory)",
    )
    p.add_argument("--output", choices=("text", "json"), default="text")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the command; its code (and the client it uses) loads only now."""
    from cli.commands import dump_log

    return dump_log.cmd_dump_log(args, out)
