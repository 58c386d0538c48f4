"""What `kmock dump-log` does; its parser is `cli.dump_log`.

Records are decoded by what the partition holds: __consumer_offsets records (group
metadata, offsets), __transaction_state records (TransactionLogKey/Value, with the state's
name), or shown as text. A control batch's record is a transaction marker: its type
(COMMIT/ABORT) and coordinator epoch, as Kafka's DumpLogSegments prints "endTxnMarker".
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import mmap
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from cli.output import EXIT_ERROR, EXIT_OK, Failed, Output, as_text, cell
from coordinator.transactions.state import TransactionState
from protocol import transaction_log
from protocol.compression import CompressionType
from protocol.consumer_offsets import MemberMetadata, UnknownRecordKey, decode_record
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.control_records import decode_control_key, decode_end_txn_marker_value
from protocol.errors import KafkaError
from protocol.primitives import DecodeError
from protocol.records import (
    BATCH_HEADER_SIZE,
    ControlRecordType,
    decode_records,
    iter_batches,
    validate_batch,
)
from storage.layout import (
    LOG_SUFFIX,
    SCHEMAS_TOPIC,
    TRANSACTION_STATE_TOPIC,
    is_offsets_partition_dir,
    parse_partition_dir,
)

OFFSETS, TRANSACTIONS, SCHEMAS = "offsets", "transactions", "schemas"  # record decoders

__all__ = ["cmd_dump_log"]


def _segments(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("*" + LOG_SUFFIX))
    if path.is_file():
        if path.suffix != LOG_SUFFIX:
            raise Failed(f"{path} is not a segment (<base offset>.log)")
        return [path]
    raise Failed(f"{path}: no such file or directory")


def _batch_fields(header: Any, pos: int, crc_ok: bool) -> dict[str, Any]:
    return {
        "base_offset": header.base_offset,
        "last_offset": header.last_offset,
        "count": header.records_count,
        "position": pos,
        "size": header.size,
        "partition_leader_epoch": header.partition_leader_epoch,
        "producer_id": header.producer_id,
        "producer_epoch": header.producer_epoch,
        "base_sequence": header.base_sequence,
        "last_sequence": header.last_sequence,
        "is_transactional": header.is_transactional,
        "is_control": header.is_control,
        "timestamp_type": "LogAppendTime" if header.timestamp_type else "CreateTime",
        "max_timestamp": header.max_timestamp,
        "compression": CompressionType(header.compression).name.lower()
        if header.compression <= CompressionType.ZSTD
        else str(header.compression),
        "crc": header.crc,
        "crc_valid": crc_ok,
    }


def _struct_fields(obj: Any) -> dict[str, Any]:
    """A coordinator record's fields, with consumer-protocol bytes decoded, and the nested
    structs of consumer group records (topics, assignments) as plain fields."""
    out: dict[str, Any] = {"type": type(obj).__name__}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, list) and value and isinstance(value[0], MemberMetadata):
            value = [_member_fields(m, getattr(obj, "protocol_type", None)) for m in value]
        else:
            value = _plain(value)
        out[f.name] = value
    if isinstance(obj, transaction_log.TransactionLogValue):
        with contextlib.suppress(ValueError):
            out["state"] = str(TransactionState.from_id(obj.transaction_status))
    return out


def _plain(value: Any) -> Any:
    """Nested structs as dicts of their fields, topic ids as their UUID text."""
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


def _member_fields(m: Any, protocol_type: str | None) -> dict[str, Any]:
    fields = {f.name: getattr(m, f.name) for f in dataclasses.fields(m)}
    if protocol_type == "consumer":
        with contextlib.suppress(DecodeError):
            sub = decode_subscription(m.subscription)
            fields["subscription"] = {"topics": list(sub.topics)}
        with contextlib.suppress(DecodeError):
            a = decode_assignment(m.assignment)
            fields["assignment"] = {tp.topic: list(tp.partitions) for tp in a.assigned_partitions}
    return fields


def _marker_fields(record: Any) -> dict[str, Any]:
    """A control record: the transaction marker it holds, or why it cannot be read."""
    try:
        control_type = decode_control_key(record.key)
        kind = (
            ControlRecordType(control_type).name
            if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT)
            else f"type {control_type}"
        )
        return {"type": kind, "coordinator_epoch": decode_end_txn_marker_value(record.value)}
    except KafkaError as e:
        return {"type": "unreadable", "error": str(e)}


def _record_fields(record: Any, decoder: str | None, is_control: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key_size": -1 if record.key is None else len(record.key),
        "value_size": -1 if record.value is None else len(record.value),
        "headers": [[k, as_text(v)] for k, v in record.headers],
    }
    if is_control:
        fields["end_txn_marker"] = _marker_fields(record)
        return fields
    if decoder == SCHEMAS:
        try:
            fields["key"] = None if record.key is None else json.loads(record.key)
            fields["value"] = None if record.value is None else json.loads(record.value)
            return fields
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            fields["decode_error"] = f"not a {SCHEMAS_TOPIC} record: {e}"
    elif decoder is not None and record.key is not None:
        decode = decode_record if decoder == OFFSETS else transaction_log.decode_record
        try:
            key, value = decode(record.key, record.value)
        except (DecodeError, ValueError) as e:
            fields["decode_error"] = str(e)
        else:
            fields["key"] = (
                {"type": "UnknownRecordKey", "version": key.version}
                if isinstance(key, UnknownRecordKey)
                else _struct_fields(key)
            )
            fields["value"] = None if value is None else _struct_fields(value)
            return fields
    fields["key"] = as_text(record.key)
    fields["value"] = as_text(record.value)
    return fields


def _format_fields(fields: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={_format_value(v)}" for k, v in fields.items() if k != "type")


def _format_value(v: Any) -> str:
    if isinstance(v, bytes | bytearray | memoryview):
        return f"<{len(v)} bytes>"
    if isinstance(v, dict):
        return "{" + _format_fields(v) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_format_value(x) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v)
    return cell(v)


def _print_record_text(out: Output, r: dict[str, Any]) -> None:
    head = (
        f"| offset: {r['offset']} timestamp: {r['timestamp']} keySize: {r['key_size']} "
        f"valueSize: {r['value_size']}"
    )
    if r["headers"]:
        head += " headers: " + ",".join(f"{k}={v}" for k, v in r["headers"])
    if "decode_error" in r:
        out.line(f"{head} decode error: {r['decode_error']}")
        return
    if "end_txn_marker" in r:
        marker = r["end_txn_marker"]
        out.line(f"{head} endTxnMarker: {marker['type']} {_format_fields(marker)}")
        return
    key, value = r["key"], r["value"]
    if isinstance(key, dict) and "keytype" in key:  # _schemas: Confluent's JSON, as is
        payload = "<tombstone>" if value is None else json.dumps(value, separators=(",", ":"))
        out.line(f"{head} key: {json.dumps(key, separators=(',', ':'))} payload: {payload}")
        return
    if isinstance(key, dict):
        out.line(f"{head} key: {key['type']} {_format_fields(key)}")
        if value is None:
            out.line("|   payload: <tombstone>")
            return
        members = value.get("members")
        rest = {k: v for k, v in value.items() if k != "members"}
        out.line(f"|   payload: {value['type']} {_format_fields(rest)}")
        for m in members or ():
            out.line(f"|     member: {_format_fields(m)}")
    else:
        out.line(f"{head} key: {cell(key)} payload: {cell(value)}")


def cmd_dump_log(args: argparse.Namespace, out: Output) -> int:
    files = _segments(args.path)
    directory = args.path if args.path.is_dir() else args.path.parent
    parsed = parse_partition_dir(directory.name)
    decoder = None
    if args.offsets_decoder or is_offsets_partition_dir(directory.name):
        decoder = OFFSETS
    elif getattr(args, "transaction_log_decoder", False) or (
        parsed is not None and parsed[0] == TRANSACTION_STATE_TOPIC
    ):
        decoder = TRANSACTIONS
    elif parsed is not None and parsed[0] == SCHEMAS_TOPIC:
        decoder = SCHEMAS
    as_json = args.output == "json"
    documents = []
    with out.progress("decoding", sum(f.stat().st_size for f in files)) as advance:
        for path in files:
            if not as_json:
                out.line(f"Dumping {path}")
            doc = _dump_segment(out, path, args, decoder, advance)
            documents.append(doc)
            if not as_json:
                out.stdout.flush()
    if as_json:
        for doc in documents:
            del doc["summary"]
        out.json({"files": documents})
    else:
        out.table(
            ["SEGMENT", "BATCHES", "RECORDS", "BAD-CRC", "TRAILING-BYTES"],
            [doc["summary"] for doc in documents],
            title="Summary",
        )
    return EXIT_ERROR if any(doc["error"] for doc in documents) else EXIT_OK


def _dump_segment(
    out: Output,
    path: Path,
    args: argparse.Namespace,
    decoder: str | None,
    advance: Callable[[float], None],
) -> dict[str, Any]:
    """Decode one segment; prints it as text, or returns it as a JSON document."""
    as_json = args.output == "json"
    doc: dict[str, Any] = {"path": str(path), "batches": [], "trailing_bytes": None, "error": None}
    batches = records = invalid = 0
    data = _mapped(path)
    end = 0
    try:
        for pos, header in iter_batches(data):
            try:
                validate_batch(data, pos, check_crc=True)
                crc_ok = True
            except KafkaError:
                crc_ok = False
                invalid += 1
            batch = _batch_fields(header, pos, crc_ok)
            if not args.batches_only:
                try:
                    batch["records"] = [
                        _record_fields(r, decoder, header.is_control)
                        for r in decode_records(data[pos : pos + header.size])
                    ]
                    records += len(batch["records"])
                except KafkaError as e:
                    batch["records_error"] = str(e)
            end = pos + header.size
            batches += 1
            advance(header.size)
            if as_json:
                doc["batches"].append(batch)
            else:
                _print_batch_text(out, batch)
    except KafkaError as e:
        doc["error"] = f"unreadable batch at position {end}: {e}"
    else:
        doc["trailing_bytes"] = len(data) - end
    advance(len(data) - end)
    if not as_json:
        if doc["error"]:
            out.line(f"error: {doc['error']}")
        elif doc["trailing_bytes"]:
            kind = (
                "a cut-off batch"
                if doc["trailing_bytes"] >= BATCH_HEADER_SIZE
                else "too short for a batch header"
            )
            out.line(
                f"{doc['trailing_bytes']} trailing byte(s) after the last whole batch "
                f"({kind}; recovery truncates them)"
            )
    doc["summary"] = [path.name, batches, records, invalid, doc["trailing_bytes"]]
    return doc


def _print_batch_text(out: Output, b: dict[str, Any]) -> None:
    out.line(
        f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['count']} "
        f"baseSequence: {b['base_sequence']} lastSequence: {b['last_sequence']} "
        f"producerId: {b['producer_id']} producerEpoch: {b['producer_epoch']} "
        f"partitionLeaderEpoch: {b['partition_leader_epoch']} "
        f"isTransactional: {cell(b['is_transactional'])} isControl: {cell(b['is_control'])} "
        f"position: {b['position']} {b['timestamp_type']}: {b['max_timestamp']} "
        f"size: {b['size']} compresscodec: {b['compression']} crc: {b['crc']} "
        f"isvalid: {cell(b['crc_valid'])}"
    )
    if "records_error" in b:
        out.line(f"| records not decodable: {b['records_error']}")
    for r in b.get("records", ()):
        _print_record_text(out, r)


def _mapped(path: Path) -> Any:
    """The file's bytes, memory-mapped read-only (segments can be a GiB).

    The map is closed when the last view of it goes away, not explicitly: an explicit close
    fails while any slice is still referenced (from a traceback, say).
    """
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
