"""AVRO schemas: parsing (fastavro) and Avro's schema resolution rules as compatibility.

`check(reader, writer)` lists why data written with `writer` cannot be read with `reader`,
following the Avro specification's "Schema Resolution" and Avro's SchemaCompatibility
(what Confluent's AvroSchema.isBackwardCompatible calls):

  * primitives match, or the writer's promotes: int -> long, float, double;
    long -> float, double; float -> double; string <-> bytes;
  * records, enums and fixed match by unqualified name (or a reader alias of the writer's
    full name); a reader field missing from the writer needs a default; writer fields the
    reader lacks are skipped;
  * a reader enum needs every writer symbol unless it has a default; fixed sizes match;
  * arrays by items, maps by values; a writer union needs each branch readable, a reader
    union needs one branch that reads the writer's type;
  * logical types are their underlying types (Avro resolves on the underlying type too).

Identity (the same schema gets the same id) is the schema's compact JSON: Confluent compares
Avro's Schema.toString(), which is also whitespace-insensitive.
"""

from __future__ import annotations

import json
from typing import Any

import fastavro
from fastavro.schema import SchemaParseException, UnknownType

__all__ = ["canonical", "check", "parse"]

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})
# writer type -> reader types that read it (Avro spec, "Schema Resolution")
PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}


class AvroSchema:
    """A parsed AVRO schema: its JSON, and the named types it and its references define."""

    def __init__(self, obj: Any, names: dict[str, Any]) -> None:
        self.obj = obj
        self.names = names


def parse(text: str, references: list[str]) -> AvroSchema:
    """Parse and validate `text` with the referenced schemas' types in scope.

    Raises:
      ValueError: not JSON, or not a valid Avro schema.
    """
    named: dict[str, Any] = {}
    names: dict[str, Any] = {}
    try:
        for ref in references:
            ref_obj = json.loads(ref)
            fastavro.parse_schema(ref_obj, named_schemas=named)
            _collect(ref_obj, "", names)
        obj = json.loads(text)
        fastavro.parse_schema(obj, named_schemas=named)
    except (json.JSONDecodeError, SchemaParseException, UnknownType) as e:
        raise ValueError(str(e)) from e
    except (TypeError, KeyError, AttributeError) as e:
        # fastavro reports some malformed shapes (a field that is not an object) this way
        raise ValueError(f"malformed Avro schema: {e!r}") from e
    try:
        _collect(obj, "", names)
    except (TypeError, AttributeError) as e:
        raise ValueError(f"malformed Avro schema: {e!r}") from e
    return AvroSchema(obj, names)


def canonical(schema: AvroSchema) -> str:
    return json.dumps(_collapse(schema.obj), separators=(",", ":"))


def _collapse(node: Any) -> Any:
    """{"type": "string"} as "string", everywhere: the same schema, as Avro prints it."""
    if isinstance(node, list):
        return [_collapse(n) for n in node]
    if isinstance(node, dict):
        if set(node) == {"type"} and node["type"] in PRIMITIVES:
            return node["type"]
        return {
            k: _collapse(v) if k in ("type", "items", "values", "fields") else v
            for k, v in node.items()
        }
    return node


def _fullname(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _collect(node: Any, ns: str, names: dict[str, Any]) -> None:
    if isinstance(node, list):
        for branch in node:
            _collect(branch, ns, names)
    elif isinstance(node, dict):
        t = node.get("type")
        if t in ("record", "error") and not isinstance(node.get("fields"), list):
            # Avro's Schema.parse: "Record has no fields"; fastavro lets it pass
            raise ValueError(f"record {node.get('name')!r} has no fields")
        if t in NAMED and isinstance(node.get("name"), str):
            full = _fullname(node["name"], node.get("namespace", ns))
            names[full] = (node, full.rpartition(".")[0])
            ns = full.rpartition(".")[0]
        for field in node.get("fields", ()) if t in ("record", "error") else ():
            _collect(field.get("type"), ns, names)
        if t == "array":
            _collect(node.get("items"), ns, names)
        elif t == "map":
            _collect(node.get("values"), ns, names)
        elif isinstance(t, (dict, list)):
            _collect(t, ns, names)


def _resolve(node: Any, ns: str, names: dict[str, Any]) -> tuple[str, Any, str]:
    """(kind, node, namespace): kind is a primitive, record, enum, fixed, array, map, union."""
    while True:
        if isinstance(node, list):
            return "union", node, ns
        if isinstance(node, str):
            if node in PRIMITIVES:
                return node, node, ns
            found = names.get(_fullname(node, ns)) or names.get(node)
            if found is None:
                raise ValueError(f"unknown type {node!r}")
            node, ns = found
            continue
        t = node["type"]
        if t in PRIMITIVES:
            return t, node, ns
        if t in NAMED:
            full = _fullname(node["name"], node.get("namespace", ns))
            return ("record" if t == "error" else t), node, full.rpartition(".")[0]
        if t in ("array", "map"):
            return t, node, ns
        node = t


def _name(node: dict[str, Any], ns: str) -> str:
    return _fullname(node["name"], node.get("namespace", ns))


def _names_match(r: dict[str, Any], rns: str, w: dict[str, Any], wns: str) -> bool:
    if r["name"].rpartition(".")[2] == w["name"].rpartition(".")[2]:
        return True
    aliases = {_fullname(a, rns) for a in r.get("aliases", ())}
    return _name(w, wns) in aliases


def check(reader: AvroSchema, writer: AvroSchema) -> list[str]:
    """Why data written with `writer` cannot be read with `reader` (empty: it can)."""
    messages: list[str] = []
    _check(reader.obj, "", reader.names, writer.obj, "", writer.names, "", messages, set())
    return messages


def _message(error_type: str, description: str, path: str) -> str:
    return f"{{errorType:'{error_type}', description:'{description}', additionalInfo:'{path}'}}"


def _check(
    r: Any,
    rns: str,
    rnames: dict[str, Any],
    w: Any,
    wns: str,
    wnames: dict[str, Any],
    path: str,
    out: list[str],
    seen: set[tuple[str, str]],
) -> None:
    rk, r, rns = _resolve(r, rns, rnames)
    wk, w, wns = _resolve(w, wns, wnames)
    if wk == "union":
        for i, branch in enumerate(w):
            _check(r, rns, rnames, branch, wns, wnames, f"{path}/{i}", out, seen)
        return
    if rk == "union":
        for branch in r:
            trial: list[str] = []
            _check(branch, rns, rnames, w, wns, wnames, path, trial, set(seen))
            if not trial:
                return
        out.append(_message("MISSING_UNION_BRANCH", f"reader union lacks type {wk}", path))
        return
    if rk != wk:
        if rk not in PROMOTIONS.get(wk, ()):
            out.append(
                _message(
                    "TYPE_MISMATCH", f"reader type {rk} not compatible with writer type {wk}", path
                )
            )
        return
    if rk in ("record", "enum", "fixed"):
        if not _names_match(r, rns, w, wns):
            out.append(
                _message(
                    "NAME_MISMATCH",
                    f"expected {_name(r, rns)}, found {_name(w, wns)}",
                    f"{path}/name",
                )
            )
            return
        pair = (_name(r, rns), _name(w, wns))
        if pair in seen:
            return  # a recursive type: already being compared further up
        seen = seen | {pair}
    if rk == "record":
        wfields = {f["name"]: f for f in w.get("fields", ())}
        for i, rf in enumerate(r.get("fields", ())):
            wf = wfields.get(rf["name"])
            if wf is None:
                wf = next((wfields[a] for a in rf.get("aliases", ()) if a in wfields), None)
            if wf is None:
                if "default" not in rf:
                    out.append(
                        _message(
                            "READER_FIELD_MISSING_DEFAULT_VALUE",
                            f"the field {rf['name']} at path {path}/fields/{i} in the reader "
                            "has no default value and is missing in the writer",
                            rf["name"],
                        )
                    )
                continue
            _check(
                rf["type"],
                rns,
                rnames,
                wf["type"],
                wns,
                wnames,
                f"{path}/fields/{i}/type",
                out,
                seen,
            )
    elif rk == "enum":
        missing = [s for s in w.get("symbols", ()) if s not in r.get("symbols", ())]
        if missing and "default" not in r:
            out.append(
                _message(
                    "MISSING_ENUM_SYMBOLS", f"the reader lacks symbols {missing}", f"{path}/symbols"
                )
            )
    elif rk == "fixed":
        if r.get("size") != w.get("size"):
            out.append(
                _message(
                    "FIXED_SIZE_MISMATCH",
                    f"expected size {w.get('size')}, found {r.get('size')}",
                    f"{path}/size",
                )
            )
    elif rk == "array":
        _check(r["items"], rns, rnames, w["items"], wns, wnames, f"{path}/items", out, seen)
    elif rk == "map":
        _check(r["values"], rns, rnames, w["values"], wns, wnames, f"{path}/values", out, seen)
