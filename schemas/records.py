"""The `_schemas` topic's records, in Confluent's key/value JSON format.

Keys (JSON objects, `keytype` first, as Confluent's SchemaRegistryKey serializes them):

    {"keytype":"SCHEMA","subject":"s","version":1,"magic":1}
        -> {"subject":"s","version":1,"id":1,"schemaType":"JSON","references":[...],
            "schema":"...","deleted":false}        (schemaType left out for AVRO)
        -> null: the version was deleted permanently
    {"keytype":"CONFIG","subject":"s"|null,"magic":0} -> {"compatibilityLevel":"FULL"} | null
    {"keytype":"MODE","subject":"s"|null,"magic":0}   -> {"mode":"READONLY"} | null
    {"keytype":"DELETE_SUBJECT","subject":"s","magic":0} -> {"subject":"s","version":3}
    {"keytype":"NOOP","magic":0} -> null

A null subject is the global setting. Records other than these (another registry's newer
key types) are skipped on replay, as Confluent's KafkaStoreReaderThread skips keys it
cannot read.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = ["SchemaRecord", "decode_record"]

KEY_TYPES = ("SCHEMA", "CONFIG", "MODE", "DELETE_SUBJECT", "NOOP")


@dataclass(frozen=True, slots=True)
class SchemaRecord:
    keytype: str
    subject: str | None
    version: int | None = None  # SCHEMA keys only
    value: dict[str, Any] | None = None  # None: a tombstone

    def key_bytes(self) -> bytes:
        key: dict[str, Any] = {"keytype": self.keytype}
        if self.keytype != "NOOP":
            key["subject"] = self.subject
        if self.keytype == "SCHEMA":
            key["version"] = self.version
        key["magic"] = 1 if self.keytype == "SCHEMA" else 0
        return json.dumps(key, separators=(",", ":")).encode()

    def value_bytes(self) -> bytes | None:
        if self.value is None:
            return None
        return json.dumps(self.value, separators=(",", ":")).encode()


def decode_record(key: bytes | None, value: bytes | None) -> SchemaRecord | None:
    """The record a `_schemas` key/value pair holds, or None for one we do not know.

    Raises:
      ValueError: the key or value is not JSON of the expected shape.
    """
    if key is None:
        return None
    k = json.loads(key)
    if not isinstance(k, dict) or k.get("keytype") not in KEY_TYPES:
        return None
    v = None if value is None else json.loads(value)
    if v is not None and not isinstance(v, dict):
        raise ValueError(f"a {k['keytype']} value must be a JSON object, not {value!r}")
    subject = k.get("subject")
    if subject is not None and not isinstance(subject, str):
        raise ValueError(f"subject must be a string: {key!r}")
    version = k.get("version")
    if k["keytype"] == "SCHEMA" and (not isinstance(version, int) or subject is None):
        raise ValueError(f"a SCHEMA key needs a subject and an integer version: {key!r}")
    return SchemaRecord(k["keytype"], subject, version, v)
