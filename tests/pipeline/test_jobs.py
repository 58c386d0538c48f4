"""The jobs (snapshot, lag, group history, export) over a log written by the project's encoders."""

from __future__ import annotations

from pathlib import Path

import pyarrow.parquet as pq
import pytest

from pipeline import jobs
from tests.pipeline.logdata import batch, commit, group_log, write_segment


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return group_log(tmp_path_factory.mktemp("data"))


def test_snapshot_keeps_the_latest_record_per_key_and_drops_tombstones(
    spark, data_dir: Path
) -> None:
    state = jobs.snapshot(spark, data_dir)
    commits = {
        (r["group"], r["topic"], r["partition"]): (r["offset"], r["metadata"], r["log_offset"])
        for r in jobs.offset_commits(state).collect()
    }
    assert commits == {
        ("g1", "orders", 0): (60, "", 9),
        ("g1", "orders", 1): (20, "last", 5),
        ("g2", "orders", 0): (80, "", 0),
        ("g2", "ghost", 0): (7, "", 1),
        ("g2", "orders", 1): (
            12,
            "",
            6,
        ),  # the aborted 15 and the unfinished audit commit are not state
    }
    groups = {r["group"]: r for r in jobs.group_metadata(state).collect()}
    assert set(groups) == {"g1"}  # g3 was deleted
    assert groups["g1"]["generation"] == 3
    assert state.where("record_type = 'control' or tombstone").count() == 0


def test_snapshot_compacts_by_raw_key_as_the_log_cleaner_does(spark, tmp_path: Path) -> None:
    # Key versions 0 and 1 of one offset key are different bytes, so the cleaner keeps both;
    # the coordinator's replay (committed_offsets) takes the later one.
    write_segment(
        tmp_path,
        "__consumer_offsets",
        0,
        0,
        [
            batch(
                0,
                [
                    commit("g", "t", 0, 1, key_version=0),
                    commit("g", "t", 0, 2),
                    commit("g", "t", 0, 3, key_version=0),
                ],
            )
        ],
    )
    state = jobs.offset_commits(jobs.snapshot(spark, tmp_path)).orderBy("log_offset").collect()
    assert [(r["offset"], r["log_offset"]) for r in state] == [(2, 1), (3, 2)]
    (latest,) = jobs.committed_offsets(spark, tmp_path).collect()
    assert latest["offset"] == 3


def test_lag_is_log_end_offset_minus_committed_offset(spark, data_dir: Path) -> None:
    rows = [
        (
            r["group"],
            r["topic"],
            r["partition"],
            r["committed_offset"],
            r["log_end_offset"],
            r["lag"],
        )
        for r in jobs.lag(spark, data_dir).collect()
    ]
    assert rows == [
        ("g1", "orders", 0, 60, 80, 20),
        ("g1", "orders", 1, 20, 20, 0),
        ("g2", "ghost", 0, 7, None, None),
        ("g2", "orders", 0, 80, 80, 0),
        ("g2", "orders", 1, 12, 20, 8),
    ]
    assert [r["group"] for r in jobs.lag(spark, data_dir, groups=["g2"]).collect()] == ["g2"] * 3
    assert jobs.lag(spark, data_dir, groups=["nobody"]).count() == 0


def test_lag_chart_is_a_png(spark, data_dir: Path, tmp_path: Path) -> None:
    rows = jobs.lag(spark, data_dir).collect()
    jobs.lag_chart(rows, tmp_path / "lag.png")
    jobs.lag_chart([], tmp_path / "empty.png")
    for name in ("lag.png", "empty.png"):
        data = (tmp_path / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n"
        assert len(data) > 1000


def test_group_history_shows_generations_joins_leaves_and_reassignments(
    spark, data_dir: Path
) -> None:
    history = [r.asDict(recursive=True) for r in jobs.group_history(spark, data_dir).collect()]
    g1 = [h for h in history if h["group"] == "g1"]
    assert [(h["generation"], h["state"], h["leader"], h["member_ids"]) for h in g1] == [
        (1, "Stable", "c1-a", ["c1-a"]),
        (2, "Stable", "c1-a", ["c1-a", "c2-b"]),
        (3, "Stable", "c2-b", ["c2-b"]),
    ]
    assert [(h["joined"], h["left"]) for h in g1] == [
        (["c1-a"], []),
        (["c2-b"], []),
        ([], ["c1-a"]),
    ]

    def pairs(items: list[dict]) -> list[tuple]:
        return [(p["member_id"], p["topic"], p["partition"]) for p in items]

    assert [pairs(h["assigned"]) for h in g1] == [
        [("c1-a", "orders", 0), ("c1-a", "orders", 1)],
        [("c2-b", "orders", 1)],
        [("c2-b", "orders", 0)],
    ]
    assert [pairs(h["revoked"]) for h in g1] == [
        [],
        [("c1-a", "orders", 1)],
        [("c1-a", "orders", 0)],
    ]
    assert all(h["assignment_changed"] for h in g1)
    member = g1[1]["members"][1]
    assert (
        member["client_id"],
        member["client_host"],
        member["session_timeout"],
        member["topics"],
    ) == (
        "c2",
        "/127.0.0.1",
        10_000,
        ["orders"],
    )
    g3 = [(h["state"], h["joined"], h["left"]) for h in history if h["group"] == "g3"]
    assert g3 == [("Stable", ["c9-z"], []), ("Dead", [], ["c9-z"])]
    assert [h["group"] for h in jobs.group_history(spark, data_dir, groups=["g3"]).collect()] == [
        "g3",
        "g3",
    ]


def test_export_writes_parquet_by_topic_and_partition(
    spark, data_dir: Path, tmp_path: Path
) -> None:
    seen: list[tuple[int, int]] = []
    out = jobs.export(
        spark,
        data_dir,
        tmp_path / "export",
        topics=["orders", "audit"],
        progress=lambda done, total: seen.append((done, total)),
    )
    assert sorted(p.name for p in Path(out).iterdir() if p.is_dir()) == [
        "topic=audit",
        "topic=orders",
    ]
    table = pq.read_table(out)
    assert table.num_rows == 105
    rows = table.select(["topic", "partition", "offset", "key", "value"]).to_pylist()
    orders0 = sorted(r["offset"] for r in rows if r["topic"] == "orders" and r["partition"] == 0)
    assert orders0 == list(range(80))
    assert {(r["key"], r["value"]) for r in rows if r["topic"] == "audit"} == {
        (b"k%d" % o, b"v%d" % o) for o in range(5)
    }
    assert str(table.schema.field("timestamp").type) == "timestamp[us, tz=UTC]"
    assert seen[-1] == (4, 4)  # one task per segment
    assert jobs.parquet_counts(spark, out) == [
        ("audit", 0, 5),
        ("orders", 0, 80),
        ("orders", 1, 20),
    ]


def test_export_of_an_offset_range(spark, data_dir: Path, tmp_path: Path) -> None:
    out = jobs.export(
        spark,
        data_dir,
        tmp_path / "range",
        topics=["orders"],
        partitions=[0],
        start_offset=45,
        end_offset=55,
    )
    assert sorted(pq.read_table(out).column("offset").to_pylist()) == list(range(45, 55))
