"""Compatibility tables per schema type: (reader, writer) pairs and whether the reader reads
what the writer wrote. The registry turns them into levels (test_registry.py)."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from google.protobuf import descriptor_pb2

from schemas import avro, json_schema, protobuf


def _record(*fields: dict[str, Any], name: str = "R") -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": list(fields)}


def _f(name: str, type_: Any, **kw: Any) -> dict[str, Any]:
    return {"name": name, "type": type_, **kw}


def _enum(*symbols: str, **kw: Any) -> dict[str, Any]:
    return {"type": "enum", "name": "E", "symbols": list(symbols), **kw}


AVRO_TABLE = [
    # (reader, writer, compatible)
    ("int", "int", True),
    ("long", "int", True),
    ("double", "int", True),
    ("float", "long", True),
    ("int", "long", False),
    ("bytes", "string", True),
    ("string", "bytes", True),
    ("string", "int", False),
    (["null", "string"], "string", True),
    ("string", ["null", "string"], False),
    (["null", "long"], ["null", "int"], True),
    (["null", "int"], ["null", "long"], False),
    (_record(_f("a", "int")), _record(_f("a", "int"), _f("b", "string")), True),
    (_record(_f("a", "int"), _f("b", "string")), _record(_f("a", "int")), False),
    (_record(_f("a", "int"), _f("b", "string", default="")), _record(_f("a", "int")), True),
    (_record(_f("a", "long")), _record(_f("a", "int")), True),
    (_record(_f("a", "int")), _record(_f("a", "long")), False),
    (_record(_f("a", "int"), name="X"), _record(_f("a", "int"), name="Y"), False),
    (_record(_f("b", "int", aliases=["a"])), _record(_f("a", "int")), True),
    (_enum("A", "B", "C"), _enum("A", "B"), True),
    (_enum("A", "B"), _enum("A", "B", "C"), False),
    (_enum("A", "B", default="A"), _enum("A", "B", "C"), True),
    ({"type": "array", "items": "long"}, {"type": "array", "items": "int"}, True),
    ({"type": "map", "values": "int"}, {"type": "map", "values": "string"}, False),
    ({"type": "fixed", "name": "F", "size": 4}, {"type": "fixed", "name": "F", "size": 8}, False),
    ({"type": "int", "logicalType": "date"}, "int", True),
]


@pytest.mark.parametrize(("reader", "writer", "compatible"), AVRO_TABLE)
def test_avro_resolution(reader: Any, writer: Any, compatible: bool) -> None:
    r = avro.parse(json.dumps(reader), [])
    w = avro.parse(json.dumps(writer), [])
    assert (avro.check(r, w) == []) is compatible


def test_avro_recursive_record_terminates() -> None:
    node = _record(_f("v", "int"), _f("next", ["null", "Node"], default=None), name="Node")
    s = avro.parse(json.dumps(node), [])
    assert avro.check(s, s) == []


def test_avro_named_type_from_a_reference() -> None:
    ref = json.dumps(
        {"type": "record", "name": "Addr", "namespace": "x", "fields": [_f("city", "string")]}
    )
    s = avro.parse(json.dumps(_record(_f("home", "x.Addr"))), [ref])
    assert avro.check(s, s) == []
    with pytest.raises(ValueError, match=r"x\.Addr"):
        avro.parse(json.dumps(_record(_f("home", "x.Addr"))), [])


@pytest.mark.parametrize(
    "text",
    [
        "{",
        '{"type": "recrd"}',
        '{"type": "record", "name": "R"}',
        "[1]",
        '"nope"',
        # a default that is not of its field's type (Confluent validates defaults too)
        '{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int", "default": "x"}]}',
    ],
)
def test_avro_malformed_schemas_raise_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):  # with a message saying why
        avro.parse(text, [])


def _obj(props: dict[str, Any], required: list[str] = (), additional: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = list(required)
    if additional is not None:
        out["additionalProperties"] = additional
    return out


INT, STR, NUM = {"type": "integer"}, {"type": "string"}, {"type": "number"}
JSON_TABLE = [
    # (reader, writer, compatible)
    (NUM, INT, True),
    (INT, NUM, False),
    (STR, INT, False),
    ({"type": ["string", "null"]}, STR, True),
    (STR, {"type": ["string", "null"]}, False),
    ({}, STR, True),
    (STR, {}, False),
    # a property added: fine when the writer's model is closed, not when it is open
    (_obj({"a": INT, "b": STR}), _obj({"a": INT}, additional=False), True),
    (_obj({"a": INT, "b": STR}), _obj({"a": INT}), False),
    (_obj({"a": INT, "b": STR}), _obj({"a": INT}, additional=STR), True),
    # a property removed: fine when the reader's model is open, not when closed
    (_obj({"a": INT}), _obj({"a": INT, "b": STR}), True),
    (_obj({"a": INT}, additional=False), _obj({"a": INT, "b": STR}, additional=False), False),
    # required
    (_obj({"a": INT}, ["a"]), _obj({"a": INT}), False),
    (_obj({"a": INT}), _obj({"a": INT}, ["a"]), True),
    # additionalProperties narrowed
    (_obj({"a": INT}, additional=False), _obj({"a": INT}), False),
    (_obj({"a": NUM}), _obj({"a": INT}), True),
    ({"enum": ["x", "y", "z"]}, {"enum": ["x", "y"]}, True),
    ({"enum": ["x"]}, {"enum": ["x", "y"]}, False),
    ({"type": "string", "maxLength": 5}, {"type": "string", "maxLength": 10}, False),
    ({"type": "string", "maxLength": 10}, {"type": "string", "maxLength": 5}, True),
    ({"type": "array", "items": NUM}, {"type": "array", "items": INT}, True),
    ({"type": "array", "items": INT}, {"type": "array", "items": STR}, False),
    # not covered: must be equal
    ({"type": "string", "pattern": "^a"}, {"type": "string", "pattern": "^b"}, False),
    ({"oneOf": [INT, STR]}, {"oneOf": [INT, STR]}, True),
]


@pytest.mark.parametrize(("reader", "writer", "compatible"), JSON_TABLE)
def test_json_schema_compatibility(reader: Any, writer: Any, compatible: bool) -> None:
    r = json_schema.parse(json.dumps(reader), [])
    w = json_schema.parse(json.dumps(writer), [])
    assert (json_schema.check(r, w) == []) is compatible


@pytest.mark.parametrize("text", ["{", "[]", '{"type": "strang"}', '{"required": "a"}'])
def test_json_malformed_schemas_raise_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):  # with a message saying why
        json_schema.parse(text, [])


PROTO_V1 = """
syntax = "proto3";
package shop;
import "google/protobuf/timestamp.proto";
// an order
message Order {
  int64 id = 1;
  string item = 2;
  repeated string tags = 3;
  map<string, int32> counts = 4;
  oneof payment { string card = 5; string iban = 6; }
  message Line { int32 qty = 1; }
  repeated Line lines = 7 [packed = false];
  reserved 9;
  enum Kind { A = 0; }
}
"""


def _proto(text: str) -> protobuf.ProtobufSchema:
    return protobuf.parse(text, [])


def test_protobuf_text_parser_reads_the_subset() -> None:
    s = _proto(PROTO_V1)
    assert s.imports == ["google/protobuf/timestamp.proto"]
    assert s.messages[".shop.Order"][3] == ("tags", "string", "repeated")
    assert s.messages[".shop.Order"][4] == ("counts", "map<string,int32>", "repeated")
    assert s.messages[".shop.Order"][6] == ("iban", "string", "optional")
    assert s.messages[".shop.Order"][7] == ("lines", "Line", "repeated")
    assert s.messages[".shop.Order.Line"] == {1: ("qty", "int32", "optional")}


PROTO_TABLE = [
    # (reader, writer, compatible)
    (PROTO_V1, PROTO_V1, True),
    (PROTO_V1.replace("string item = 2;", "string item = 2; string note = 8;"), PROTO_V1, True),
    (PROTO_V1.replace("string item = 2;", ""), PROTO_V1, True),  # removed: fine
    (PROTO_V1.replace("int64 id = 1;", "int32 id = 1;"), PROTO_V1, True),  # same group
    (PROTO_V1.replace("int64 id = 1;", "string id = 1;"), PROTO_V1, False),
    (PROTO_V1.replace("int64 id = 1;", "Line id = 1;"), PROTO_V1, False),
    (PROTO_V1.replace("string item = 2;", "repeated string item = 2;"), PROTO_V1, False),
    (PROTO_V1.replace("string item = 2;", "bytes item = 2;"), PROTO_V1, True),
    (PROTO_V1.replace("message Line { int32 qty = 1; }", ""), PROTO_V1, False),
    (PROTO_V1.replace("string item = 2;", "string name = 2;"), PROTO_V1, True),  # renamed
]


@pytest.mark.parametrize(("reader", "writer", "compatible"), PROTO_TABLE)
def test_protobuf_compatibility(reader: str, writer: str, compatible: bool) -> None:
    assert (protobuf.check(_proto(reader), _proto(writer)) == []) is compatible


def test_protobuf_required_fields_proto2() -> None:
    v1 = 'syntax = "proto2"; message M { optional int32 a = 1; }'
    v2 = 'syntax = "proto2"; message M { optional int32 a = 1; required int32 b = 2; }'
    assert protobuf.check(_proto(v2), _proto(v1)) != []  # new reader requires what old lacks
    assert protobuf.check(_proto(v1), _proto(v2)) != []  # removed a required field


def test_protobuf_file_descriptor_in_base64_as_confluent_serializers_send_it() -> None:
    f = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(
        name="o.proto",
        package="shop",
        syntax="proto3",
        message_type=[
            descriptor_pb2.DescriptorProto(
                name="Order",
                field=[f(name="id", number=1, type=f.TYPE_INT64, label=f.LABEL_OPTIONAL)],
            )
        ],
    )
    text = base64.b64encode(fdp.SerializeToString()).decode()
    s = protobuf.parse(text, [])
    assert s.messages == {".shop.Order": {1: ("id", "int64", "optional")}}
    assert protobuf.check(s, _proto(PROTO_V1)) != []  # lacks Order.Line
    assert protobuf.check(_proto(PROTO_V1), s) == []


@pytest.mark.parametrize(
    "text",
    [
        "message {",
        "message M { int32 = 1; }",
        'syntax = "proto3";',
        "message M { int32 a = x; }",
        "garbage here",
        "message M { int32 a = 1;",
    ],
)
def test_protobuf_malformed_schemas_raise_value_error(text: str) -> None:
    with pytest.raises(ValueError, match=r"\S"):  # with a message saying why
        protobuf.parse(text, [])


def test_a_descriptor_prints_as_proto_text_that_parses_to_the_same_model() -> None:
    f = descriptor_pb2.FieldDescriptorProto
    entry = descriptor_pb2.DescriptorProto(
        name="CountsEntry",
        field=[
            f(name="key", number=1, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL),
            f(name="value", number=2, type=f.TYPE_INT32, label=f.LABEL_OPTIONAL),
        ],
        options=descriptor_pb2.MessageOptions(map_entry=True),
    )
    line = descriptor_pb2.DescriptorProto(
        name="Line", field=[f(name="qty", number=1, type=f.TYPE_INT32, label=f.LABEL_OPTIONAL)]
    )
    order = descriptor_pb2.DescriptorProto(
        name="Order",
        field=[
            f(name="id", number=1, type=f.TYPE_INT64, label=f.LABEL_OPTIONAL),
            f(name="tags", number=3, type=f.TYPE_STRING, label=f.LABEL_REPEATED),
            f(
                name="counts",
                number=4,
                type=f.TYPE_MESSAGE,
                label=f.LABEL_REPEATED,
                type_name=".shop.Order.CountsEntry",
            ),
            f(name="card", number=5, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL, oneof_index=0),
            f(name="iban", number=6, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL, oneof_index=0),
            f(
                name="lines",
                number=7,
                type=f.TYPE_MESSAGE,
                label=f.LABEL_REPEATED,
                type_name=".shop.Order.Line",
            ),
            f(
                name="kind",
                number=8,
                type=f.TYPE_ENUM,
                label=f.LABEL_OPTIONAL,
                type_name=".shop.Kind",
            ),
        ],
        nested_type=[entry, line],
        oneof_decl=[descriptor_pb2.OneofDescriptorProto(name="payment")],
    )
    kind = descriptor_pb2.EnumDescriptorProto(
        name="Kind", value=[descriptor_pb2.EnumValueDescriptorProto(name="A", number=0)]
    )
    fdp = descriptor_pb2.FileDescriptorProto(
        name="o.proto",
        package="shop",
        syntax="proto3",
        dependency=["other.proto"],
        message_type=[order],
        enum_type=[kind],
    )
    text = protobuf.to_proto_text(fdp)
    assert text.startswith('syntax = "proto3";\npackage shop;\nimport "other.proto";\n')
    assert "  map<string, int32> counts = 4;\n" in text
    assert "  oneof payment {\n    string card = 5;\n    string iban = 6;\n  }\n" in text
    from_text = protobuf.parse(text, [])
    from_descriptor = protobuf.parse(base64.b64encode(fdp.SerializeToString()).decode(), [])
    assert from_text.messages == from_descriptor.messages
    assert from_text.imports == ["other.proto"]


def test_proto_text_becomes_a_descriptor_protobuf_loads() -> None:
    from google.protobuf import descriptor_pool, message_factory, timestamp_pb2

    text = PROTO_V1.replace("int64 id = 1;", "int64 id = 1;\n  google.protobuf.Timestamp at = 10;")
    text = text.replace("string item = 2;", "optional string item = 2;\n  Kind kind = 11;")
    fdp = protobuf.to_descriptor(text)
    pool = descriptor_pool.DescriptorPool()
    pool.AddSerializedFile(timestamp_pb2.DESCRIPTOR.serialized_pb)
    pool.Add(fdp)
    order_cls = message_factory.GetMessageClass(pool.FindMessageTypeByName("shop.Order"))
    order = order_cls(id=7, item="x", tags=["a"], card="c", kind=0)
    order.counts["k"] = 3
    order.lines.add(qty=2)
    order.at.seconds = 5
    again = order_cls.FromString(order.SerializeToString())
    assert again == order
    assert again.HasField("item")  # proto3 optional: presence
    assert again.WhichOneof("payment") == "card"
    # the same model as the text it came from
    from_descriptor = protobuf.parse(base64.b64encode(fdp.SerializeToString()).decode(), [])
    assert from_descriptor.messages == protobuf.parse(text, []).messages
