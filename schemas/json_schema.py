"""JSON schemas: parsing (jsonschema checks the schema against its metaschema) and a sound
compatibility check of the common cases.

`check(reader, writer)` lists reasons a document valid under `writer` may be invalid under
`reader`; it never calls two schemas compatible when they are not, and it says
"not covered" rather than guess. Covered, with Confluent's error type names:

  * `type` (a reader accepting "number" reads "integer"); `enum` values;
  * objects: `properties` added or removed, against open and closed content models
    (`additionalProperties` false, true/absent, or a schema); `required` added;
    `additionalProperties` narrowed;
  * arrays: `items` (one schema); bounds: minimum/maximum, exclusive ones, minLength/
    maxLength, minItems/maxItems, narrowed or added;
  * `pattern`, `format`, `const`, `$ref`, `allOf`/`anyOf`/`oneOf`/`not`, `if`/`then`/`else`,
    `patternProperties`, `dependencies`, tuple `items` and the like: the reader's must equal
    the writer's, otherwise the schemas are reported incompatible ("not covered").

Identity is the schema's compact JSON with its keys as given (Confluent compares the
schema's canonical string, also key-order sensitive without normalize=true).
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import jsonschema.exceptions
import jsonschema.validators

__all__ = ["canonical", "check", "parse"]

# keywords compared for equality only (see the module docstring)
UNCOVERED = (
    "pattern",
    "format",
    "const",
    "$ref",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependencies",
    "dependentRequired",
    "dependentSchemas",
    "propertyNames",
    "contains",
    "uniqueItems",
    "prefixItems",
    "multipleOf",
)
# (keyword, True when a larger reader value is wider)
BOUNDS = (
    ("maximum", True),
    ("exclusiveMaximum", True),
    ("maxLength", True),
    ("maxItems", True),
    ("maxProperties", True),
    ("minimum", False),
    ("exclusiveMinimum", False),
    ("minLength", False),
    ("minItems", False),
    ("minProperties", False),
)


def parse(text: str, references: list[str]) -> Any:
    """The schema's JSON, checked against its metaschema.

    Raises:
      ValueError: not JSON, or not a valid JSON schema.
    """
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise ValueError(f"Invalid JSON {text!r}: {e}") from e
    if not isinstance(obj, (dict, bool)):
        raise ValueError(f"Invalid schema {text!r}: a JSON schema is an object or a boolean")
    try:
        jsonschema.validators.validator_for(obj).check_schema(obj)
    except jsonschema.exceptions.SchemaError as e:
        raise ValueError(f"Invalid schema {text!r}: {e.message}") from e
    return obj


def canonical(schema: Any) -> str:
    return json.dumps(schema, separators=(",", ":"))


def check(reader: Any, writer: Any) -> list[str]:
    out: list[str] = []
    _check(reader, writer, "#", out)
    return out


def _message(error_type: str, path: str) -> str:
    return f"{{errorType:'{error_type}', description:'at {path}'}}"


def _accepts_all(schema: Any) -> bool:
    return schema is True or schema == {}


def _types(schema: dict[str, Any]) -> set[str] | None:
    t = schema.get("type")
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


def _check(r: Any, w: Any, path: str, out: list[str]) -> None:
    if _accepts_all(r) or w is False:
        return
    if r is False:
        out.append(_message("SCHEMA_NARROWED", path))
        return
    if w is True:
        w = {}
    for keyword in UNCOVERED:
        if keyword in r and r[keyword] != w.get(keyword):
            out.append(_message(f"{keyword.upper()}_CHANGED (not covered)", f"{path}/{keyword}"))
    rt, wt = _types(r), _types(w)
    if rt is not None:
        if wt is None:
            out.append(_message("TYPE_NARROWED", f"{path}/type"))
        else:
            for t in wt:
                if t not in rt and not (t == "integer" and "number" in rt):
                    out.append(
                        _message("TYPE_NARROWED" if t in rt else "TYPE_CHANGED", f"{path}/type")
                    )
                    break
    if "enum" in r:
        rvals = [json.dumps(v, sort_keys=True) for v in r["enum"]]
        if "enum" not in w or any(json.dumps(v, sort_keys=True) not in rvals for v in w["enum"]):
            out.append(_message("ENUM_ARRAY_NARROWED", f"{path}/enum"))
    for keyword, larger_is_wider in BOUNDS:
        if keyword not in r:
            continue
        if keyword not in w:
            out.append(_message(f"{keyword.upper()}_ADDED", f"{path}/{keyword}"))
        elif (r[keyword] < w[keyword]) if larger_is_wider else (r[keyword] > w[keyword]):
            out.append(_message(f"{keyword.upper()}_NARROWED", f"{path}/{keyword}"))
    _check_object(r, w, path, out)
    if "items" in r and not isinstance(r["items"], list):
        witems = w.get("items", True)
        if isinstance(witems, list):
            out.append(_message("ITEMS_CHANGED (not covered)", f"{path}/items"))
        else:
            _check(r["items"], witems, f"{path}/items", out)
    elif isinstance(r.get("items"), list) and r["items"] != w.get("items"):
        out.append(_message("ITEMS_CHANGED (not covered)", f"{path}/items"))


def _check_object(r: dict[str, Any], w: dict[str, Any], path: str, out: list[str]) -> None:
    rprops: dict[str, Any] = r.get("properties", {})
    wprops: dict[str, Any] = w.get("properties", {})
    radd = r.get("additionalProperties", True)
    wadd = w.get("additionalProperties", True)
    for name in sorted(set(r.get("required", ())) - set(w.get("required", ()))):
        out.append(_message("REQUIRED_ATTRIBUTE_ADDED", f"{path}/required/{name}"))
    for name, rprop in rprops.items():
        where = f"{path}/properties/{name}"
        if name in wprops:
            _check(rprop, wprops[name], where, out)
        elif wadd is False:
            continue  # the writer never sends it
        elif isinstance(wadd, dict):
            _check(rprop, wadd, where, out)
        elif not _accepts_all(rprop):
            out.append(_message("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", where))
    for name, wprop in wprops.items():
        if name in rprops:
            continue
        where = f"{path}/properties/{name}"
        if radd is False:
            out.append(_message("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", where))
        elif isinstance(radd, dict):
            _check(radd, wprop, where, out)
    if wadd is not False:
        if radd is False:
            out.append(_message("ADDITIONAL_PROPERTIES_REMOVED", f"{path}/additionalProperties"))
        elif isinstance(radd, dict):
            _check(radd, wadd, f"{path}/additionalProperties", out)
