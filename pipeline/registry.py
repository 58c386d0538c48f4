"""The schema registry's schemas, read back from the `_schemas` topic's records.

    latest_schemas(records)     the latest live version of each subject, replayed from
                                `_schemas` (key, value) pairs in log order
    export_schemas(spark, dirs, out)   writes them to `out`/_schemas.json

The records are Confluent's JSON (schemas.records): a SCHEMA record sets a version, its
tombstone deletes the version for good, `"deleted": true` in its value and a DELETE_SUBJECT
record (up to its version) delete softly. A soft-deleted version is not the subject's
latest, as Confluent's GET /subjects/{s}/versions/latest does not return it. Replay follows
schemas.registry.Registry.replay (and Confluent's KafkaStoreReaderThread): records of key
types it does not know are skipped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from typing import Any

from schemas.records import decode_record
from storage.layout import SCHEMAS_TOPIC

__all__ = ["SCHEMAS_FILE", "export_schemas", "latest_schemas"]

# Spark, pyarrow and DuckDB skip files whose names start with "_" when they read a Parquet
# directory, so the file can sit beside an export's topic=... directories.
SCHEMAS_FILE = "_schemas.json"


def latest_schemas(records: Iterable[tuple[bytes | None, bytes | None]]) -> list[dict[str, Any]]:
    """Per subject (sorted), its latest live version: subject, version, id, schemaType, schema.

    `records` are `_schemas` (key, value) pairs in log order. schemaType is AVRO when the
    value leaves it out, as Confluent's does for AVRO.

    Raises:
      ValueError: a record is not `_schemas` JSON of the expected shape.
    """
    subjects: dict[str, dict[int, dict[str, Any]]] = {}
    for key, value in records:
        record = decode_record(key, value)
        if record is None or record.subject is None:
            continue
        v = record.value
        if record.keytype == "SCHEMA":
            assert record.version is not None
            versions = subjects.setdefault(record.subject, {})
            if v is None:
                versions.pop(record.version, None)
            else:
                versions[record.version] = dict(v)
        elif record.keytype == "DELETE_SUBJECT" and v is not None:
            up_to = int(v.get("version", 2**31 - 1))
            for n, sv in subjects.get(record.subject, {}).items():
                if n <= up_to:
                    sv["deleted"] = True
    latest = []
    for subject in sorted(subjects):
        live = [n for n, sv in subjects[subject].items() if not sv.get("deleted", False)]
        if not live:
            continue
        sv = subjects[subject][max(live)]
        latest.append(
            {
                "subject": subject,
                "version": max(live),
                "id": int(sv["id"]),
                "schemaType": sv.get("schemaType") or "AVRO",
                "schema": sv["schema"],
            }
        )
    return latest


def _bytes(data: Any) -> bytes | None:
    return None if data is None else bytes(data)


def export_schemas(spark: Any, dirs: Any, out: str | os.PathLike[str]) -> str:
    """Write `latest_schemas` of the `_schemas` topic under `dirs` to `out`/_schemas.json.

    The file is a JSON list (empty when there is no `_schemas` topic). `_schemas` has one
    partition; its records are collected to the driver, as the registry itself replays them
    in one process. Returns the file's path.

    Raises:
      ValueError: a record is not `_schemas` JSON of the expected shape (the message names
        its offset).
    """
    from pipeline.jobs import read

    rows = read(spark, dirs, topics=[SCHEMAS_TOPIC]).where("not is_control")
    rows = rows.select("partition", "offset", "key", "value").orderBy("partition", "offset")
    pairs = []
    for r in rows.toLocalIterator():
        pair = (_bytes(r["key"]), _bytes(r["value"]))
        try:
            latest_schemas([pair])
        except ValueError as e:
            raise ValueError(
                f"{SCHEMAS_TOPIC}-{r['partition']} offset {r['offset']} is not a schema"
                f" registry record: {e}"
            ) from e
        pairs.append(pair)
    latest = latest_schemas(pairs)
    path = os.path.join(os.fspath(out), SCHEMAS_FILE)
    os.makedirs(os.fspath(out), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(latest, f, indent=2)
        f.write("\n")
    return path
