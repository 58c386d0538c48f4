"""`kmock report ...` run in-process (it reuses the test session, and leaves it running)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from pipeline import cli
from tests.pipeline.logdata import group_log, values, write_segment


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = group_log(tmp_path_factory.mktemp("data"))
    write_segment(
        root, "orders", 1, 20, [values(20, 2)[:-5]]
    )  # a torn tail: nothing new is readable
    return root


def test_register_adds_report_to_a_parent_parser() -> None:
    parser = argparse.ArgumentParser(prog="kmock")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve")
    cli.register(sub)
    args = parser.parse_args(
        ["report", "lag", "--data-dir", "a", "--data-dir", "b", "--group", "g", "--png", "x.png"]
    )
    assert (args.report, args.data_dir, args.group, args.png, args.output) == (
        "lag",
        ["a", "b"],
        ["g"],
        "x.png",
        "table",
    )
    assert args.func is cli._run_lag
    args = parser.parse_args(["report", "export", "--out", "o", "--topic", "t", "--partition", "1"])
    assert (args.out, args.topic, args.partition, args.check, args.data_dir) == (
        "o",
        ["t"],
        [1],
        "crc",
        None,
    )


def test_report_lag_as_json_with_a_chart(
    spark, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    png = tmp_path / "lag.png"
    assert (
        cli.main(
            ["report", "lag", "--data-dir", str(data_dir), "--output", "json", "--png", str(png)]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert [(r["group"], r["topic"], r["partition"], r["lag"]) for r in out["lag"]] == [
        ("g1", "orders", 0, 20),
        ("g1", "orders", 1, 0),
        ("g2", "ghost", 0, None),
        ("g2", "orders", 0, 0),
        ("g2", "orders", 1, 8),
    ]
    assert out["lag"][0]["commit_timestamp"] == "2023-11-14T22:13:20.005000+00:00"
    assert [(s["topic"], s["partition"], s["position"]) for s in out["skipped"]] == [
        ("orders", 1, 0)
    ]
    assert png.read_bytes()[:4] == b"\x89PNG"


def test_report_lag_table_reports_what_it_skipped(
    spark, data_dir: Path, capsys: pytest.CaptureFixture
) -> None:
    assert cli.main(["report", "lag", "--data-dir", str(data_dir), "--group", "g1"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == [
        "GROUP  TOPIC   PARTITION  COMMITTED  LOG-END  LAST-STABLE  LAG",
        "g1     orders  0          60         80       80           20",
        "g1     orders  1          20         20       20           0",
    ]
    assert "skipped" in captured.err
    assert "orders-1" in captured.err
    assert "truncated" in captured.err


def test_report_groups(spark, data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["report", "groups", "--data-dir", str(data_dir), "--group", "g1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == [
        "GROUP",
        "GEN",
        "STATE",
        "TIME",
        "PROTOCOL",
        "LEADER",
        "MEMBERS",
        "JOINED",
        "LEFT",
        "ASSIGNED",
    ]
    assert [line.split()[:3] for line in lines[1:]] == [
        ["g1", "1", "Stable"],
        ["g1", "2", "Stable"],
        ["g1", "3", "Stable"],
    ]
    assert lines[3].split()[-3:] == ["-", "c1-a", "orders-0>c2-b"]


def test_report_snapshot_json(spark, data_dir: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["report", "snapshot", "--data-dir", str(data_dir), "--output", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert len(out["offsets"]) == 5
    assert [
        (g["group"], g["generation"], [m["member_id"] for m in g["members"]]) for g in out["groups"]
    ] == [
        ("g1", 3, ["c2-b"]),
    ]
    assert out["skipped"] == []


def test_report_export_prints_progress_and_a_summary(
    spark, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    out_dir = tmp_path / "export"
    assert (
        cli.main(
            [
                "report",
                "export",
                "--data-dir",
                str(data_dir),
                "--out",
                str(out_dir),
                "--topic",
                "orders",
            ]
        )
        == 0
    )
    captured = capsys.readouterr()
    assert captured.out.splitlines()[:4] == [
        "TOPIC   PARTITION  ROWS",
        "orders  0          80",
        "orders  1          20",
        f"exported 100 records to {out_dir}",
    ]
    assert "export: 4/4 tasks (100%)" in captured.err
    assert "truncated" in captured.err


def test_kmock_cli_runs_the_reports(spark, data_dir: Path) -> None:
    import io

    from cli.main import main as kmock

    stdout, stderr = io.StringIO(), io.StringIO()
    assert (
        kmock(
            ["report", "lag", "--data-dir", str(data_dir), "--group", "g2", "--output", "json"],
            stdout=stdout,
            stderr=stderr,
        )
        == 0
    )
    assert [r["lag"] for r in json.loads(stdout.getvalue())["lag"]] == [None, 0, 8]


def test_a_missing_data_dir_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    assert cli.main(["report", "lag", "--data-dir", str(tmp_path / "nope")]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_conf_takes_spark_settings_as_spark_submit_does(capsys: pytest.CaptureFixture) -> None:
    parser = argparse.ArgumentParser(prog="kmock")
    cli.register(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(
        ["report", "groups", "--conf", "spark.executor.memory=1g", "--conf", "spark.a= x=y"]
    )
    assert args.conf == [("spark.executor.memory", "1g"), ("spark.a", " x=y")]
    for bad in ("spark.executor.memory", "=1g"):
        with pytest.raises(SystemExit) as exited:
            parser.parse_args(["report", "lag", "--conf", bad])
        assert exited.value.code == 2
        assert f"--conf takes key=value (a Spark setting), not {bad!r}" in capsys.readouterr().err


def test_export_of_a_topic_not_on_disk_writes_an_empty_file_with_the_schema(
    spark, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    import pyarrow.parquet as pq

    from pipeline.source import RECORDS

    out_dir = tmp_path / "export"
    argv = ["report", "export", "--data-dir", str(data_dir), "--out", str(out_dir)]
    assert cli.main([*argv, "--topic", "nosuchtopic"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines() == ["no records", f"exported 0 records to {out_dir}"]
    assert f"kmock report: no partition of topic nosuchtopic in {data_dir}\n" in captured.err
    table = pq.read_table(out_dir)
    assert table.num_rows == 0
    assert table.schema.names == RECORDS.names
    assert table.schema.field("key").type == RECORDS.field("key").type
    assert table.schema.field("timestamp").type == RECORDS.field("timestamp").type
    assert spark.read.parquet(str(out_dir)).count() == 0
    assert cli.main([*argv, "--topic", "nosuchtopic", "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {
        "path": str(out_dir),
        "skipped": [],
        "partitions": [],
    }


def test_reports_over_a_data_dir_with_nothing_in_it_say_so(
    spark, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    empty = str(tmp_path)
    expected = {
        "lag": ["no committed offsets"],
        "groups": ["no group metadata"],
        "snapshot": ["no committed offsets", "", "no groups"],
    }
    for report, lines in expected.items():
        assert cli.main(["report", report, "--data-dir", empty]) == 0
        captured = capsys.readouterr()
        assert (captured.out.splitlines(), captured.err) == (lines, "")
    assert cli.main(["report", "lag", "--data-dir", empty, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"lag": [], "skipped": []}
