"""`kmock report export --schemas`: the registry's latest schemas from the `_schemas` topic."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import cli
from pipeline.registry import SCHEMAS_FILE, latest_schemas
from schemas.records import SchemaRecord
from tests.pipeline.logdata import batch, values, write_segment


def schema(subject: str, version: int, id_: int, text: str, **extra: object) -> SchemaRecord:
    value = {"subject": subject, "version": version, "id": id_, "schema": text, **extra}
    return SchemaRecord("SCHEMA", subject, version, value)


RECORDS = [
    schema("orders-value", 1, 1, '"string"'),
    schema("orders-value", 2, 2, '{"type":"object"}', schemaType="JSON"),
    SchemaRecord("CONFIG", None, value={"compatibilityLevel": "FULL"}),
    schema("users-value", 1, 3, '"int"'),
    schema("users-value", 2, 4, '"long"'),
    SchemaRecord("SCHEMA", "users-value", 2, None),  # version 2 deleted for good
    schema("gone-value", 1, 5, '"bytes"'),
    SchemaRecord("DELETE_SUBJECT", "gone-value", value={"subject": "gone-value", "version": 1}),
    schema("soft-value", 1, 6, '"int"'),
    schema("soft-value", 2, 7, '"long"', deleted=True),
    SchemaRecord("NOOP", None),
]

EXPECTED = [
    {"subject": "orders-value", "version": 2, "id": 2, "schemaType": "JSON",
     "schema": '{"type":"object"}'},
    {"subject": "soft-value", "version": 1, "id": 6, "schemaType": "AVRO", "schema": '"int"'},
    {"subject": "users-value", "version": 1, "id": 3, "schemaType": "AVRO", "schema": '"int"'},
]  # fmt: skip


def pairs(records: list[SchemaRecord]) -> list[tuple[bytes, bytes | None]]:
    return [(r.key_bytes(), r.value_bytes()) for r in records]


def test_latest_schemas_honours_tombstones_and_subject_deletes() -> None:
    assert latest_schemas(pairs(RECORDS)) == EXPECTED
    assert latest_schemas([(b'{"keytype":"OTHER"}', b"{}"), (None, b"x")]) == []
    with pytest.raises(ValueError, match="a SCHEMA key needs a subject and an integer version"):
        latest_schemas([(b'{"keytype":"SCHEMA","subject":"s"}', b"{}")])


def test_export_with_schemas_writes_them_beside_the_data(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    data = tmp_path / "data"
    records = pairs(RECORDS)
    write_segment(data, "_schemas", 0, 0, [batch(0, records[:5]), batch(5, records[5:])])
    write_segment(data, "orders", 0, 0, [values(0, 3)])
    out = tmp_path / "out"
    argv = ["report", "export", "--data-dir", str(data), "--out", str(out), "--topic", "orders"]
    assert cli.main([*argv, "--schemas", "--output", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["schemas"] == str(out / SCHEMAS_FILE)
    assert json.loads((out / SCHEMAS_FILE).read_text()) == EXPECTED
    assert document["partitions"] == [{"topic": "orders", "partition": 0, "rows": 3}]
    assert pq.read_table(out).num_rows == 3  # the JSON file does not disturb Parquet readers

    assert cli.main(argv) == 0  # without --schemas: no file
    assert not (out / SCHEMAS_FILE).exists()


def test_export_schemas_without_a_schemas_topic_is_an_empty_list(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    data = tmp_path / "data"
    write_segment(data, "orders", 0, 0, [values(0, 1)])
    out = tmp_path / "out"
    assert (
        cli.main(["report", "export", "--data-dir", str(data), "--out", str(out), "--schemas"]) == 0
    )
    assert json.loads((out / SCHEMAS_FILE).read_text()) == []
    assert "exported the latest schema of each subject" in capsys.readouterr().out


def test_a_bad_schemas_record_is_named_and_fails_the_export(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    data = tmp_path / "data"
    good = pairs(RECORDS[:1])
    write_segment(data, "_schemas", 0, 0, [batch(0, [*good, (b'{"keytype":"SCHEMA"}', b"{}")])])
    out = tmp_path / "out"
    assert (
        cli.main(["report", "export", "--data-dir", str(data), "--out", str(out), "--schemas"]) == 1
    )
    err = capsys.readouterr().err
    assert "--schemas: _schemas-0 offset 1 is not a schema registry record" in err
