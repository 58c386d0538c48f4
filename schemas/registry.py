"""The registry's state and every request's rules, sans I/O (Confluent's KafkaSchemaRegistry).

Theory of operation: reads answer from memory. A write (`register`, `delete_*`,
`set_config`, `set_mode`, ...) checks its request against the state and returns a `Write`:
the body to answer with and the `_schemas` records that carry its effect. The broker
appends the records (and, in kmock.durability=strict, waits for their fsync), then calls
`apply(write)`, which replays them, and only then answers: the state is always what replaying
the log gives, and a registration is answered only once it is in the log. Writes are checked
and applied one at a time (the broker holds a lock across the append).

Ids, as Confluent assigns them: a schema (type, text up to whitespace, references) that
exists under any subject keeps its id; a new one gets the largest id ever seen + 1. A new
version is the subject's largest version, soft-deleted ones included, + 1.

Compatibility: BACKWARD checks that the new schema reads data written with the latest
version, FORWARD that the latest reads data written with the new one, FULL both; the
_TRANSITIVE levels check against every live version, newest first; NONE checks nothing.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from schemas import avro, json_schema, protobuf
from schemas.errors import RegistryError
from schemas.records import SchemaRecord

__all__ = ["COMPATIBILITY_LEVELS", "MODES", "SCHEMA_TYPES", "Registry", "SchemaVersion", "Write"]

SCHEMA_TYPES = ("JSON", "PROTOBUF", "AVRO")  # the order Confluent lists them in
COMPATIBILITY_LEVELS = (
    "NONE",
    "BACKWARD",
    "BACKWARD_TRANSITIVE",
    "FORWARD",
    "FORWARD_TRANSITIVE",
    "FULL",
    "FULL_TRANSITIVE",
)
MODES = ("READWRITE", "READONLY", "IMPORT")
DEFAULT_COMPATIBILITY = "BACKWARD"  # Confluent's schema.compatibility.level
DEFAULT_MODE = "READWRITE"
MAX_VERSION = 2**31 - 1
_PARSERS: dict[str, Any] = {
    "AVRO": (avro.parse, avro.canonical, avro.check),
    "JSON": (json_schema.parse, json_schema.canonical, json_schema.check),
    "PROTOBUF": (protobuf.parse, protobuf.canonical, protobuf.check),
}


@dataclass(frozen=True, slots=True)
class SchemaVersion:
    subject: str
    version: int
    id: int
    schema_type: str
    schema: str
    references: tuple[tuple[str, str, int], ...]  # (name, subject, version)
    deleted: bool = False

    def body(self) -> dict[str, Any]:
        """GET /subjects/{subject}/versions/{version}'s answer."""
        out: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = _references_json(self.references)
        out["schema"] = self.schema
        return out

    def record(self, *, deleted: bool | None = None) -> SchemaRecord:
        value = self.body()
        value["references"] = _references_json(self.references)
        value["deleted"] = self.deleted if deleted is None else deleted
        return SchemaRecord("SCHEMA", self.subject, self.version, value)


@dataclass(frozen=True, slots=True)
class Write:
    body: Any
    records: tuple[SchemaRecord, ...] = ()


@dataclass(frozen=True, slots=True)
class _Parsed:
    schema_type: str
    text: str  # as stored and answered
    identity: str
    references: tuple[tuple[str, str, int], ...]
    obj: Any


def _references_json(refs: tuple[tuple[str, str, int], ...]) -> list[dict[str, Any]]:
    return [{"name": n, "subject": s, "version": v} for n, s, v in refs]


@dataclass
class Registry:
    subjects: dict[str, dict[int, SchemaVersion]] = field(default_factory=dict)
    configs: dict[str | None, str] = field(default_factory=dict)  # None: the global level
    modes: dict[str | None, str] = field(default_factory=dict)
    max_id: int = 0
    replayed_records: int = 0
    # (type, identity, references) -> id, also after every version using the id is gone:
    # registering the schema again brings its id back, and ids are never reused
    _ids: dict[tuple[str, str, str], int] = field(default_factory=dict)
    _by_id: dict[int, SchemaVersion] = field(default_factory=dict)
    # (type, text, references) -> identity of the stored versions: a schema is parsed when
    # it is registered (or first replayed), not again when it is applied or compared
    _identities: dict[tuple[str, str, tuple[tuple[str, str, int], ...]], str] = field(
        default_factory=dict
    )

    # --- replay ---------------------------------------------------------------------------

    def apply(self, write: Write) -> None:
        for record in write.records:
            self.replay(record)

    def replay(self, record: SchemaRecord) -> None:
        """Apply one `_schemas` record (in log order)."""
        self.replayed_records += 1
        v = record.value
        if record.keytype == "SCHEMA":
            assert record.subject is not None
            assert record.version is not None
            versions = self.subjects.setdefault(record.subject, {})
            if v is None:
                versions.pop(record.version, None)
                if not versions:
                    del self.subjects[record.subject]
                return
            refs = tuple(
                (str(r["name"]), str(r["subject"]), int(r["version"]))
                for r in v.get("references") or ()
            )
            sv = SchemaVersion(
                record.subject,
                record.version,
                int(v["id"]),
                v.get("schemaType") or "AVRO",
                v["schema"],
                refs,
                bool(v.get("deleted", False)),
            )
            versions[record.version] = sv
            self.max_id = max(self.max_id, sv.id)
            key = (sv.schema_type, self._identity_of(sv), json.dumps(_references_json(refs)))
            self._ids.setdefault(key, sv.id)
            self._by_id.setdefault(sv.id, sv)  # what an imported id already names
        elif record.keytype == "CONFIG":
            if v is None:
                self.configs.pop(record.subject, None)
            else:
                self.configs[record.subject] = str(v["compatibilityLevel"])
        elif record.keytype == "MODE":
            if v is None:
                self.modes.pop(record.subject, None)
            else:
                self.modes[record.subject] = str(v["mode"])
        elif record.keytype == "DELETE_SUBJECT" and v is not None and record.subject:
            versions = self.subjects.get(record.subject, {})
            for n, sv in list(versions.items()):
                if n <= int(v.get("version", MAX_VERSION)) and not sv.deleted:
                    versions[n] = _deleted(sv)

    def _identity_of(self, sv: SchemaVersion) -> str:
        cached = self._identities.get((sv.schema_type, sv.schema, sv.references))
        if cached is not None:
            return cached
        try:
            ident = self._parse(sv.schema_type, sv.schema, sv.references, check_refs=False).identity
            self._identities[(sv.schema_type, sv.schema, sv.references)] = ident
            return ident
        except RegistryError:
            return sv.schema  # replayed as written by another registry: compare as text

    # --- parsing --------------------------------------------------------------------------

    def _parse(
        self,
        schema_type: str,
        text: str,
        references: tuple[tuple[str, str, int], ...],
        *,
        check_refs: bool = True,
    ) -> _Parsed:
        if schema_type not in _PARSERS:
            raise RegistryError.invalid_schema(f"Invalid schema type {schema_type}")
        parse, canonical, _ = _PARSERS[schema_type]
        ref_texts = []
        for name, subject, version in references:
            sv = self.subjects.get(subject, {}).get(version)
            if sv is None:
                if not check_refs:
                    continue
                raise RegistryError.invalid_schema(
                    f"Invalid schema: reference {name} ({subject}, version {version}) not found"
                )
            ref_texts.append(sv.schema)
        try:
            obj = parse(text, ref_texts)
        except RecursionError:
            raise RegistryError.invalid_schema("Invalid schema: nested too deeply") from None
        except ValueError as e:
            raise RegistryError.invalid_schema(
                f"Invalid schema {{schema={text}}}, details: {e}"
            ) from e
        ident = canonical(obj)
        return _Parsed(
            schema_type, ident if schema_type == "AVRO" else text, ident, references, obj
        )

    def parse_request(self, body: Any) -> _Parsed:
        """The schema of a register/lookup/compatibility request body.

        Raises:
          RegistryError: 422 for a body that is not an object with a string `schema`, 42201
            for an unknown type or an invalid schema or reference.
        """
        if not isinstance(body, dict):
            raise RegistryError.unprocessable("The request body must be a JSON object")
        text = body.get("schema")
        if not isinstance(text, str) or not text.strip():
            raise RegistryError.invalid_schema("Empty schema")
        schema_type = body.get("schemaType") or "AVRO"
        if not isinstance(schema_type, str):
            raise RegistryError.invalid_schema(f"Invalid schema type {schema_type!r}")
        refs_in = body.get("references") or []
        if not isinstance(refs_in, list):
            raise RegistryError.unprocessable("references must be a list")
        refs = []
        for r in refs_in:
            if not (
                isinstance(r, dict)
                and isinstance(r.get("name"), str)
                and isinstance(r.get("subject"), str)
                and isinstance(r.get("version"), int)
            ):
                raise RegistryError.unprocessable(
                    'a reference is {"name": str, "subject": str, "version": int}'
                )
            refs.append((r["name"], r["subject"], r["version"]))
        return self._parse(schema_type.upper(), text, tuple(refs))

    # --- reads ----------------------------------------------------------------------------

    def schema_types(self) -> list[str]:
        return list(SCHEMA_TYPES)

    def list_subjects(self, *, deleted: bool = False, prefix: str = "") -> list[str]:
        return sorted(
            s
            for s, versions in self.subjects.items()
            if s.startswith(prefix) and any(deleted or not v.deleted for v in versions.values())
        )

    def _live(self, subject: str, *, deleted: bool = False) -> dict[int, SchemaVersion]:
        versions = {
            n: v for n, v in self.subjects.get(subject, {}).items() if deleted or not v.deleted
        }
        if not versions:
            raise RegistryError.subject_not_found(subject)
        return dict(sorted(versions.items()))

    def list_versions(self, subject: str, *, deleted: bool = False) -> list[int]:
        return list(self._live(subject, deleted=deleted))

    def get_version(self, subject: str, version: str, *, deleted: bool = False) -> SchemaVersion:
        versions = self._live(subject, deleted=deleted)
        if version in ("latest", "-1"):
            return versions[max(versions)]
        n = parse_version(version)
        if n not in versions:
            raise RegistryError.version_not_found(n)
        return versions[n]

    def get_by_id(self, schema_id: int, subject: str | None = None) -> SchemaVersion:
        """The schema of `schema_id` while a version (soft-deleted ones included) uses it, as
        Confluent answers it; once every such version is deleted permanently, 40403."""
        subjects = [subject] if subject else list(self.subjects)
        for s in subjects:
            for v in self.subjects.get(s, {}).values():
                if v.id == schema_id:
                    return v
        raise RegistryError.schema_not_found(f"Schema {schema_id} not found")

    def subject_versions_of_id(
        self, schema_id: int, *, deleted: bool = False
    ) -> list[SchemaVersion]:
        self.get_by_id(schema_id)
        return [
            v
            for s in sorted(self.subjects)
            for v in self.subjects[s].values()
            if v.id == schema_id and (deleted or not v.deleted)
        ]

    def referenced_by(self, subject: str, version: str) -> list[int]:
        sv = self.get_version(subject, version)
        return sorted(
            v.id
            for versions in self.subjects.values()
            for v in versions.values()
            if not v.deleted and (sv.subject, sv.version) in {(r[1], r[2]) for r in v.references}
        )

    def lookup(self, subject: str, body: Any, *, deleted: bool = False) -> SchemaVersion:
        parsed = self.parse_request(body)
        versions = self._live(subject, deleted=deleted)
        for sv in versions.values():
            if self._same(sv, parsed):
                return sv
        raise RegistryError.schema_not_found()

    def _same(self, sv: SchemaVersion, parsed: _Parsed) -> bool:
        return (
            sv.schema_type == parsed.schema_type
            and sv.references == parsed.references
            and self._identity_of(sv) == parsed.identity
        )

    def schema_text(self, sv: SchemaVersion, fmt: str | None = None) -> str:
        """The schema as answered (Confluent's `format`): a PROTOBUF schema is answered as
        `.proto` text, or with `fmt` "serialized" as a base64 FileDescriptorProto, whichever
        way it was registered."""
        if sv.schema_type != "PROTOBUF":
            return sv.schema
        try:
            parsed = protobuf.parse(sv.schema, [])
            if fmt == "serialized":
                if parsed.descriptor is not None:
                    return sv.schema
                fdp = protobuf.to_descriptor(sv.schema)
                return base64.b64encode(fdp.SerializeToString()).decode("ascii")
        except ValueError:
            return sv.schema
        if parsed.descriptor is None:
            return sv.schema
        return protobuf.to_proto_text(parsed.descriptor)

    def compatibility(self, subject: str | None) -> str:
        if subject is not None and subject in self.configs:
            return self.configs[subject]
        return self.configs.get(None, DEFAULT_COMPATIBILITY)

    def get_config(self, subject: str | None, *, default_to_global: bool = False) -> dict[str, str]:
        if subject is not None and subject not in self.configs and not default_to_global:
            raise RegistryError.subject_compatibility_not_configured(subject)
        return {"compatibilityLevel": self.compatibility(subject)}

    def mode(self, subject: str | None) -> str:
        if subject is not None and subject in self.modes:
            return self.modes[subject]
        return self.modes.get(None, DEFAULT_MODE)

    def get_mode(self, subject: str | None, *, default_to_global: bool = False) -> dict[str, str]:
        if subject is not None and subject not in self.modes and not default_to_global:
            raise RegistryError.subject_mode_not_configured(subject)
        return {"mode": self.mode(subject)}

    # --- compatibility --------------------------------------------------------------------

    def _problems(self, parsed: _Parsed, against: list[SchemaVersion], level: str) -> list[str]:
        if level == "NONE":
            return []
        if not level.endswith("_TRANSITIVE"):
            against = against[-1:]
        _, _, check = _PARSERS[parsed.schema_type]
        out: list[str] = []
        for sv in reversed(against):
            if sv.schema_type != parsed.schema_type:
                out.append(
                    f"{{errorType:'TYPE_MISMATCH', description:'version {sv.version} is "
                    f"{sv.schema_type}, not {parsed.schema_type}'}}"
                )
                continue
            old = self._parse(sv.schema_type, sv.schema, sv.references, check_refs=False).obj
            try:
                if level.startswith(("BACKWARD", "FULL")):
                    out += check(parsed.obj, old)
                if level.startswith(("FORWARD", "FULL")):
                    out += check(old, parsed.obj)
            except RecursionError:
                out.append("{errorType:'NESTED_TOO_DEEPLY', description:'not checked'}")
            if out:
                out.append(f"{{oldSchemaVersion: {sv.version}}}")
                out.append(f"{{oldSchema: '{sv.schema}'}}")
                out.append(f"{{compatibility: '{level}'}}")
                break
        return out

    def check_compatibility(self, subject: str, version: str | None, body: Any) -> dict[str, Any]:
        """POST /compatibility/subjects/{subject}/versions[/{version}]'s answer (verbose)."""
        parsed = self.parse_request(body)
        level = self.compatibility(subject)
        if version is None:
            try:
                against = list(self._live(subject).values())
            except RegistryError:
                against = []  # a new subject: anything is compatible
        else:
            against = [self.get_version(subject, version)]
            level = level.removesuffix("_TRANSITIVE")
        messages = self._problems(parsed, against, level)
        return {"is_compatible": not messages, "messages": messages}

    # --- writes ---------------------------------------------------------------------------

    def _check_writable(self, subject: str | None) -> None:
        if self.mode(subject) == "READONLY":
            raise RegistryError.operation_not_permitted(
                f"Subject {subject} is in read-only mode"
                if subject
                else "The registry is in read-only mode"
            )

    def register(self, subject: str, body: Any) -> Write:
        """POST /subjects/{subject}/versions: {"id": id}."""
        self._check_writable(subject)
        importing = self.mode(subject) == "IMPORT"
        parsed = self.parse_request(body)
        want_id = body.get("id") if isinstance(body, dict) else None
        want_version = body.get("version") if isinstance(body, dict) else None
        if (want_id is not None or want_version is not None) and not importing:
            if want_id not in (None, -1) or want_version not in (None, -1, 0):
                raise RegistryError.operation_not_permitted(
                    f"Subject {subject} is not in import mode"
                )
            want_id = want_version = None
        existing = self.subjects.get(subject, {})
        live = [v for _, v in sorted(existing.items()) if not v.deleted]
        for sv in live:
            if self._same(sv, parsed) and want_id in (None, -1, sv.id):
                return Write({"id": sv.id})
        if not importing:
            problems = self._problems(parsed, live, self.compatibility(subject))
            if problems:
                raise RegistryError.incompatible(subject, problems)
        key = (parsed.schema_type, parsed.identity, json.dumps(_references_json(parsed.references)))
        if importing and isinstance(want_id, int) and want_id > 0:
            other = self._by_id.get(want_id)
            if other is not None and key != (
                other.schema_type,
                self._identity_of(other),
                json.dumps(_references_json(other.references)),
            ):
                raise RegistryError.id_does_not_match(
                    f"Overwrite new schema with id {want_id} is not permitted."
                )
            schema_id = want_id
        else:
            schema_id = self._ids.get(key, self.max_id + 1)
        if importing and isinstance(want_version, int) and want_version > 0:
            version = want_version
        else:
            version = max(existing, default=0) + 1
        sv = SchemaVersion(
            subject, version, schema_id, parsed.schema_type, parsed.text, parsed.references
        )
        self._identities[(sv.schema_type, sv.schema, sv.references)] = parsed.identity
        return Write({"id": schema_id}, (sv.record(),))

    def _referenced(self, targets: list[SchemaVersion]) -> None:
        pairs = {(t.subject, t.version) for t in targets}
        for versions in self.subjects.values():
            for v in versions.values():
                if v.deleted or (v.subject, v.version) in pairs:
                    continue
                if any((s, n) in pairs for _, s, n in v.references):
                    raise RegistryError.reference_exists(
                        f"One or more references exist to the schema {{subject={v.subject}, "
                        f"version={v.version}}}."
                    )

    def delete_version(self, subject: str, version: str, *, permanent: bool = False) -> Write:
        """DELETE /subjects/{subject}/versions/{version}: the version number."""
        self._check_writable(subject)
        if not self.subjects.get(subject):
            raise RegistryError.subject_not_found(subject)
        if version in ("latest", "-1"):
            sv = self.get_version(subject, version, deleted=permanent)
        else:
            n = parse_version(version)
            found = self.subjects[subject].get(n)
            if found is None:
                raise RegistryError.version_not_found(n)
            sv = found
        if not permanent:
            if sv.deleted:
                raise RegistryError.version_soft_deleted(subject, sv.version)
            self._referenced([sv])
            return Write(sv.version, (sv.record(deleted=True),))
        if not sv.deleted:
            raise RegistryError.version_not_soft_deleted(subject, sv.version)
        return Write(sv.version, (SchemaRecord("SCHEMA", subject, sv.version, None),))

    def delete_subject(self, subject: str, *, permanent: bool = False) -> Write:
        """DELETE /subjects/{subject}: the versions deleted."""
        self._check_writable(subject)
        versions = self.subjects.get(subject)
        if not versions:
            raise RegistryError.subject_not_found(subject)
        live = [v for _, v in sorted(versions.items()) if not v.deleted]
        if not permanent:
            if not live:
                raise RegistryError.subject_soft_deleted(subject)
            self._referenced(live)
            records = [v.record(deleted=True) for v in live]
            records.append(
                SchemaRecord(
                    "DELETE_SUBJECT",
                    subject,
                    None,
                    {"subject": subject, "version": live[-1].version},
                )
            )
            return Write([v.version for v in live], tuple(records))
        if live:
            raise RegistryError.subject_not_soft_deleted(subject)
        records = [SchemaRecord("SCHEMA", subject, n, None) for n in sorted(versions)]
        if subject in self.configs:
            records.append(SchemaRecord("CONFIG", subject, None, None))
        if subject in self.modes:
            records.append(SchemaRecord("MODE", subject, None, None))
        return Write(sorted(versions), tuple(records))

    def set_config(self, subject: str | None, body: Any) -> Write:
        """PUT /config[/{subject}]: {"compatibility": level}."""
        level = body.get("compatibility") if isinstance(body, dict) else None
        if not isinstance(level, str) or level.upper() not in COMPATIBILITY_LEVELS:
            raise RegistryError.invalid_compatibility_level(level)
        level = level.upper()
        record = SchemaRecord("CONFIG", subject, None, {"compatibilityLevel": level})
        return Write({"compatibility": level}, (record,))

    def delete_config(self, subject: str | None) -> Write:
        """DELETE /config[/{subject}]: the level that was set (the global one falls back to
        BACKWARD, the subject's to the global one)."""
        previous = self.get_config(subject, default_to_global=subject is None)
        return Write(previous, (SchemaRecord("CONFIG", subject, None, None),))

    def set_mode(self, subject: str | None, body: Any, *, force: bool = False) -> Write:
        """PUT /mode[/{subject}]: {"mode": mode}."""
        mode = body.get("mode") if isinstance(body, dict) else None
        if not isinstance(mode, str) or mode.upper() not in MODES:
            raise RegistryError.invalid_mode(mode)
        mode = mode.upper()
        if mode == "IMPORT" and not force:
            live = self.list_subjects()
            has = live if subject is None else [s for s in live if s == subject]
            if has:
                raise RegistryError.operation_not_permitted(
                    "Cannot import since found existing subjects"
                )
        return Write({"mode": mode}, (SchemaRecord("MODE", subject, None, {"mode": mode}),))

    def delete_mode(self, subject: str) -> Write:
        previous = self.get_mode(subject)
        return Write(previous, (SchemaRecord("MODE", subject, None, None),))


def _deleted(sv: SchemaVersion) -> SchemaVersion:
    return SchemaVersion(
        sv.subject, sv.version, sv.id, sv.schema_type, sv.schema, sv.references, True
    )


def parse_version(version: str) -> int:
    """A version in a path: 1..2^31-1 (42202 otherwise); "latest"/-1 are handled by callers."""
    try:
        n = int(version)
    except ValueError:
        raise RegistryError.invalid_version(version) from None
    if not 1 <= n <= MAX_VERSION:
        raise RegistryError.invalid_version(version)
    return n
