"""A Confluent-compatible schema registry's state, as a pure state machine.

Owns subjects, versions, global schema ids, compatibility levels and modes, the
compatibility rules of AVRO, JSON and PROTOBUF schemas, and the `_schemas` record format.
Must not import trio, storage or broker, open files or sockets: the broker appends the
records a write returns, then applies them with `replay`, and replays them on start.
"""

from schemas.errors import RegistryError
from schemas.records import SchemaRecord, decode_record
from schemas.registry import COMPATIBILITY_LEVELS, MODES, SCHEMA_TYPES, Registry, Write

__all__ = [
    "COMPATIBILITY_LEVELS",
    "MODES",
    "SCHEMA_TYPES",
    "Registry",
    "RegistryError",
    "SchemaRecord",
    "Write",
    "decode_record",
]
