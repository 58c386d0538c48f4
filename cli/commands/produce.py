"""What `kmock produce` does; its parser is `cli.produce`."""

from __future__ import annotations

import argparse
import random
import time
from typing import Any

from cli.commands.admin import connect
from cli.output import EXIT_OK, Failed, Output, UsageError, isatty
from client import default_partition
from protocol.compression import CompressionType
from protocol.records import build_batch

__all__ = ["cmd_produce"]


def cmd_produce(args: argparse.Namespace, out: Output) -> int:
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    codec = CompressionType[args.compression.upper()]
    sep = args.key_separator
    with connect(args) as client:
        count = client.partition_count(args.topic, allow_auto_topic_creation=True)
        if args.partition is not None and not 0 <= args.partition < count:
            raise Failed(f"topic {args.topic!r} has no partition {args.partition} (it has {count})")
        pending: dict[int, list[Any]] = {}
        written: dict[int, list[int]] = {}  # partition -> [first offset, last offset]
        sticky = random.randrange(count)
        total = 0
        # Typed lines go out one by one, as they are entered; piped ones in batches.
        batch_size = 1 if isatty(out.stdin) else args.batch_size

        def flush(partition: int) -> None:
            records = pending.pop(partition, [])
            if not records:
                return
            batch = build_batch(records, compression=codec)
            base = client.produce(args.topic, partition, batch, acks=args.acks)
            span = written.setdefault(partition, [base, base])
            span[1] = base + len(records) - 1

        with out.progress(f"producing to {args.topic}", None, writes_stdout=False) as advance:
            for lineno, raw in enumerate(out.stdin, 1):
                line = raw.rstrip("\r\n")
                key: bytes | None = None
                if sep:
                    k, found, line = line.partition(sep)
                    if not found:
                        raise Failed(f"line {lineno} has no key separator {sep!r}")
                    key = k.encode()
                if args.partition is not None:
                    partition = args.partition
                elif key is not None:
                    partition = default_partition(key, count)
                else:
                    partition = sticky
                pending.setdefault(partition, []).append(
                    (key, line.encode(), (), int(time.time() * 1000))
                )
                total += 1
                if len(pending[partition]) >= batch_size:
                    flush(partition)
                    if partition == sticky:
                        sticky = (sticky + 1) % count
                advance(1)
            for partition in list(pending):
                flush(partition)
    if args.output == "json":
        out.json(
            {
                "topic": args.topic,
                "records": total,
                "partitions": {
                    str(p): {"first_offset": a, "last_offset": b}
                    for p, (a, b) in sorted(written.items())
                },
            }
        )
    else:
        spans = ", ".join(f"{p}: {a}-{b}" for p, (a, b) in sorted(written.items()))
        out.line(f"Produced {total} record(s) to {args.topic}" + (f" ({spans})" if spans else "."))
    return EXIT_OK
