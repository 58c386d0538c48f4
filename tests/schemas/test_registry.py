"""The registry core: ids, versions, levels, deletes, config, mode, references, errors, and
replay of its own records rebuilding an equal state. Writes are applied as the broker applies
them: `registry.apply(write)` once the records are appended."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from schemas import Registry, RegistryError, Write, decode_record


def avro_record(*fields: tuple[str, str, Any]) -> dict[str, Any]:
    out = []
    for name, type_, default in fields:
        f: dict[str, Any] = {"name": name, "type": type_}
        if default is not None:
            f["default"] = default
        out.append(f)
    return {"schema": json.dumps({"type": "record", "name": "R", "fields": out})}


V1 = avro_record(("a", "int", None))
V2 = avro_record(("a", "int", None), ("b", "string", ""))  # adds a field with a default
V3 = avro_record(("a", "int", None), ("b", "string", ""), ("c", "long", 0))
NO_DEFAULT = avro_record(("a", "int", None), ("z", "string", None))
DROPS_A = avro_record(("b", "string", ""))


def applied(reg: Registry, write: Write) -> Any:
    reg.apply(write)
    return write.body


def error(fn: Any, *args: Any, **kw: Any) -> RegistryError:
    with pytest.raises(RegistryError) as e:
        fn(*args, **kw)
    return e.value


def replayed(reg: Registry, log: list[Write]) -> Registry:
    """A registry rebuilt from the bytes of every record `log` wrote."""
    fresh = Registry()
    for write in log:
        for r in write.records:
            record = decode_record(r.key_bytes(), r.value_bytes())
            assert record is not None
            fresh.replay(record)
    return fresh


def test_ids_are_global_and_versions_per_subject() -> None:
    reg = Registry()
    assert applied(reg, reg.register("a", V1)) == {"id": 1}
    assert applied(reg, reg.register("b", V2)) == {"id": 2}
    assert applied(reg, reg.register("a", V2)) == {"id": 2}  # same schema elsewhere: same id
    assert reg.list_versions("a") == [1, 2]
    assert reg.get_version("a", "latest").id == 2
    # registering what is already there writes nothing and answers its id
    assert reg.register("a", {"schema": V1["schema"].replace(",", ", ")}) == Write({"id": 1})


def test_avro_identity_ignores_whitespace_and_the_long_form_of_primitives() -> None:
    reg = Registry()
    assert applied(reg, reg.register("a", {"schema": '{"type": "string"}'})) == {"id": 1}
    assert applied(reg, reg.register("b", {"schema": ' "string" '})) == {"id": 1}
    assert reg.get_version("a", "1").schema == '"string"'  # as Avro prints it
    long_form = avro_record(("a", "int", None))["schema"].replace('"int"', '{"type": "int"}')
    assert applied(reg, reg.register("c", V1)) == applied(
        reg, reg.register("d", {"schema": long_form})
    )


def test_backward_refuses_a_field_without_default_with_409() -> None:
    reg = Registry()
    applied(reg, reg.register("s", V1))
    e = error(reg.register, "s", NO_DEFAULT)
    assert (e.http_status, e.error_code) == (409, 409)
    assert "READER_FIELD_MISSING_DEFAULT_VALUE" in e.message
    assert reg.list_versions("s") == [1]


@pytest.mark.parametrize(
    ("level", "candidate", "ok"),
    [
        ("BACKWARD", NO_DEFAULT, False),
        ("BACKWARD", DROPS_A, True),  # the new reader skips a
        ("FORWARD", DROPS_A, False),  # the old reader needs a, which has no default
        ("FORWARD", NO_DEFAULT, True),  # old reader skips z
        ("FORWARD", V3, True),
        ("FULL", NO_DEFAULT, False),
        ("FULL", V3, True),
        ("NONE", {"schema": '"string"'}, True),
    ],
)
def test_levels(level: str, candidate: dict[str, Any], ok: bool) -> None:
    reg = Registry()
    applied(reg, reg.set_config("s", {"compatibility": level}))
    applied(reg, reg.register("s", V2))
    assert reg.check_compatibility("s", None, candidate)["is_compatible"] is ok


def test_transitive_checks_every_live_version_the_plain_level_only_the_latest() -> None:
    reg = Registry()
    applied(reg, reg.register("s", avro_record(("a", "int", None))))
    applied(reg, reg.register("s", avro_record(("a", "int", None), ("b", "int", 0))))
    # reads v2 (which has b) but not v1 (which lacks b, and the reader has no default)
    needs_b = avro_record(("a", "long", None), ("b", "long", None))
    assert reg.check_compatibility("s", None, needs_b)["is_compatible"] is True
    assert reg.check_compatibility("s", "1", needs_b)["is_compatible"] is False
    applied(reg, reg.set_config("s", {"compatibility": "BACKWARD_TRANSITIVE"}))
    result = reg.check_compatibility("s", None, needs_b)
    assert result["is_compatible"] is False
    assert "{oldSchemaVersion: 1}" in result["messages"]
    assert error(reg.register, "s", needs_b).error_code == 409
    applied(reg, reg.delete_config("s"))
    assert applied(reg, reg.register("s", needs_b)) == {"id": 3}


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"schema": "{"}, 422, 42201),
        ({"schema": '{"type": "recrd"}'}, 422, 42201),
        ({"schema": "{}", "schemaType": "XML"}, 422, 42201),
        ({"schema": ""}, 422, 42201),
        ({"schema": '{"type": "strang"}', "schemaType": "JSON"}, 422, 42201),
        ({"schema": "message {", "schemaType": "PROTOBUF"}, 422, 42201),
        (
            {"schema": '"int"', "references": [{"name": "x", "subject": "no", "version": 1}]},
            422,
            42201,
        ),
        ({"schema": '"int"', "references": "x"}, 422, 422),
        (["schema"], 422, 422),
        ({"schema": '{"type": "array", "items": ' * 5000 + '"int"' + "}" * 5000}, 422, 42201),
    ],
)
def test_invalid_requests_change_nothing(body: Any, status: int, code: int) -> None:
    reg = Registry()
    applied(reg, reg.register("s", V1))
    e = error(reg.register, "s", body)
    assert (e.http_status, e.error_code) == (status, code)
    assert reg.list_versions("s") == [1]
    assert reg.max_id == 1


def test_reads_answer_confluent_codes() -> None:
    reg = Registry()
    applied(reg, reg.register("s", V1))
    assert error(reg.list_versions, "nope").error_code == 40401
    assert error(reg.get_version, "s", "7").error_code == 40402
    assert error(reg.get_version, "s", "0").error_code == 42202
    assert error(reg.get_version, "s", "x").error_code == 42202
    assert error(reg.get_by_id, 99).error_code == 40403
    assert error(reg.lookup, "s", V2).error_code == 40403
    assert error(reg.lookup, "nope", V1).error_code == 40401
    assert reg.lookup("s", V1).version == 1
    assert error(reg.set_config, None, {"compatibility": "SIDEWAYS"}).error_code == 42203
    assert error(reg.get_config, "s").error_code == 40408
    assert reg.get_config("s", default_to_global=True) == {"compatibilityLevel": "BACKWARD"}
    assert error(reg.set_mode, None, {"mode": "FAST"}).error_code == 42204
    assert error(reg.get_mode, "s").error_code == 40409


def test_soft_then_hard_deletes() -> None:
    reg = Registry()
    log = [reg.register("s", V1)]
    reg.apply(log[-1])
    log.append(reg.register("s", V2))
    reg.apply(log[-1])
    assert error(reg.delete_version, "s", "1", permanent=True).error_code == 40407
    log.append(reg.delete_version("s", "1"))
    assert applied(reg, log[-1]) == 1
    assert reg.list_versions("s") == [2]
    assert reg.list_versions("s", deleted=True) == [1, 2]
    assert error(reg.delete_version, "s", "1").error_code == 40406
    assert error(reg.delete_subject, "s", permanent=True).error_code == 40405
    log.append(reg.delete_subject("s"))
    assert applied(reg, log[-1]) == [2]
    assert reg.list_subjects() == []
    assert reg.list_subjects(deleted=True) == ["s"]
    assert error(reg.delete_subject, "s").error_code == 40404
    # a new version after a soft delete continues the numbering
    log.append(reg.register("s", V1))
    reg.apply(log[-1])
    assert reg.list_versions("s") == [3]
    assert reg.get_version("s", "3").id == 1
    assert replayed(reg, log).subjects == reg.subjects
    log.append(reg.delete_subject("s"))
    reg.apply(log[-1])
    log.append(reg.delete_subject("s", permanent=True))
    assert applied(reg, log[-1]) == [1, 2, 3]
    assert reg.list_subjects(deleted=True) == []
    assert error(reg.get_by_id, 1).error_code == 40403  # no version uses it any more
    log.append(reg.register("again", V1))
    assert applied(reg, log[-1]) == {"id": 1}  # the same schema gets its id back
    log.append(reg.delete_subject("again"))
    reg.apply(log[-1])
    log.append(reg.delete_subject("again", permanent=True))
    reg.apply(log[-1])
    again = replayed(reg, log)
    assert again.subjects == {}
    assert again.max_id == 2


def test_modes() -> None:
    reg = Registry()
    applied(reg, reg.register("s", V1))
    applied(reg, reg.set_mode("s", {"mode": "READONLY"}))
    assert error(reg.register, "s", V2).error_code == 42205
    assert error(reg.delete_subject, "s").error_code == 42205
    applied(reg, reg.register("t", V1))  # other subjects are writable
    assert error(reg.set_mode, None, {"mode": "IMPORT"}).error_code == 42205
    applied(reg, reg.set_mode("s", {"mode": "READWRITE"}))
    assert reg.get_mode("s") == {"mode": "READWRITE"}
    applied(reg, reg.delete_mode("s"))
    applied(reg, reg.set_mode(None, {"mode": "IMPORT"}, force=True))
    body = {**NO_DEFAULT, "id": 100, "version": 5}
    assert applied(reg, reg.register("s", body)) == {"id": 100}  # no compatibility check
    assert reg.get_version("s", "5").id == 100
    e = error(reg.register, "s", {**V3, "id": 100, "version": 6})
    assert e.error_code == 42207  # id 100 is another schema
    applied(reg, reg.set_mode(None, {"mode": "READWRITE"}))
    assert error(reg.register, "s", {**V3, "id": 7}).error_code == 42205
    assert applied(reg, reg.register("s", V3)) == {"id": 101}


def test_references_and_referencedby() -> None:
    reg = Registry()
    addr = {
        "schema": json.dumps(
            {
                "type": "record",
                "name": "Addr",
                "namespace": "x",
                "fields": [{"name": "city", "type": "string"}],
            }
        )
    }
    applied(reg, reg.register("addr", addr))
    user = {
        "schema": json.dumps(
            {"type": "record", "name": "User", "fields": [{"name": "home", "type": "x.Addr"}]}
        ),
        "references": [{"name": "x.Addr", "subject": "addr", "version": 1}],
    }
    uid = applied(reg, reg.register("user", user))["id"]
    assert reg.referenced_by("addr", "1") == [uid]
    assert reg.get_version("user", "1").body()["references"] == user["references"]
    assert error(reg.delete_subject, "addr").error_code == 42206
    assert error(reg.register, "user2", {"schema": user["schema"]}).error_code == 42201


def test_json_and_protobuf_subjects() -> None:
    reg = Registry()
    j = {
        "schema": json.dumps({"type": "object", "properties": {"a": {"type": "integer"}}}),
        "schemaType": "JSON",
    }
    p = {"schema": 'syntax = "proto3"; message M { int64 a = 1; }', "schemaType": "PROTOBUF"}
    assert applied(reg, reg.register("j", j)) == {"id": 1}
    assert applied(reg, reg.register("p", p)) == {"id": 2}
    assert reg.get_by_id(1).body()["schemaType"] == "JSON"
    bad = {**p, "schema": 'syntax = "proto3"; message M { string a = 1; }'}
    assert error(reg.register, "p", bad).error_code == 409
    assert error(reg.register, "j", {"schema": '"int"'}).error_code == 409  # AVRO over JSON


def test_replay_skips_unknown_keys_and_rejects_malformed_ones() -> None:
    assert decode_record(b'{"keytype":"CLEAR_SUBJECT","subject":"s"}', None) is None
    assert decode_record(None, b"{}") is None
    with pytest.raises(ValueError, match="version"):
        decode_record(b'{"keytype":"SCHEMA","subject":"s"}', b"{}")
    with pytest.raises(ValueError, match="JSON object"):
        decode_record(b'{"keytype":"CONFIG","subject":null}', b"[1]")


def test_record_format_is_confluents() -> None:
    reg = Registry()
    write = reg.register("s", V1)
    (record,) = write.records
    assert record.key_bytes() == b'{"keytype":"SCHEMA","subject":"s","version":1,"magic":1}'
    value = json.loads(record.value_bytes() or b"")
    assert value == {
        "subject": "s",
        "version": 1,
        "id": 1,
        "schema": value["schema"],
        "references": [],
        "deleted": False,
    }
    cfg = reg.set_config(None, {"compatibility": "full"}).records[0]
    assert cfg.key_bytes() == b'{"keytype":"CONFIG","subject":null,"magic":0}'
    assert cfg.value_bytes() == b'{"compatibilityLevel":"FULL"}'


JSON_OBJ = {"schema": '{"type": "object"}', "schemaType": "JSON"}
OPERATIONS = st.sampled_from(
    [
        ("register", V1),
        ("register", V2),
        ("register", V3),
        ("register", NO_DEFAULT),
        ("register", JSON_OBJ),
        ("delete_version", "1"),
        ("delete_version", "latest"),
        ("hard_delete_version", "1"),
        ("delete_subject", None),
        ("hard_delete_subject", None),
        ("config", "NONE"),
        ("config", "FULL_TRANSITIVE"),
        ("mode", "READONLY"),
        ("mode", "READWRITE"),
    ]
)


def _operation(reg: Registry, subject: str, op: str, arg: Any) -> Write:
    if op == "register":
        return reg.register(subject, arg)
    if op in ("delete_version", "hard_delete_version"):
        return reg.delete_version(subject, arg, permanent=op.startswith("hard"))
    if op in ("delete_subject", "hard_delete_subject"):
        return reg.delete_subject(subject, permanent=op.startswith("hard"))
    if op == "config":
        return reg.set_config(subject, {"compatibility": arg})
    return reg.set_mode(subject, {"mode": arg})


def _check_effect(reg: Registry, subject: str, op: str, arg: Any, write: Write) -> None:
    """What the state says after an operation that was accepted."""
    if op == "register":
        assert reg.lookup(subject, arg).id == write.body["id"]
    elif op == "delete_version":
        live = reg.list_versions(subject) if subject in reg.list_subjects() else []
        assert write.body not in live
        assert write.body in reg.list_versions(subject, deleted=True)
    elif op == "hard_delete_version":
        assert write.body not in reg.subjects.get(subject, {})
    elif op == "delete_subject":
        assert subject not in reg.list_subjects()
        assert subject in reg.list_subjects(deleted=True)
    elif op == "hard_delete_subject":
        assert subject not in reg.list_subjects(deleted=True)
    elif op == "config":
        assert reg.get_config(subject) == {"compatibilityLevel": arg}
    else:
        assert reg.get_mode(subject) == {"mode": arg}


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["a", "b"]), OPERATIONS), max_size=25))
def test_replaying_the_records_of_any_session_rebuilds_its_state(ops: list[Any]) -> None:
    reg = Registry()
    log: list[Write] = []
    refused: set[int] = set()
    for subject, (op, arg) in ops:
        try:
            write = _operation(reg, subject, op, arg)
        except RegistryError as e:
            refused.add(e.http_status)
            continue
        reg.apply(write)
        log.append(write)
        _check_effect(reg, subject, op, arg, write)
    assert refused <= {404, 409, 422}
    again = replayed(reg, log)
    assert again.subjects == reg.subjects
    assert again.configs == reg.configs
    assert again.modes == reg.modes
    assert again.max_id == reg.max_id
    # ids stay global: one id per distinct schema text and type
    seen: dict[int, tuple[str, str]] = {}
    for versions in reg.subjects.values():
        for v in versions.values():
            assert seen.setdefault(v.id, (v.schema_type, v.schema)) == (v.schema_type, v.schema)
