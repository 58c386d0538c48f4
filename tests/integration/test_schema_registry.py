"""The schema registry (kmock.schema.registry.port) with real registry clients: confluent-kafka's
SchemaRegistryClient and its Avro, JSON and Protobuf serdes producing and consuming typed
records through kmock, python-schema-registry-client, restarts, and a kill -9 of `kmock serve`
right after an answered registration.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.schema_registry.error import SchemaRegistryError
from confluent_kafka.schema_registry.json_schema import JSONDeserializer, JSONSerializer
from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
from confluent_kafka.serialization import MessageField, SerializationContext
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from broker.pytest_plugin import KmockBroker
from tests.integration.harness import deadline, unique

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
USER_V1 = {
    "type": "record",
    "name": "User",
    "namespace": "kmock.test",
    "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}],
}
# compatible (BACKWARD): a new field with a default
USER_V2 = {
    **USER_V1,
    "fields": [*USER_V1["fields"], {"name": "email", "type": "string", "default": ""}],
}
# incompatible: a new field without a default
USER_BAD = {**USER_V1, "fields": [*USER_V1["fields"], {"name": "phone", "type": "string"}]}
ORDER_JSON = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "item": {"type": "string"}},
    "required": ["id"],
    "additionalProperties": False,
}


@pytest.fixture
def registry(fresh_broker: Callable[..., KmockBroker]) -> KmockBroker:
    return fresh_broker(**{"kmock.schema.registry.port": 0})


def _roundtrip(
    broker: KmockBroker, topic: str, serializer: Any, deserializer: Any, values: list[Any]
) -> list[Any]:
    """Produce `values` serialized, consume them back deserialized."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for v in values:
        ctx = SerializationContext(topic, MessageField.VALUE)
        producer.produce(topic, value=serializer(v, ctx), partition=0)  # in order
    assert producer.flush(15) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap_servers,
            "group.id": unique("sr"),
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([topic])
    out: list[Any] = []
    try:
        while len(out) < len(values):
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            assert msg.value()[0] == 0  # Confluent's wire format: magic byte, then the id
            ctx = SerializationContext(topic, MessageField.VALUE)
            out.append(deserializer(msg.value(), ctx))
    finally:
        consumer.close()
    return out


@deadline(90)
def test_avro_serde_roundtrip_evolution_and_409(registry: KmockBroker) -> None:
    client = SchemaRegistryClient({"url": registry.schema_registry_url})
    topic = unique("users")
    serializer = AvroSerializer(client, json.dumps(USER_V1))
    deserializer = AvroDeserializer(client)
    users = [{"name": f"u{i}", "age": 20 + i} for i in range(3)]
    assert _roundtrip(registry, topic, serializer, deserializer, users) == users

    subject = f"{topic}-value"
    v1 = client.get_latest_version(subject)
    assert v1.version == 1
    assert json.loads(v1.schema.schema_str) == USER_V1
    v2_id = client.register_schema(subject, Schema(json.dumps(USER_V2), "AVRO"))
    assert v2_id != v1.schema_id
    assert client.get_version(subject, 2).schema_id == v2_id
    assert client.test_compatibility(subject, Schema(json.dumps(USER_BAD), "AVRO")) is False
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(json.dumps(USER_BAD), "AVRO"))
    assert refused.value.http_status_code == 409
    assert refused.value.error_code == 409
    assert client.get_versions(subject) == [1, 2]

    # the same schema under another subject keeps its id (Confluent's global ids)
    assert client.register_schema("elsewhere", Schema(json.dumps(USER_V2), "AVRO")) == v2_id


@deadline(90)
def test_json_serde_roundtrip_evolution_and_409(registry: KmockBroker) -> None:
    client = SchemaRegistryClient({"url": registry.schema_registry_url})
    topic = unique("orders")
    serializer = JSONSerializer(json.dumps(ORDER_JSON), client)
    deserializer = JSONDeserializer(None, schema_registry_client=client)  # fetches it by id
    orders = [{"id": i, "item": f"thing {i}"} for i in range(3)]
    assert _roundtrip(registry, topic, serializer, deserializer, orders) == orders

    subject = f"{topic}-value"
    # BACKWARD: the new schema reads old data. A property added to a closed model: fine.
    wider = {**ORDER_JSON, "properties": {**ORDER_JSON["properties"], "note": {"type": "string"}}}
    client.register_schema(subject, Schema(json.dumps(wider), "JSON"))
    # requiring a property old data lacks: refused
    stricter = {**wider, "required": ["id", "note"]}
    with pytest.raises(SchemaRegistryError) as refused:
        client.register_schema(subject, Schema(json.dumps(stricter), "JSON"))
    assert refused.value.http_status_code == 409
    assert client.get_versions(subject) == [1, 2]


def _order_class(extra_field: str | None = None, first_type: int | None = None) -> Any:
    """A Protobuf message class built at run time, as protoc's output would define it."""
    f = descriptor_pb2.FieldDescriptorProto
    fields = [
        f(name="id", number=1, type=first_type or f.TYPE_INT64, label=f.LABEL_OPTIONAL),
        f(name="item", number=2, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL),
    ]
    if extra_field:
        fields.append(f(name=extra_field, number=3, type=f.TYPE_STRING, label=f.LABEL_OPTIONAL))
    name = f"kmock_order_{unique('v')}.proto"
    fdp = descriptor_pb2.FileDescriptorProto(
        name=name,
        package="kmocktest",
        syntax="proto3",
        message_type=[descriptor_pb2.DescriptorProto(name="Order", field=fields)],
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kmocktest.Order"))


@deadline(90)
def test_protobuf_serde_roundtrip_evolution_and_409(registry: KmockBroker) -> None:
    client = SchemaRegistryClient({"url": registry.schema_registry_url})
    topic = unique("proto")
    order = _order_class()
    serializer = ProtobufSerializer(order, client, {"use.deprecated.format": False})
    deserializer = ProtobufDeserializer(order, {"use.deprecated.format": False}, client)
    values = [order(id=i, item=f"thing {i}") for i in range(3)]
    assert _roundtrip(registry, topic, serializer, deserializer, values) == values

    subject = f"{topic}-value"
    # the serializer registered a base64 descriptor: answered as .proto text unless asked
    # for format=serialized, as Confluent answers
    url = f"{registry.schema_registry_url}/subjects/{subject}/versions/1"
    status, as_text = _http("GET", url)
    assert status == 200
    assert as_text["schema"].startswith('syntax = "proto3";\npackage kmocktest;\n')
    assert "  int64 id = 1;\n" in as_text["schema"]
    status, serialized = _http("GET", url + "?format=serialized")
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(serialized["schema"]))
    assert [m.name for m in fdp.message_type] == ["Order"]
    evolved = _order_class(extra_field="note")
    ProtobufSerializer(evolved, client, {"use.deprecated.format": False})(
        evolved(id=9, item="x", note="n"), SerializationContext(topic, MessageField.VALUE)
    )
    assert client.get_versions(subject) == [1, 2]
    changed = _order_class(first_type=descriptor_pb2.FieldDescriptorProto.TYPE_STRING)
    with pytest.raises(SchemaRegistryError) as refused:
        ProtobufSerializer(changed, client, {"use.deprecated.format": False})(
            changed(id="nine", item="x"), SerializationContext(topic, MessageField.VALUE)
        )
    assert refused.value.http_status_code == 409


ORDER_PROTO = """
syntax = "proto3";
package kmocktest;
// an order, as a .proto file (what Java's serializer and `kmock schemas register` send)
message Order {
  int64 id = 1;
  string item = 2;
}
"""


@deadline(90)
def test_protobuf_schema_registered_as_proto_text_serves_python_serdes(
    registry: KmockBroker,
) -> None:
    topic = unique("proto-text")
    # registered by another tool (a Java producer, `kmock schemas register`): this client's
    # cache would otherwise hold the text for the id
    status, body = _http(
        "POST",
        f"{registry.schema_registry_url}/subjects/{topic}-value/versions",
        {"schema": ORDER_PROTO, "schemaType": "PROTOBUF"},
    )
    assert status == 200, body
    schema_id = body["id"]
    client = SchemaRegistryClient({"url": registry.schema_registry_url})
    order = _order_class()
    serializer = ProtobufSerializer(
        order,
        client,
        {
            "use.deprecated.format": False,
            "auto.register.schemas": False,
            "use.latest.version": True,
        },
    )
    deserializer = ProtobufDeserializer(order, {"use.deprecated.format": False}, client)
    values = [order(id=i, item=f"thing {i}") for i in range(3)]
    assert _roundtrip(registry, topic, serializer, deserializer, values) == values
    # the bytes carry the id of the text schema, which the registry serves as a descriptor
    ctx = SerializationContext(topic, MessageField.VALUE)
    assert serializer(values[0], ctx)[1:5] == schema_id.to_bytes(4, "big")
    fetched = client.get_schema(schema_id, fmt="serialized")
    fdp = descriptor_pb2.FileDescriptorProto.FromString(base64.b64decode(fetched.schema_str))
    assert [f.name for f in fdp.message_type[0].field] == ["id", "item"]


@deadline(90)
def test_python_schema_registry_client(registry: KmockBroker) -> None:
    from schema_registry.client import SchemaRegistryClient as PsrClient
    from schema_registry.client import errors, schema

    client = PsrClient(url=registry.schema_registry_url)
    subject = unique("psr")
    first = client.register(subject, schema.AvroSchema(USER_V1))
    assert first >= 1
    assert client.register(subject, schema.AvroSchema(USER_V1)) == first
    assert client.test_compatibility(subject, schema.AvroSchema(USER_V2)) is True
    assert client.test_compatibility(subject, schema.AvroSchema(USER_BAD)) is False
    second = client.register(subject, schema.AvroSchema(USER_V2))
    assert second != first
    with pytest.raises(errors.ClientError) as refused:
        client.register(subject, schema.AvroSchema(USER_BAD))
    assert refused.value.http_code == 409
    assert client.get_versions(subject) == [1, 2]
    fetched = client.get_by_id(first)
    assert fetched is not None
    assert fetched.raw_schema == USER_V1
    json_subject = unique("psr-json")
    jid = client.register(json_subject, schema.JsonSchema(ORDER_JSON))
    assert client.get_schema(json_subject).schema_id == jid


@deadline(90)
def test_schemas_and_ids_survive_a_restart(registry: KmockBroker) -> None:
    url = registry.schema_registry_url
    client = SchemaRegistryClient({"url": url})
    a = client.register_schema("a-value", Schema(json.dumps(USER_V1), "AVRO"))
    b = client.register_schema("a-value", Schema(json.dumps(USER_V2), "AVRO"))
    j = client.register_schema("j-value", Schema(json.dumps(ORDER_JSON), "JSON"))
    client.set_compatibility("j-value", "FULL")
    client.delete_version("a-value", 1)
    registry.restart()
    assert registry.schema_registry_url == url  # the port is pinned like the broker's
    fresh = SchemaRegistryClient({"url": url})  # no cache
    assert fresh.get_versions("a-value") == [2]
    assert fresh.get_version("a-value", 2).schema_id == b
    assert json.loads(fresh.get_schema(a).schema_str) == USER_V1  # ids outlive versions
    assert fresh.get_schema(j).schema_type == "JSON"
    assert fresh.get_compatibility("j-value") == "FULL"
    # ids keep counting from where they were
    c = fresh.register_schema("c-value", Schema('{"type": "long"}', "AVRO"))
    assert c == max(a, b, j) + 1


def _http(method: str, url: str, body: Any = None) -> tuple[int, Any]:
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(
        url,
        data=data,
        method=method,
        headers={"Content-Type": "application/vnd.schemaregistry.v1+json"},
    )
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def _serve(data_dir: Path, port: int = 0) -> tuple[subprocess.Popen[str], str]:
    """`kmock serve` in its own process; returns it and its registry's URL."""
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "cli.main",
            "serve",
            "--listeners",
            "PLAINTEXT://127.0.0.1:0",
            "--log-dirs",
            str(data_dir),
            "--schema-registry-port",
            str(port),
        ],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # bounded by the scenario's deadline
        if "schema registry on http://" in line:
            return proc, line.split("schema registry on ")[1].strip()
    raise AssertionError(f"kmock serve exited with {proc.wait()} before serving the registry")


@deadline(120)
def test_kill_9_after_an_answered_registration_loses_nothing(tmp_path: Path) -> None:
    proc, url = _serve(tmp_path)
    try:
        answers = []
        for i in range(5):
            field = {"name": f"f{i}", "type": "int", "default": i}
            schema = {**USER_V1, "fields": [*USER_V1["fields"], field]} if i else USER_V1
            status, body = _http(
                "POST", f"{url}/subjects/k-value/versions", {"schema": json.dumps(schema)}
            )
            assert status == 200, body
            answers.append((body["id"], schema))
        os.kill(proc.pid, signal.SIGKILL)  # right after the last answer
        proc.wait(10)
    finally:
        if proc.poll() is None:
            proc.kill()
        assert proc.stdout is not None
        proc.stdout.close()
    proc, url = _serve(tmp_path)
    try:
        for n, (schema_id, schema) in enumerate(answers, start=1):
            status, body = _http("GET", f"{url}/subjects/k-value/versions/{n}")
            assert status == 200, body
            assert body["id"] == schema_id
            assert json.loads(body["schema"]) == schema
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(20)
        assert proc.stdout is not None
        proc.stdout.close()
