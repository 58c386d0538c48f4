"""What `kmock produce` does; its parser is `cli.produce`, the formats `protocol.record_file`."""

from __future__ import annotations

import argparse
import contextlib
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from cli.commands.admin import connect
from cli.output import EXIT_OK, Failed, Output, UsageError, isatty, parse_assignments
from client import KafkaClient, default_partition
from protocol.compression import CompressionType
from protocol.record_file import (
    DEFAULT_KEY_SEPARATOR,
    FileRecord,
    RecordFileError,
    read_records,
)
from protocol.records import build_batch

__all__ = ["cmd_produce"]

# A batch is sent once its records pass this many bytes, so that it stays well under the
# broker's default max.message.bytes (1048588).
_BATCH_BYTES = 512 * 1024
# kafka-console-producer properties this command understands (--property).
_PROPERTIES = ("parse.key", "key.separator")


def _format(args: argparse.Namespace) -> tuple[str, str]:
    """(format, key separator) from --format, --key-separator, --property and the file name."""
    props = parse_assignments(args.property, "--property")
    for name in props:
        if name not in _PROPERTIES:
            raise UsageError(
                f"--property {name}: not supported (supported: {', '.join(_PROPERTIES)})"
            )
    sep = args.key_separator or props.get("key.separator") or DEFAULT_KEY_SEPARATOR
    parse_key = props.get("parse.key", "false").lower()
    if parse_key not in ("true", "false"):
        raise UsageError(f"--property parse.key={props['parse.key']}: true or false")
    fmt = args.format
    if fmt is None:
        if args.key_separator is not None or parse_key == "true":
            fmt = "keyed"
        elif args.file is not None and args.file.suffix in (".jsonl", ".ndjson"):
            fmt = "jsonl"
        else:
            fmt = "lines"
    elif fmt != "keyed" and (args.key_separator is not None or parse_key == "true"):
        flag = "--key-separator" if args.key_separator is not None else "parse.key=true"
        raise UsageError(f"{flag} needs --format keyed, not {fmt}")
    return fmt, sep


@contextlib.contextmanager
def _open(path: Path) -> Iterator[IO[bytes]]:
    try:
        f = path.open("rb")
    except OSError as e:
        raise UsageError(f"--file {path}: cannot read it ({e.strerror})") from None
    with f:
        yield f


class _Producer:
    """Places records in partitions as Kafka's producer does, batches them per partition,
    and remembers the offsets written."""

    def __init__(
        self, client: KafkaClient, args: argparse.Namespace, source: str, batch_size: int
    ) -> None:
        self.client = client
        self.default_topic: str | None = args.topic
        self.partition: int | None = args.partition
        self.codec = CompressionType[args.compression.upper()]
        self.acks: int = args.acks
        self.source = source
        self.batch_size = batch_size
        self.counts: dict[str, int] = {}
        self.sticky: dict[str, int] = {}
        self.pending: dict[tuple[str, int], list[Any]] = {}
        self.pending_bytes: dict[tuple[str, int], int] = {}
        self.written: dict[str, dict[int, list[int]]] = {}  # topic -> partition -> [first, last]
        self.total = 0

    def topic_of(self, record: FileRecord) -> str:
        topic = record.topic or self.default_topic
        if topic is None:
            raise UsageError(f"{self.source} line {record.line}: no 'topic', and no TOPIC given")
        return topic

    def partition_count(self, topic: str) -> int:
        if topic not in self.counts:
            # Auto-created here if the broker allows it, as a producer's Metadata request does.
            count = self.client.partition_count(topic, allow_auto_topic_creation=True)
            if self.partition is not None and not 0 <= self.partition < count:
                raise Failed(
                    f"--partition {self.partition}: topic {topic!r} has no partition "
                    f"{self.partition} (it has {count})"
                )
            self.counts[topic] = count
            self.sticky[topic] = random.randrange(count)
        return self.counts[topic]

    def check(self, record: FileRecord) -> str:
        """The record's topic; raises if it names a partition its topic does not have."""
        topic = self.topic_of(record)
        count = self.partition_count(topic)
        if record.partition is not None and record.partition >= count:
            raise Failed(
                f"{self.source} line {record.line}: topic {topic!r} has no partition "
                f"{record.partition} (it has {count})"
            )
        return topic

    def send(self, record: FileRecord) -> None:
        topic = self.check(record)
        if record.partition is not None:
            partition = record.partition
        elif self.partition is not None:
            partition = self.partition
        elif record.key is not None:
            partition = default_partition(record.key, self.counts[topic])
        else:
            partition = self.sticky[topic]
        timestamp = record.timestamp_ms
        if timestamp is None:
            timestamp = int(time.time() * 1000)
        key = (topic, partition)
        self.pending.setdefault(key, []).append(
            (record.key, record.value, record.headers, timestamp)
        )
        size = len(record.key or b"") + len(record.value or b"")
        size += sum(len(k) + len(v or b"") for k, v in record.headers)
        self.pending_bytes[key] = self.pending_bytes.get(key, 0) + size
        self.total += 1
        if len(self.pending[key]) >= self.batch_size or self.pending_bytes[key] >= _BATCH_BYTES:
            self.flush(key)
            if record.partition is None and partition == self.sticky[topic]:
                self.sticky[topic] = (partition + 1) % self.counts[topic]

    def flush(self, key: tuple[str, int]) -> None:
        records = self.pending.pop(key, [])
        self.pending_bytes.pop(key, None)
        if not records:
            return
        topic, partition = key
        base = self.client.produce(
            topic, partition, build_batch(records, compression=self.codec), acks=self.acks
        )
        span = self.written.setdefault(topic, {}).setdefault(partition, [base, base])
        span[1] = base + len(records) - 1

    def flush_all(self) -> None:
        for key in list(self.pending):
            self.flush(key)


def cmd_produce(args: argparse.Namespace, out: Output) -> int:
    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    fmt, sep = _format(args)
    if args.topic is None and fmt != "jsonl":
        raise UsageError("name the TOPIC (only jsonl records can name their own)")
    source = str(args.file) if args.file is not None else "stdin"
    try:
        if args.file is not None:
            # First pass, before connecting: every line must be a record.
            with _open(args.file) as f:
                records = read_records(f, fmt, source, key_separator=sep)
                checked = list(_first_of_each_partition(records))
        with connect(args) as client:
            # Typed lines go out one by one, as they are entered; the rest in batches.
            interactive = args.file is None and isatty(out.stdin)
            producer = _Producer(client, args, source, 1 if interactive else args.batch_size)
            with out.progress(f"producing from {source}", None, writes_stdout=False) as advance:
                if args.file is not None:
                    for record in checked:  # every partition named, before the first write
                        producer.check(record)
                    with _open(args.file) as f:
                        for record in read_records(f, fmt, source, key_separator=sep):
                            producer.send(record)
                            advance(1)
                else:
                    for record in read_records(out.stdin, fmt, source, key_separator=sep):
                        producer.send(record)
                        advance(1)
                producer.flush_all()
    except RecordFileError as e:
        raise UsageError(str(e)) from None
    _report(out, args, producer)
    return EXIT_OK


def _first_of_each_partition(records: Iterator[FileRecord]) -> Iterator[FileRecord]:
    """Reads every record; yields the first that names each (topic, partition), and the
    first of each topic, which are all the second pass needs to look up."""
    seen: set[tuple[str | None, int | None]] = set()
    for record in records:
        for key in ((record.topic, None), (record.topic, record.partition)):
            if key not in seen:
                seen.add(key)
                yield record


def _report(out: Output, args: argparse.Namespace, producer: _Producer) -> None:
    written = {
        t: {p: producer.written[t][p] for p in sorted(producer.written[t])}
        for t in sorted(producer.written)
    }
    if args.output == "json":
        out.json(
            {
                "records": producer.total,
                "topics": {
                    t: {str(p): {"first_offset": a, "last_offset": b} for p, (a, b) in ps.items()}
                    for t, ps in written.items()
                },
            }
        )
        return
    parts = [
        f"{t} ({', '.join(f'{p}: {a}-{b}' for p, (a, b) in ps.items())})"
        for t, ps in written.items()
    ]
    if not parts:
        target = f" to {args.topic}." if args.topic else "."
        out.line(f"Produced 0 record(s){target}")
    elif len(parts) == 1 and list(written) == [args.topic]:
        out.line(f"Produced {producer.total} record(s) to {parts[0]}")
    else:
        out.line(f"Produced {producer.total} record(s): {', '.join(parts)}")
