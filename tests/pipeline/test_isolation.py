"""read_committed over logs holding committed, aborted and open transactions (local Spark)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import cli, jobs
from protocol.records import ControlRecordType
from tests.pipeline.logdata import batch, commit, marker, txn, values, write_segment

COMMIT, ABORT = ControlRecordType.COMMIT, ControlRecordType.ABORT


def txn_log(root: Path) -> Path:
    """orders-0: producer 7 commits offset 2 and aborts 5, producer 8 aborts 3, producer 9
    leaves 9 open; 0, 1, 8, 10, 11 are plain records. Log end 12, last stable offset 9.
    Group g committed offset 4 of orders-0."""
    write_segment(
        root,
        "orders",
        0,
        0,
        [
            values(0, 2),
            txn(2, 7, (b"k2", b"v2")),
            txn(3, 8, (b"k3", b"v3")),
            marker(COMMIT, 7, 4),
            txn(5, 7, (b"k5", b"v5")),
            marker(ABORT, 8, 6),
            marker(ABORT, 7, 7),
            values(8, 1),
            txn(9, 9, (b"k9", b"v9")),
            values(10, 2),
        ],
    )
    write_segment(root, "__consumer_offsets", 0, 0, [batch(0, [commit("g", "orders", 0, 4)])])
    return root


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return txn_log(tmp_path_factory.mktemp("txn"))


def _offsets(out: str) -> list[int]:
    return sorted(pq.read_table(out).column("offset").to_pylist())


def test_export_reads_committed_records_only_by_default(
    spark, data_dir: Path, tmp_path: Path
) -> None:
    out = jobs.export(spark, data_dir, tmp_path / "committed", topics=["orders"])
    assert _offsets(out) == [0, 1, 2, 8, 10, 11]
    table = pq.read_table(out)
    assert not any(table.column("is_control").to_pylist())
    assert {(r["key"], r["value"]) for r in table.to_pylist() if r["is_transactional"]} == {
        (b"k2", b"v2")
    }


def test_export_read_uncommitted_keeps_everything(spark, data_dir: Path, tmp_path: Path) -> None:
    out = jobs.export(
        spark, data_dir, tmp_path / "all", topics=["orders"], isolation="read_uncommitted"
    )
    assert _offsets(out) == list(range(12))


def test_an_offset_range_finds_the_marker_past_its_end(
    spark, data_dir: Path, tmp_path: Path
) -> None:
    out = jobs.export(spark, data_dir, tmp_path / "range", topics=["orders"], end_offset=4)
    assert _offsets(out) == [0, 1, 2]  # 2 is committed by the marker at 4; 3 is aborted at 6


def test_an_unknown_isolation_level_is_refused(spark, data_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="read_committed, read_uncommitted"):
        jobs.export(spark, data_dir, tmp_path / "x", isolation="dirty")


def test_lag_ends_at_the_last_stable_offset_when_reading_committed(spark, data_dir: Path) -> None:
    (row,) = jobs.lag(spark, data_dir).collect()
    assert (row["committed_offset"], row["log_end_offset"], row["last_stable_offset"]) == (4, 12, 9)
    assert row["lag"] == 5
    (row,) = jobs.lag(spark, data_dir, isolation="read_uncommitted").collect()
    assert (row["log_end_offset"], row["last_stable_offset"], row["lag"]) == (12, None, 8)


def test_report_lag_and_export_take_the_isolation_level(
    spark, data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    assert cli.main(["report", "lag", "--data-dir", str(data_dir)]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "GROUP  TOPIC   PARTITION  COMMITTED  LOG-END  LAST-STABLE  LAG",
        "g      orders  0          4          12       9            5",
    ]
    argv = ["report", "lag", "--data-dir", str(data_dir), "--isolation", "read_uncommitted"]
    assert cli.main(argv) == 0
    assert capsys.readouterr().out.splitlines()[1].split() == [
        "g",
        "orders",
        "0",
        "4",
        "12",
        "-",
        "8",
    ]
    out = tmp_path / "out"
    argv = ["report", "export", "--data-dir", str(data_dir), "--out", str(out), "--topic", "orders"]
    assert cli.main([*argv, "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"][0]["rows"] == 6
    assert cli.main([*argv, "--isolation", "read_uncommitted", "--output", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["partitions"][0]["rows"] == 12
    with pytest.raises(SystemExit):
        cli.main([*argv, "--isolation", "dirty"])
    assert "invalid choice: 'dirty'" in capsys.readouterr().err
