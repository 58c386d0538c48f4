"""The "kmock-log" data source in a real (small, shared) Spark session."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest

from pipeline import jobs
from protocol.compression import CompressionType
from protocol.records import ControlRecordType, build_batch, build_control_batch
from tests.pipeline.logdata import T0, batch, commit, group_metadata, values, write_segment


def _local_time(ms: int) -> datetime.datetime:
    """How PySpark hands back a timestamp: naive, in this process's local time."""
    return datetime.datetime.fromtimestamp(ms / 1000)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """orders-0: two segments, one batch per codec, a transaction and its COMMIT marker;
    orders-1 and audit-0: one plain segment each; __consumer_offsets-0: two records."""
    root = tmp_path_factory.mktemp("data")
    first = [values(0, 4), values(4, 4, compression=CompressionType.GZIP)]
    headers = build_batch(
        [(b"h", b"with headers", [("trace", b"abc"), ("empty", None)], T0 + 50)], base_offset=8
    )
    write_segment(root, "orders", 0, 0, [*first, headers])
    second = [
        values(9, 3, compression=CompressionType.SNAPPY),
        values(12, 3, compression=CompressionType.LZ4),
        values(
            15,
            3,
            compression=CompressionType.ZSTD,
            producer_id=5,
            producer_epoch=0,
            base_sequence=0,
            is_transactional=True,
        ),
        build_control_batch(
            ControlRecordType.COMMIT,
            producer_id=5,
            producer_epoch=0,
            coordinator_epoch=0,
            timestamp=T0 + 99,
            base_offset=18,
        ),
    ]
    write_segment(root, "orders", 0, 9, second)
    write_segment(root, "orders", 1, 0, [values(0, 6)])
    write_segment(root, "audit", 0, 0, [batch(0, [(None, b"a"), (b"k", None)])])
    write_segment(
        root,
        "__consumer_offsets",
        0,
        0,
        [
            batch(
                0,
                [
                    commit("g1", "orders", 0, 7),
                    group_metadata("g1", 1, [("c1-x", ["orders"], {"orders": [0, 1]})]),
                ],
            ),
        ],
    )
    return root


def test_records_of_every_codec_with_headers_and_control_records(spark, log_dir: Path) -> None:
    df = jobs.read(spark, log_dir, topics="orders", partitions=0)
    rows = df.orderBy("offset").collect()
    assert [r["offset"] for r in rows] == list(range(19))
    data = [r for r in rows if not r["is_control"]]
    assert [(r["key"], r["value"]) for r in data if r["offset"] != 8] == [
        (b"k%d" % o, b"v%d" % o) for o in range(18) if o != 8
    ]
    assert rows[0]["timestamp"] == _local_time(T0)
    assert rows[0]["timestamp_type"] == 0
    assert rows[8]["headers"][0].asDict() == {"key": "trace", "value": b"abc"}
    assert rows[8]["headers"][1].asDict() == {"key": "empty", "value": None}
    assert all(r["headers"] == [] for r in rows if r["offset"] != 8)
    marker = rows[18]
    assert (marker["is_control"], marker["is_transactional"], marker["producer_id"]) == (
        True,
        True,
        5,
    )
    assert marker["key"] == b"\x00\x00\x00\x01"  # version 0, COMMIT
    assert [r["is_transactional"] for r in rows[15:18]] == [True] * 3
    assert df.schema.simpleString() == (
        "struct<topic:string,partition:int,offset:bigint,timestamp:timestamp,timestamp_type:int,key:binary,"
        "value:binary,headers:array<struct<key:string,value:binary>>,producer_id:bigint,producer_epoch:smallint,"
        "is_transactional:boolean,is_control:boolean>"
    )


def test_null_keys_and_values(spark, log_dir: Path) -> None:
    rows = jobs.read(spark, log_dir, topics="audit").orderBy("offset").collect()
    assert [(r["key"], r["value"]) for r in rows] == [(None, b"a"), (b"k", None)]


def test_one_input_partition_per_segment_and_pruning_options(spark, log_dir: Path) -> None:
    def splits(**options: object) -> int:
        return jobs.read(spark, log_dir, **options).rdd.getNumPartitions()

    assert splits() == 5
    assert splits(topics="orders") == 3
    assert splits(topics="orders,audit", partitions="0") == 3
    assert splits(topics="orders", partitions=[0], start_offset=9) == 1
    assert splits(topics="orders", partitions=[0], end_offset=9) == 1
    rows = jobs.read(
        spark, log_dir, topics="orders", partitions=0, start_offset=6, end_offset=14
    ).collect()
    assert sorted(r["offset"] for r in rows) == list(range(6, 14))


def test_partition_dirs_as_paths(spark, log_dir: Path) -> None:
    df = jobs.read(spark, [log_dir / "orders-1", log_dir / "audit-0"])
    assert sorted(
        (r["topic"], r["partition"]) for r in df.select("topic", "partition").distinct().collect()
    ) == [
        ("audit", 0),
        ("orders", 1),
    ]
    assert df.count() == 8


def test_two_loads_with_different_options_in_one_query(spark, log_dir: Path) -> None:
    orders = (
        jobs.read(spark, log_dir, topics="orders")
        .groupBy()
        .count()
        .withColumnRenamed("count", "orders")
    )
    offsets = (
        jobs.read(spark, log_dir, topics="__consumer_offsets")
        .groupBy()
        .count()
        .withColumnRenamed("count", "co")
    )
    (row,) = orders.crossJoin(offsets).collect()
    assert (row["orders"], row["co"]) == (25, 2)


def test_batches_mode_reads_headers_only(spark, log_dir: Path) -> None:
    rows = (
        jobs.read(spark, log_dir, topics="orders", partitions=0, mode="batches")
        .orderBy("base_offset")
        .collect()
    )
    assert [
        (r["base_offset"], r["last_offset"], r["records_count"], r["compression"]) for r in rows
    ] == [
        (0, 3, 4, "none"),
        (4, 7, 4, "gzip"),
        (8, 8, 1, "none"),
        (9, 11, 3, "snappy"),
        (12, 14, 3, "lz4"),
        (15, 17, 3, "zstd"),
        (18, 18, 1, "none"),
    ]
    assert [r["segment"] for r in rows] == [0, 0, 0, 9, 9, 9, 9]
    assert rows[0]["position"] == 0
    assert rows[1]["position"] == rows[0]["size_bytes"]
    assert [r["is_control"] for r in rows] == [False] * 6 + [True]
    assert rows[-1]["max_timestamp"] == _local_time(T0 + 99)


def test_segments_mode_gives_log_end_offsets(spark, log_dir: Path) -> None:
    ends = {
        (r["topic"], r["partition"]): r["log_end_offset"]
        for r in jobs.log_end_offsets(spark, log_dir).collect()
    }
    assert ends == {
        ("orders", 0): 19,
        ("orders", 1): 6,
        ("audit", 0): 2,
        ("__consumer_offsets", 0): 2,
    }


def test_decode_consumer_offsets_gives_typed_rows(spark, log_dir: Path) -> None:
    rows = jobs.consumer_offsets(spark, log_dir).orderBy("offset").collect()
    assert [r["record_type"] for r in rows] == ["offset_commit", "group_metadata"]
    assert rows[0]["offset_commit"]["offset"] == 7
    members = rows[1]["group_metadata"]["members"]
    assert members[0]["consumer_assignment"]["assigned_partitions"][0]["partitions"] == [0, 1]


def test_bad_options_fail_with_a_message_naming_them(spark, log_dir: Path) -> None:
    with pytest.raises(Exception, match="mode must be one of"):
        jobs.read(spark, log_dir, mode="bogus").collect()
    with pytest.raises(Exception, match="start_offset must be an integer"):
        jobs.read(spark, log_dir, start_offset="x").collect()


@pytest.fixture(scope="module")
def damaged_dir(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, int]]:
    """t-0: a batch failing its CRC between good ones; t-1: a torn tail after two good batches."""
    root = tmp_path_factory.mktemp("damaged")
    bad = bytearray(values(10, 10))
    bad[-4] ^= 0x55
    good = values(0, 10)
    write_segment(root, "t", 0, 0, [good, bytes(bad), values(20, 10)])
    torn = values(20, 10)[:-9]
    whole = [values(0, 10), values(10, 10)]
    write_segment(root, "t", 1, 0, [*whole, torn])
    return root, {
        "bad_at": len(good),
        "bad_len": len(bad),
        "torn_at": len(b"".join(whole)),
        "torn_len": len(torn),
    }


def test_damaged_segments_are_read_around_and_reported(
    spark, damaged_dir: tuple[Path, dict[str, int]]
) -> None:
    root, at = damaged_dir
    offsets = {(r["partition"], r["offset"]) for r in jobs.read(spark, root).collect()}
    assert offsets == {(0, o) for o in [*range(10), *range(20, 30)]} | {(1, o) for o in range(20)}
    segments = {r["partition"]: r for r in jobs.read(spark, root, mode="segments").collect()}
    assert segments[0]["log_end_offset"] == 30
    assert segments[1]["log_end_offset"] == 20
    assert (segments[0]["skipped_bytes"], segments[1]["skipped_bytes"]) == (
        at["bad_len"],
        at["torn_len"],
    )
    skipped = jobs.skipped(spark, root)
    assert [(s["partition"], s["position"], s["length"]) for s in skipped] == [
        (0, at["bad_at"], at["bad_len"]),
        (1, at["torn_at"], at["torn_len"]),
    ]
    assert skipped[0]["reason"].startswith("corrupt")
    assert "CRC" in skipped[0]["reason"]
    assert skipped[1]["reason"].startswith("truncated")


def test_empty_segments_make_no_tasks_and_segments_mode_packs_small_files(
    spark, tmp_path: Path
) -> None:
    for p in range(5):
        write_segment(tmp_path, "__consumer_offsets", p, 0, [])
    write_segment(tmp_path, "t", 0, 0, [values(0, 3)])
    records = jobs.read(spark, tmp_path)
    assert (records.rdd.getNumPartitions(), records.count()) == (1, 3)
    segments = jobs.read(spark, tmp_path, mode="segments")
    assert (segments.rdd.getNumPartitions(), segments.count()) == (1, 6)
    assert jobs.read(spark, tmp_path, topics="nothing").count() == 0


def test_segments_written_by_storage_log(spark, tmp_path: Path) -> None:
    from storage import Log, LogConfig

    config = LogConfig(
        segment_bytes=600, message_timestamp_type="LogAppendTime", flush_mode="always"
    )
    log = Log.open(tmp_path / "events-2", config, now_wall_ms=T0)
    for i in range(10):
        log.append(values(0, 5, compression=CompressionType(i % 5)), wall_ms=T0 + i)
    log.close()
    assert len(list((tmp_path / "events-2").glob("*.log"))) > 2
    rows = jobs.read(spark, tmp_path).orderBy("offset").collect()
    assert [r["offset"] for r in rows] == list(range(50))
    assert {(r["topic"], r["partition"]) for r in rows} == {("events", 2)}
    # LogAppendTime: every record carries its batch's append time.
    assert [r["timestamp"] for r in rows[::5]] == [_local_time(T0 + i) for i in range(10)]
    assert {r["timestamp_type"] for r in rows} == {1}
    ends = jobs.log_end_offsets(spark, tmp_path).collect()
    assert [(r["partition"], r["log_end_offset"]) for r in ends] == [(2, 50)]


def test_a_task_fails_naming_every_planned_segment_it_cannot_open(tmp_path: Path) -> None:
    from pipeline.segments import UnreadableSegments
    from pipeline.source import KmockLogReader, ReadOptions

    paths = [write_segment(tmp_path, "t", p, 0, [values(0, 2)]) for p in range(3)]
    segments = KmockLogReader(ReadOptions({"path": str(tmp_path), "mode": "segments"}))
    records = KmockLogReader(ReadOptions({"path": str(tmp_path)}))
    (packed,) = segments.partitions()
    _, middle, last = records.partitions()
    paths[0].unlink()
    paths[2].unlink()
    with pytest.raises(UnreadableSegments) as caught:
        list(segments.read(packed))
    assert caught.value.failures == [
        (str(paths[0]), "No such file or directory"),
        (str(paths[2]), "No such file or directory"),
    ]
    assert "could not open 2 planned segment files" in str(caught.value)
    with pytest.raises(UnreadableSegments) as caught:
        list(records.read(last))
    assert caught.value.failures == [(str(paths[2]), "No such file or directory")]
    assert sum(b.num_rows for b in records.read(middle)) == 2
