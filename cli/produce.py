"""`kmock produce [TOPIC] [--file PATH] [--format jsonl|lines|keyed]`: records from stdin or a
file, batched per partition. The formats are `protocol.record_file`'s."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.options import client_options
from cli.output import Output
from protocol.compression import CompressionType

__all__ = ["register", "run"]

_FORMAT_HELP = """\
formats (one record per line):
  lines   the line is the value
  keyed   KEY<separator>VALUE (--key-separator, default a tab; kafka-console-producer's
          --property parse.key=true --property key.separator=SEP work too)
  jsonl   one JSON object per line: {"topic": "t", "partition": 0, "timestamp": 1700000000000,
          "key": "k", "value": "text", "headers": {"h": "v"}}; every field is optional.
          Text is stored as UTF-8; bytes go in key_b64 / value_b64 / headers_b64 (base64).
          A value that is an object, array or number is stored as its JSON text; null is a
          tombstone. "timestamp" may be ISO 8601 (UTC unless it has an offset). "offset" is
          ignored, so `kmock consume --output json` output can be produced again.

--file is read twice: every line is checked (and every partition looked up) before the
first record is written, so a bad line changes nothing. stdin is produced as it is read:
records before a bad line are written. Without --format, a --file named *.jsonl or *.ndjson
is jsonl, --key-separator means keyed, and anything else is lines.
"""


def register(sub: Any) -> None:
    """Add `produce` to the `kmock` subparsers."""
    common = client_options()
    p = sub.add_parser(
        "produce",
        parents=[common],
        help="produce records from stdin or a file",
        description="Produce records read from stdin, or from --file. " + _FORMAT_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "topic", nargs="?", help="the topic (optional for jsonl records that name their own)"
    )
    p.add_argument("--file", type=Path, metavar="PATH", help="read the records from this file")
    p.add_argument("--format", choices=("jsonl", "lines", "keyed"), help="see below")
    p.add_argument(
        "--key-separator", metavar="SEP", help="split each line at the first SEP into key and value"
    )
    p.add_argument(
        "--property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="kafka-console-producer's parse.key and key.separator",
    )
    p.add_argument(
        "--partition",
        type=int,
        metavar="P",
        help="for records that name none (default: by key hash as Kafka's partitioner, "
        "else one partition per batch)",
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
