"""What `kmock consume` does; its parser is `cli.consume`."""

from __future__ import annotations

import argparse
import base64
import time
from typing import Any

from cli.commands.admin import connect
from cli.output import EXIT_OK, Failed, Output, UsageError, as_text, cell
from client import EARLIEST, LATEST, KafkaClient
from protocol.errors import ErrorCode, KafkaError
from protocol.records import decode_records, iter_batches

__all__ = ["cmd_consume"]


def _start_offsets(
    client: KafkaClient, args: argparse.Namespace, partitions: list[int]
) -> dict[int, int]:
    keys = [(args.topic, p) for p in partitions]
    if args.offset is not None:
        if args.offset in ("earliest", "latest"):
            found = client.list_offsets(keys, EARLIEST if args.offset == "earliest" else LATEST)
            return {p: found[(args.topic, p)] for p in partitions}
        try:
            return dict.fromkeys(partitions, int(args.offset))
        except ValueError:
            raise UsageError(f"--offset {args.offset!r}: a number, earliest or latest") from None
    found = client.list_offsets(keys, EARLIEST if args.from_beginning else LATEST)
    return {p: found[(args.topic, p)] for p in partitions}


def cmd_consume(args: argparse.Namespace, out: Output) -> int:
    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition")
    if args.offset is not None and args.from_beginning:
        raise UsageError("--offset and --from-beginning exclude each other")
    consumed = 0
    with connect(args) as client:
        count = client.partition_count(args.topic)
        if args.partition is not None and not 0 <= args.partition < count:
            raise Failed(f"topic {args.topic!r} has no partition {args.partition} (it has {count})")
        partitions = [args.partition] if args.partition is not None else list(range(count))
        positions = _start_offsets(client, args, partitions)
        idle_deadline = (
            None if args.timeout_ms is None else time.monotonic() + args.timeout_ms / 1000
        )
        with out.progress(f"consuming {args.topic}", args.max_messages) as advance:
            while args.max_messages is None or consumed < args.max_messages:
                wait_ms = 500
                if idle_deadline is not None:
                    left_ms = int((idle_deadline - time.monotonic()) * 1000)
                    if left_ms <= 0:
                        break
                    wait_ms = min(wait_ms, left_ms)
                data = client.fetch(args.topic, positions, max_wait_ms=wait_ms)
                got = 0
                for partition, pd in sorted(data.items()):
                    if pd.error_code:
                        raise KafkaError(
                            ErrorCode(pd.error_code),
                            f"fetch {args.topic}-{partition} at {positions[partition]}",
                        )
                    view = memoryview(pd.records or b"")
                    # A batch may start before the fetch offset: skip what was already printed.
                    for pos, header in iter_batches(view):
                        if not header.is_control:
                            for record in decode_records(view[pos : pos + header.size]):
                                if record.offset >= positions[partition] and not (
                                    args.max_messages is not None and consumed >= args.max_messages
                                ):
                                    _print_record(out, args, partition, record)
                                    consumed += 1
                                    got += 1
                                    advance(1)
                        positions[partition] = max(positions[partition], header.next_offset)
                out.stdout.flush()
                if got and idle_deadline is not None:
                    idle_deadline = time.monotonic() + args.timeout_ms / 1000
    out.stderr.write(f"Processed a total of {consumed} messages\n")
    return EXIT_OK


def _print_record(out: Output, args: argparse.Namespace, partition: int, record: Any) -> None:
    if args.output == "json":
        # The shape `kmock produce --format jsonl` reads (protocol.record_file): text where
        # the bytes are UTF-8, base64 under *_b64 where they are not.
        line: dict[str, Any] = {
            "topic": args.topic,
            "partition": partition,
            "offset": record.offset,
            "timestamp": record.timestamp,
        }
        for name, data in (("key", record.key), ("value", record.value)):
            text = _utf8(data)
            if data is None or text is not None:
                line[name] = text
            else:
                line[f"{name}_b64"] = base64.b64encode(data).decode()
        texts = [_utf8(v) for _, v in record.headers]
        if all(t is not None or v is None for t, (_, v) in zip(texts, record.headers, strict=True)):
            line["headers"] = [[k, t] for (k, _), t in zip(record.headers, texts, strict=True)]
        else:
            line["headers_b64"] = [
                [k, None if v is None else base64.b64encode(v).decode()] for k, v in record.headers
            ]
        out.json(line, lines=True)
        return
    fields = []
    if args.print_timestamp:
        fields.append(f"CreateTime:{record.timestamp}")
    if args.print_partition:
        fields.append(f"Partition:{partition}")
    if args.print_offset:
        fields.append(f"Offset:{record.offset}")
    if args.print_headers:
        fields.append(",".join(f"{k}:{as_text(v)}" for k, v in record.headers) or "NO_HEADERS")
    if args.print_key:
        fields.append(cell(as_text(record.key)))
    fields.append(cell(as_text(record.value)))
    out.line(args.separator.join(fields))


def _utf8(data: bytes | None) -> str | None:
    """`data` as text, or None when it is None or not UTF-8."""
    if data is None:
        return None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return None
