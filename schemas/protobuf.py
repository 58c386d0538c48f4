"""PROTOBUF schemas: parsing and a documented subset of Confluent's compatibility rules.

A schema is either what Confluent's serializers send, the base64 of a serialized
FileDescriptorProto (read with the protobuf package's descriptor_pb2), or `.proto` text,
read by the small parser below. The parser covers `syntax`, `package`, `import`, messages
(nested), enums, fields with `optional`/`required`/`repeated` labels, `map<K, V>` fields,
`oneof` blocks, and skips `option`, `reserved`, `extensions` and `service` blocks. Confluent
parses the full grammar with Square's wire library; a `.proto` outside this subset is
refused as invalid (42201) rather than guessed at.

The model is, per message full name, its fields by number: (name, type, label).
`check(reader, writer)` applies these rules of Confluent's ProtobufSchema diff:
  * MESSAGE_REMOVED: a writer message the reader lacks;
  * FIELD_KIND_CHANGED / FIELD_SCALAR_KIND_CHANGED: a field number whose type changed,
    outside the wire-compatible groups {int32, uint32, int64, uint64, bool},
    {sint32, sint64}, {string, bytes}, {fixed32, sfixed32}, {fixed64, sfixed64};
  * FIELD_NAMED_TYPE_CHANGED: a message or enum field that now names another type;
  * REQUIRED_FIELD_ADDED / REQUIRED_FIELD_REMOVED (proto2), and singular <-> repeated;
Fields added, removed or renamed are compatible, as in Confluent.

Confluent answers a Protobuf schema as `.proto` text, or as a base64 descriptor with
`format=serialized`, whichever way it was registered: `to_proto_text` and `to_descriptor`
convert between the two (for the subset above).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from google.protobuf import descriptor_pb2
from google.protobuf.message import DecodeError

__all__ = ["ProtobufSchema", "canonical", "check", "parse", "to_proto_text"]

Field = tuple[str, str, str]  # (name, type, label)

COMPATIBLE_GROUPS = (
    frozenset({"int32", "uint32", "int64", "uint64", "bool"}),
    frozenset({"sint32", "sint64"}),
    frozenset({"string", "bytes"}),
    frozenset({"fixed32", "sfixed32"}),
    frozenset({"fixed64", "sfixed64"}),
)
SCALARS = frozenset(
    {
        "double",
        "float",
        "int32",
        "int64",
        "uint32",
        "uint64",
        "sint32",
        "sint64",
        "fixed32",
        "fixed64",
        "sfixed32",
        "sfixed64",
        "bool",
        "string",
        "bytes",
    }
)
_TYPE_NAMES = {
    v: k.removeprefix("TYPE_").lower() for k, v in descriptor_pb2.FieldDescriptorProto.Type.items()
}
_LABELS = {
    descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL: "optional",
    descriptor_pb2.FieldDescriptorProto.LABEL_REQUIRED: "required",
    descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED: "repeated",
}
_BASE64 = re.compile(r"^[A-Za-z0-9+/=\s]+$")
_TOKEN = re.compile(
    r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|[A-Za-z_][\w.]*|-?\d[\w.]*|\.[\w.]+|\S'
)


class ProtobufSchema:
    def __init__(
        self,
        text: str,
        messages: dict[str, dict[int, Field]],
        imports: list[str],
        descriptor: descriptor_pb2.FileDescriptorProto | None = None,
    ):
        self.text = text
        self.messages = messages
        self.imports = imports
        self.descriptor = descriptor  # when given as a base64 FileDescriptorProto


def parse(text: str, references: list[str]) -> ProtobufSchema:
    """Raises:
    ValueError: neither a FileDescriptorProto in base64 nor `.proto` text of the subset.
    """
    stripped = text.strip()
    if stripped and _BASE64.match(stripped) and not stripped.startswith("syntax"):
        try:
            fdp = descriptor_pb2.FileDescriptorProto.FromString(
                base64.b64decode(stripped, validate=False)
            )
        except (binascii.Error, DecodeError) as e:
            raise ValueError(f"Invalid schema {text!r}: {e}") from e
        messages: dict[str, dict[int, Field]] = {}
        prefix = f".{fdp.package}" if fdp.package else ""
        for m in fdp.message_type:
            _from_descriptor(m, prefix, messages)
        if not messages and not fdp.enum_type and not fdp.name:
            raise ValueError(f"Invalid schema {text!r}: an empty file descriptor")
        return ProtobufSchema(stripped, messages, list(fdp.dependency), fdp)
    try:
        return _parse_text(stripped)
    except IndexError as e:
        raise ValueError(f"Invalid schema {text!r}: ends in the middle of a statement") from e


def canonical(schema: ProtobufSchema) -> str:
    return schema.text


def _from_descriptor(
    m: descriptor_pb2.DescriptorProto, prefix: str, out: dict[str, dict[int, Field]]
) -> None:
    name = f"{prefix}.{m.name}"
    entries = {n.name: n for n in m.nested_type if n.options.map_entry}

    def type_of(f: descriptor_pb2.FieldDescriptorProto) -> str:
        short = str(f.type_name).rpartition(".")[2]
        if f.type_name and short in entries:  # a map field, as `.proto` text writes it
            key, value = entries[short].field[0], entries[short].field[1]
            return f"map<{type_of(key)},{type_of(value)}>"
        return short if f.type_name else _TYPE_NAMES[f.type]

    out[name] = {
        f.number: (
            f.name,
            type_of(f),
            _LABELS[f.label] if not f.proto3_optional else "optional",
        )
        for f in m.field
    }
    for nested in m.nested_type:
        if not nested.options.map_entry:
            _from_descriptor(nested, name, out)


def _statement_end(tokens: list[str], p: int) -> int | None:
    """The position just past the statement starting at tokens[p]: past its `;`, or past
    the `}` that closes its first `{`; None if the tokens end first."""
    depth = 0
    while p < len(tokens):
        t = tokens[p]
        p += 1
        if t == "{":
            depth += 1
        elif t == "}":
            depth -= 1
            if depth == 0:
                return p
        elif t == ";" and depth == 0:
            return p
    return None


def _parse_text(text: str) -> ProtobufSchema:
    # comments out, then a token stream
    source = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    tokens = _TOKEN.findall(source)
    messages: dict[str, dict[int, Field]] = {}
    imports: list[str] = []
    pos = 0
    package = ""

    def fail(why: str) -> ValueError:
        return ValueError(f"Invalid schema {text!r}: {why} (token {pos})")

    def skip_statement(p: int) -> int:
        end = _statement_end(tokens, p)
        if end is None:
            raise fail("unterminated statement")
        return end

    def message(p: int, prefix: str) -> int:
        if p + 1 >= len(tokens) or tokens[p + 1] != "{":
            raise fail("a message needs a name and a body")
        name = f"{prefix}.{tokens[p]}"
        fields: dict[int, Field] = {}
        messages[name] = fields
        p += 2
        in_oneof = 0
        while p < len(tokens):
            t = tokens[p]
            if t == "}":
                if in_oneof:
                    in_oneof -= 1
                    p += 1
                    continue
                return p + 1
            if t in ("message",):
                p = message(p + 1, name)
            elif t in ("enum", "option", "reserved", "extensions", "extend", "service"):
                p = skip_statement(p)
            elif t == "oneof":
                if p + 2 >= len(tokens) or tokens[p + 2] != "{":
                    raise fail("a oneof needs a name and a body")
                in_oneof += 1
                p += 3
            elif t == ";":
                p += 1
            else:
                label = "optional"
                if t in ("optional", "required", "repeated"):
                    label, p = t, p + 1
                if tokens[p] == "map":
                    # map < K , V > name = N ;
                    if tokens[p + 1 : p + 2] != ["<"] or tokens[p + 3 : p + 4] != [","]:
                        raise fail("malformed map field")
                    ftype = f"map<{tokens[p + 2]},{tokens[p + 4]}>"
                    p += 6
                    label = "repeated"
                else:
                    ftype = tokens[p].rpartition(".")[2]
                    p += 1
                if p + 2 >= len(tokens) or tokens[p + 1] != "=":
                    raise fail(f"expected 'name = number' after {ftype}")
                fname, number = tokens[p], tokens[p + 2]
                if not number.isdigit() or not re.match(r"^[A-Za-z_]\w*$", fname):
                    raise fail(f"bad field {fname} = {number}")
                fields[int(number)] = (fname, ftype, label)
                p = skip_statement(p + 3 - 1) if tokens[p + 3] != ";" else p + 4
        raise fail(f"message {name} is not closed")

    while pos < len(tokens):
        t = tokens[pos]
        if t == "syntax" or t == "edition" or t == "option":
            pos = skip_statement(pos)
        elif t == "package":
            package = tokens[pos + 1] if pos + 1 < len(tokens) else ""
            pos = skip_statement(pos)
        elif t == "import":
            names = [x for x in tokens[pos + 1 : pos + 3] if x[:1] in "\"'"]
            imports.extend(n[1:-1] for n in names)
            pos = skip_statement(pos)
        elif t == "message":
            pos = message(pos + 1, f".{package}" if package else "")
        elif t in ("enum", "service", "extend"):
            pos = skip_statement(pos)
        elif t == ";":
            pos += 1
        else:
            raise fail(f"unexpected {t!r}")
    if not messages and "enum" not in tokens:
        raise ValueError(f"Invalid schema {text!r}: no message or enum")
    return ProtobufSchema(text, messages, imports)


def _message(error_type: str, where: str) -> str:
    return f"{{errorType:'{error_type}', description:'at {where}'}}"


def check(reader: ProtobufSchema, writer: ProtobufSchema) -> list[str]:
    out: list[str] = []
    for name, wfields in writer.messages.items():
        rfields = reader.messages.get(name)
        if rfields is None:
            out.append(_message("MESSAGE_REMOVED", name))
            continue
        for number, (_, rtype, rlabel) in rfields.items():
            if number not in wfields:
                if rlabel == "required":
                    out.append(_message("REQUIRED_FIELD_ADDED", f"{name}#{number}"))
                continue
            _, wtype, wlabel = wfields[number]
            where = f"{name}#{number}"
            if rtype != wtype:
                if rtype in SCALARS and wtype in SCALARS:
                    if not any(rtype in g and wtype in g for g in COMPATIBLE_GROUPS):
                        out.append(_message("FIELD_SCALAR_KIND_CHANGED", where))
                elif rtype in SCALARS or wtype in SCALARS:
                    out.append(_message("FIELD_KIND_CHANGED", where))
                else:
                    out.append(_message("FIELD_NAMED_TYPE_CHANGED", where))
            if (rlabel == "repeated") != (wlabel == "repeated"):
                out.append(_message("FIELD_KIND_CHANGED", where))
            elif (rlabel == "required") != (wlabel == "required"):
                out.append(_message("REQUIRED_FIELD_CHANGED", where))
        for number, (_, _, wlabel) in wfields.items():
            if number not in rfields and wlabel == "required":
                out.append(_message("REQUIRED_FIELD_REMOVED", f"{name}#{number}"))
    return out


# --- FileDescriptorProto -> .proto text ----------------------------------------------------


def to_proto_text(fdp: descriptor_pb2.FileDescriptorProto) -> str:
    """The `.proto` text of a descriptor, as Confluent answers a schema registered in base64
    when no `format=serialized` is asked for. Field options other than the label are left
    out (Confluent prints them); names of message and enum types are fully qualified."""
    syntax = fdp.syntax or "proto2"
    out = [f'syntax = "{syntax}";']
    if fdp.package:
        out.append(f"package {fdp.package};")
    out += [f'import "{dep}";' for dep in fdp.dependency]
    for m in fdp.message_type:
        _render_message(m, syntax, out, "")
    for e in fdp.enum_type:
        _render_enum(e, out, "")
    return "\n".join(out) + "\n"


def _render_enum(e: descriptor_pb2.EnumDescriptorProto, out: list[str], indent: str) -> None:
    out.append(f"{indent}enum {e.name} {{")
    out += [f"{indent}  {v.name} = {v.number};" for v in e.value]
    out.append(f"{indent}}}")


def _field_type(f: descriptor_pb2.FieldDescriptorProto) -> str:
    return str(f.type_name) if f.type_name else _TYPE_NAMES[f.type]


def _render_message(
    m: descriptor_pb2.DescriptorProto, syntax: str, out: list[str], indent: str
) -> None:
    out.append(f"{indent}message {m.name} {{")
    inner = indent + "  "
    entries = {n.name: n for n in m.nested_type if n.options.map_entry}
    oneofs_done: set[int] = set()
    for f in m.field:
        entry = entries.get(f.type_name.rpartition(".")[2]) if f.type_name else None
        if entry is not None and f.label == descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED:
            key, value = entry.field[0], entry.field[1]
            out.append(
                f"{inner}map<{_field_type(key)}, {_field_type(value)}> {f.name} = {f.number};"
            )
            continue
        if f.HasField("oneof_index") and not f.proto3_optional:
            if f.oneof_index in oneofs_done:
                continue
            oneofs_done.add(f.oneof_index)
            out.append(f"{inner}oneof {m.oneof_decl[f.oneof_index].name} {{")
            out += [
                f"{inner}  {_field_type(g)} {g.name} = {g.number};"
                for g in m.field
                if g.HasField("oneof_index") and g.oneof_index == f.oneof_index
            ]
            out.append(f"{inner}}}")
            continue
        label = _LABELS[f.label]
        if syntax == "proto3" and not f.proto3_optional and label == "optional":
            label = ""
        prefix = f"{label} " if label else ""
        out.append(f"{inner}{prefix}{_field_type(f)} {f.name} = {f.number};")
    for nested in m.nested_type:
        if not nested.options.map_entry:
            _render_message(nested, syntax, out, inner)
    for e in m.enum_type:
        _render_enum(e, out, inner)
    out.append(f"{indent}}}")


# --- .proto text -> FileDescriptorProto ----------------------------------------------------

_SCALAR_TYPES = {
    name: getattr(descriptor_pb2.FieldDescriptorProto, f"TYPE_{name.upper()}") for name in SCALARS
}
_LABEL_OF = {
    "optional": descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL,
    "required": descriptor_pb2.FieldDescriptorProto.LABEL_REQUIRED,
    "repeated": descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED,
}


def to_descriptor(text: str) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto of `.proto` text of the subset `parse` reads, for
    `format=serialized`: what protoc would write, with type names resolved by protobuf's
    scoping rules (innermost scope first). A type defined in an imported file cannot be
    told from here to be a message or an enum: it is taken for a message.

    Raises:
      ValueError: the text is outside the subset.
    """
    source = re.sub(r"//[^\n]*|/\*.*?\*/", " ", text, flags=re.S)
    tokens = _TOKEN.findall(source)
    fdp = descriptor_pb2.FileDescriptorProto(name="schema.proto")
    kinds: dict[str, int] = {}  # full name -> TYPE_MESSAGE | TYPE_ENUM
    pending: list[tuple[str, descriptor_pb2.FieldDescriptorProto]] = []  # (scope, field)
    pos = 0

    def expect(p: int, token: str) -> int:
        if p >= len(tokens) or tokens[p] != token:
            raise ValueError(f"expected {token!r} at token {p}")
        return p + 1

    def skip(p: int) -> int:
        end = _statement_end(tokens, p)
        if end is None:
            raise ValueError("unterminated statement")
        return end

    def enum(p: int, scope: str, into: list[descriptor_pb2.EnumDescriptorProto]) -> int:
        e = descriptor_pb2.EnumDescriptorProto(name=tokens[p])
        kinds[f"{scope}.{e.name}"] = descriptor_pb2.FieldDescriptorProto.TYPE_ENUM
        p = expect(p + 1, "{")
        while tokens[p] != "}":
            if tokens[p] in ("option", "reserved"):
                p = skip(p)
            elif tokens[p] == ";":
                p += 1
            else:
                name, p = tokens[p], expect(p + 1, "=")
                e.value.add(name=name, number=int(tokens[p]))
                p = skip(p)
        into.append(e)
        return p + 1

    def field(m: descriptor_pb2.DescriptorProto, p: int, scope: str, label: str) -> int:
        f = m.field.add()
        if tokens[p] == "map":
            key, value = tokens[p + 2], tokens[p + 4]
            p += 6
            f.name, f.number = tokens[p], int(tokens[p + 2])
            entry = m.nested_type.add(
                name="".join(w.capitalize() for w in f.name.split("_")) + "Entry"
            )
            entry.options.map_entry = True
            for number, (fname, ftype) in enumerate((("key", key), ("value", value)), 1):
                ef = entry.field.add(name=fname, number=number, label=_LABEL_OF["optional"])
                _set_type(ef, ftype, f"{scope}.{entry.name}", pending)
            f.label = _LABEL_OF["repeated"]
            f.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
            f.type_name = f"{scope}.{entry.name}"
        else:
            ftype = tokens[p]
            f.name, f.number = tokens[p + 1], int(tokens[p + 3])
            expect(p + 2, "=")
            f.label = _LABEL_OF[label]
            _set_type(f, ftype, scope, pending)
            p += 1
        return skip(p + 2)

    def message(p: int, scope: str, into: Any) -> int:
        m = into.add(name=tokens[p])
        full = f"{scope}.{m.name}"
        kinds[full] = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
        p = expect(p + 1, "{")
        synthetic: list[descriptor_pb2.FieldDescriptorProto] = []
        while tokens[p] != "}":
            t = tokens[p]
            if t == "message":
                p = message(p + 1, full, m.nested_type)
            elif t == "enum":
                nested: list[descriptor_pb2.EnumDescriptorProto] = []
                p = enum(p + 1, full, nested)
                m.enum_type.extend(nested)
            elif t in ("option", "reserved", "extensions", "extend"):
                p = skip(p)
            elif t == ";":
                p += 1
            elif t == "oneof":
                index = len(m.oneof_decl)
                m.oneof_decl.add(name=tokens[p + 1])
                p = expect(p + 2, "{")
                while tokens[p] != "}":
                    if tokens[p] in ("option", ";"):
                        p = skip(p) if tokens[p] == "option" else p + 1
                        continue
                    p = field(m, p, full, "optional")
                    m.field[-1].oneof_index = index
                p += 1
            else:
                label = "optional"
                if t in _LABEL_OF:
                    label, p = t, p + 1
                p = field(m, p, full, label)
                if t == "optional" and fdp.syntax == "proto3":
                    synthetic.append(m.field[-1])
        for f in synthetic:  # proto3 `optional`: a synthetic oneof each, after the real ones
            f.proto3_optional = True
            f.oneof_index = len(m.oneof_decl)
            m.oneof_decl.add(name=f"_{f.name}")
        return p + 1

    try:
        while pos < len(tokens):
            t = tokens[pos]
            if t == "syntax":
                fdp.syntax = tokens[pos + 2].strip("\"'")
                pos = skip(pos)
            elif t == "package":
                fdp.package = tokens[pos + 1]
                pos = skip(pos)
            elif t == "import":
                fdp.dependency.extend(x[1:-1] for x in tokens[pos + 1 : pos + 3] if x[:1] in "\"'")
                pos = skip(pos)
            elif t == "message":
                pos = message(pos + 1, f".{fdp.package}" if fdp.package else "", fdp.message_type)
            elif t == "enum":
                top: list[descriptor_pb2.EnumDescriptorProto] = []
                pos = enum(pos + 1, f".{fdp.package}" if fdp.package else "", top)
                fdp.enum_type.extend(top)
            elif t == ";":
                pos += 1
            else:
                pos = skip(pos)
    except (IndexError, ValueError) as e:
        raise ValueError(f"Invalid schema {text!r}: {e}") from e
    for scope, f in pending:
        _resolve_type(f, scope, kinds)
    return fdp


def _set_type(
    f: descriptor_pb2.FieldDescriptorProto,
    ftype: str,
    scope: str,
    pending: list[tuple[str, descriptor_pb2.FieldDescriptorProto]],
) -> None:
    if ftype in _SCALAR_TYPES:
        f.type = _SCALAR_TYPES[ftype]
    else:
        f.type_name = ftype
        pending.append((scope, f))


def _resolve_type(
    f: descriptor_pb2.FieldDescriptorProto, scope: str, kinds: dict[str, int]
) -> None:
    name = str(f.type_name)
    if name.startswith("."):
        candidates = [name]
    else:
        parts = scope.split(".")
        candidates = [".".join([*parts[:i], name]) for i in range(len(parts), 0, -1)]
        candidates.append(f".{name}")
    for candidate in candidates:
        if candidate in kinds:
            f.type_name = candidate
            f.type = kinds[candidate]
            return
    f.type_name = name if name.startswith(".") else f".{name}"
    f.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
