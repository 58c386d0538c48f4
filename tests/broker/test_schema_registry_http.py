"""The schema registry's HTTP endpoint through real sockets: Confluent's status codes and
bodies for bad requests (which change nothing), the `_schemas` records a write appends and
a restart replays, strict durability, `kmock schemas` and `kmock dump-log` on `_schemas`."""

from __future__ import annotations

import json
from typing import Any

import pytest
import trio

from broker.server import serve
from protocol.records import build_batch
from tests.cli.harness import cli
from tests.conftest import broker_config

AVRO = json.dumps({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]})
AVRO_V2 = json.dumps(
    {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "int"}, {"name": "b", "type": "int", "default": 0}],
    }
)
SCENARIO_S = 30


async def http(
    address: tuple[str, int], method: str, path: str, body: Any = None, *, raw: bytes | None = None
) -> tuple[int, Any]:
    """One request on its own connection; (status, decoded JSON body)."""
    payload = raw if raw is not None else (b"" if body is None else json.dumps(body).encode())
    head = (
        f"{method} {path} HTTP/1.1\r\nHost: x\r\n"
        f"Content-Type: application/vnd.schemaregistry.v1+json\r\n"
        f"Content-Length: {len(payload)}\r\n\r\n"
    ).encode()
    stream = await trio.open_tcp_stream(*address)
    async with stream:
        await stream.send_all(head + payload)
        data = b""
        while chunk := await stream.receive_some(65536):
            data += chunk
    head_bytes, _, body_bytes = data.partition(b"\r\n\r\n")
    status = int(head_bytes.split(b" ")[1])
    assert b"Content-Type: application/vnd.schemaregistry.v1+json" in head_bytes
    try:
        return status, json.loads(body_bytes)
    except json.JSONDecodeError:
        return status, body_bytes.decode()


async def start(nursery: trio.Nursery, data_dir: Any, **overrides: Any) -> Any:
    config = broker_config(data_dir, **{"kmock.schema.registry.port": 0, **overrides})
    with trio.fail_after(SCENARIO_S):
        return await nursery.start(serve, config)


@pytest.mark.parametrize(
    ("method", "path", "body", "status", "code"),
    [
        ("POST", "/subjects/s/versions", b"{not json", 400, 400),
        ("POST", "/subjects/s/versions", b"", 400, 400),
        ("POST", "/subjects/s/versions", b'["schema"]', 422, 422),
        ("POST", "/subjects/s/versions", b'{"schema": "{\\"type\\": \\"recrd\\"}"}', 422, 42201),
        ("POST", "/subjects/s/versions", b'{"schema": "{}", "schemaType": "XML"}', 422, 42201),
        (
            "POST",
            "/subjects/s/versions",
            b'{"schema": "message {", "schemaType": "PROTOBUF"}',
            422,
            42201,
        ),
        ("POST", "/subjects/s/versions", b'{"schema": "{\\"type\\": \\"long\\"}"}', 409, 409),
        ("GET", "/subjects/nope/versions", None, 404, 40401),
        ("GET", "/subjects/s/versions/9", None, 404, 40402),
        ("GET", "/subjects/s/versions/zero", None, 422, 42202),
        ("GET", "/schemas/ids/99", None, 404, 40403),
        ("PUT", "/config", b'{"compatibility": "SIDEWAYS"}', 422, 42203),
        ("PUT", "/mode", b'{"mode": "FAST"}', 422, 42204),
        ("PUT", "/mode", b'{"mode": "IMPORT"}', 422, 42205),
        ("DELETE", "/subjects/s?permanent=true", None, 404, 40405),
        ("GET", "/config/s", None, 404, 40408),
        ("GET", "/no/such/path", None, 404, 404),
        ("PATCH", "/subjects", None, 405, 405),
    ],
)
async def test_bad_requests_get_confluents_codes_and_change_nothing(
    nursery: trio.Nursery,
    tmp_path: Any,
    method: str,
    path: str,
    body: bytes | None,
    status: int,
    code: int,
) -> None:
    b = await start(nursery, tmp_path / "data")
    address = b.schema_registry_address
    with trio.fail_after(SCENARIO_S):
        assert await http(address, "POST", "/subjects/s/versions", {"schema": AVRO}) == (
            200,
            {"id": 1},
        )
        end = b.topics.get("_schemas").partitions[0].log.log_end_offset
        got_status, got = await http(address, method, path, raw=body or b"")
        assert (got_status, got["error_code"]) == (status, code), got
        assert isinstance(got["message"], str)
        assert got["message"]
        assert b.topics.get("_schemas").partitions[0].log.log_end_offset == end
        assert await http(address, "GET", "/subjects/s/versions") == (200, [1])


async def test_oversized_and_chunked_bodies_are_refused(nursery: trio.Nursery, tmp_path: Any):
    b = await start(nursery, tmp_path / "data")
    address = b.schema_registry_address
    with trio.fail_after(SCENARIO_S):
        stream = await trio.open_tcp_stream(*address)
        async with stream:
            await stream.send_all(
                b"POST /subjects/s/versions HTTP/1.1\r\nContent-Length: 999999999\r\n\r\n"
            )
            data = b""
            while chunk := await stream.receive_some(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 413 ")
        stream = await trio.open_tcp_stream(*address)
        async with stream:
            await stream.send_all(
                b"POST /subjects/s/versions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
            )
            data = b""
            while chunk := await stream.receive_some(65536):
                data += chunk
        assert data.startswith(b"HTTP/1.1 400 ")
        assert await http(address, "GET", "/subjects") == (200, [])


async def test_writes_are_records_in_schemas_and_a_restart_replays_them(tmp_path: Any) -> None:
    data_dir = tmp_path / "data"
    async with trio.open_nursery() as nursery:
        b = await start(nursery, data_dir, **{"kmock.durability": "strict"})
        address = b.schema_registry_address
        with trio.fail_after(SCENARIO_S):
            plog = b.topics.get("_schemas").partitions[0].log
            assert await http(address, "POST", "/subjects/s/versions", {"schema": AVRO}) == (
                200,
                {"id": 1},
            )
            assert plog.flushed_offset >= plog.log_end_offset == 1  # fsynced before the answer
            await http(address, "POST", "/subjects/s/versions", {"schema": AVRO_V2})
            await http(address, "PUT", "/config/s", {"compatibility": "FULL"})
            await http(address, "PUT", "/config", {"compatibility": "NONE"})
            assert await http(address, "DELETE", "/config") == (200, {"compatibilityLevel": "NONE"})
            assert await http(address, "GET", "/config") == (
                200,
                {"compatibilityLevel": "BACKWARD"},
            )
            await http(address, "PUT", "/mode/s", {"mode": "READONLY"})
            assert (await http(address, "DELETE", "/subjects/s/versions/1"))[1]["error_code"] == (
                42205
            )
            await http(address, "DELETE", "/mode/s")
            assert await http(address, "DELETE", "/subjects/s/versions/1") == (200, 1)
            assert await http(address, "GET", "/schemas/types") == (
                200,
                ["JSON", "PROTOBUF", "AVRO"],
            )
            assert await http(address, "GET", "/schemas/ids/1/schema") == (200, json.loads(AVRO))
            # what another producer might leave in _schemas: replay skips it, with a warning
            foreign = [
                (b"not json", b"x", (), 0),
                (b'{"keytype":"SCHEMA","subject":"x","version":1,"magic":1}', b'{"id":5}', (), 0),
                (b'{"keytype":"SOMETHING_NEWER","magic":0}', b"{}", (), 0),
            ]
            plog_end = plog.log_end_offset
            b.topics.get("_schemas").partitions[0].append(build_batch(foreign), wall_ms=0)
            assert plog.log_end_offset == plog_end + 3
            nursery.cancel_scope.cancel()
    async with trio.open_nursery() as nursery:
        b = await start(nursery, data_dir)
        address = b.schema_registry_address
        with trio.fail_after(SCENARIO_S):
            assert await http(address, "GET", "/subjects/s/versions") == (200, [2])
            assert await http(address, "GET", "/subjects/s/versions?deleted=true") == (200, [1, 2])
            assert await http(address, "GET", "/config/s") == (200, {"compatibilityLevel": "FULL"})
            assert (await http(address, "GET", "/mode/s"))[1]["error_code"] == 40409
            status, body = await http(address, "GET", "/schemas/ids/2/versions")
            assert (status, body) == (200, [{"subject": "s", "version": 2}])
            # the next id continues after the replayed ones
            assert await http(address, "POST", "/subjects/t/versions", {"schema": '"long"'}) == (
                200,
                {"id": 3},
            )
            nursery.cancel_scope.cancel()

    code, out, err = await cli("dump-log", str(data_dir / "_schemas-0"), "--output", "json")
    assert code == 0, err
    records = [r for batch in json.loads(out)["files"][0]["batches"] for r in batch["records"]]
    assert [r["decode_error"] for r in records if "decode_error" in r] == [
        "not a _schemas record: Expecting value: line 1 column 1 (char 0)"
    ]
    records = [r for r in records if "decode_error" not in r]
    assert records[0]["key"] == {"keytype": "SCHEMA", "subject": "s", "version": 1, "magic": 1}
    assert records[0]["value"]["id"] == 1
    assert {"keytype": "CONFIG", "subject": "s", "magic": 0} in [r["key"] for r in records]
    assert {"keytype": "MODE", "subject": "s", "magic": 0} in [r["key"] for r in records]
    assert [r["value"] for r in records if r["key"]["keytype"] == "MODE"][-1] is None
    code, out, _ = await cli("dump-log", str(data_dir / "_schemas-0"))
    assert 'key: {"keytype":"SCHEMA","subject":"s","version":1,"magic":1} payload: {' in out


async def test_kmock_schemas_cli(nursery: trio.Nursery, tmp_path: Any) -> None:
    b = await start(nursery, tmp_path / "data")
    url = "http://{}:{}".format(*b.schema_registry_address)
    schema_file = tmp_path / "r.avsc"
    schema_file.write_text(AVRO)
    with trio.fail_after(SCENARIO_S):
        code, out, err = await cli(
            "schemas", "register", "s", "--file", str(schema_file), "--url", url
        )
        assert (code, out) == (0, "registered under s: id 1\n"), err
        code, out, err = await cli("schemas", "compat", "s", "--schema", '"string"', "--url", url)
        assert code == 3
        assert out.startswith("incompatible\n")
        code, out, err = await cli("schemas", "compat", "s", "--schema", AVRO_V2, "--url", url)
        assert (code, out) == (0, "compatible\n")
        code, out, err = await cli("schemas", "register", "s", "--schema", '"string"', "--url", url)
        assert code == 3
        assert "(error 409)" in err
        code, out, err = await cli("schemas", "list", "--url", url, "--output", "json")
        assert json.loads(out) == [
            {"subject": "s", "versions": [1], "latest_id": 1, "schema_type": "AVRO"}
        ]
        code, out, err = await cli("schemas", "get", "s", "--url", url, "--output", "json")
        assert json.loads(json.loads(out)["schema"]) == json.loads(AVRO)
        code, out, err = await cli("schemas", "get", "--id", "1", "--url", url)
        first, schema = out.splitlines()
        assert first == "# id 1 AVRO"
        assert json.loads(schema) == json.loads(AVRO)
        code, out, err = await cli("schemas", "delete", "s", "--url", url)
        assert (code, out) == (0, "deleted s version(s) 1\n")
        code, out, err = await cli("schemas", "get", "s", "--url", url)
        assert code == 1
        assert err == "kmock: Subject 's' not found. (error 40401)\n"
        proto = tmp_path / "order.proto"
        proto.write_text('syntax = "proto3";\nmessage Order { int64 id = 1; }\n')
        code, out, err = await cli("schemas", "register", "p", "--file", str(proto), "--url", url)
        assert (code, out) == (0, "registered under p: id 2\n"), err
        code, out, err = await cli("schemas", "get", "p", "--url", url)
        assert out.startswith("# p v1 id 2 PROTOBUF\n")
        code, out, err = await cli(
            "schemas", "register", "q", "--schema", '"int"', "--reference", "bad", "--url", url
        )
        assert (code, err) == (1, "kmock: --reference 'bad': expected NAME=SUBJECT:VERSION\n")
        code, out, err = await cli("schemas", "list", "--url", "http://127.0.0.1:1")
        assert code == 1
        assert "cannot reach the schema registry" in err


@pytest.mark.parametrize(
    "garbage",
    [
        b"\x00\x01\x02\r\n\r\n",
        b"GET / HTTP/2\r\n\r\n",
        b"GET /subjects HTTP/1.1\r\nno colon here\r\n\r\n",
        b"POST /subjects/s/versions HTTP/1.1\r\nContent-Length: -5\r\n\r\n",
        b"POST /subjects/s/versions HTTP/1.1\r\nContent-Length: 10\r\n\r\nshort",
        b"GET /" + b"a" * 20000 + b" HTTP/1.1\r\n\r\n",
        b"GET /subjects HTTP/1.1\r\n",  # the head never ends
        b"",  # connected, closed
        b"GET http://[::1/subjects HTTP/1.1\r\n\r\n",
    ],
)
async def test_hostile_requests_get_an_answer_or_a_close_and_the_registry_serves_on(
    nursery: trio.Nursery, tmp_path: Any, garbage: bytes
) -> None:
    b = await start(nursery, tmp_path / "data")
    address = b.schema_registry_address
    with trio.fail_after(SCENARIO_S):
        stream = await trio.open_tcp_stream(*address)
        async with stream:
            await stream.send_all(garbage)
            await stream.send_eof()
            data = b""
            while chunk := await stream.receive_some(65536):
                data += chunk
        assert data == b"" or data.split(b" ")[1] in (b"400", b"431"), data[:80]
        assert await http(address, "POST", "/subjects/s/versions", {"schema": AVRO}) == (
            200,
            {"id": 1},
        )
