"""The pipeline's jobs: each a function of a SparkSession and data dirs, returning DataFrames.

    lag(spark, dirs)            committed offset vs log end offset per group/topic/partition
    group_history(spark, dirs)  every GroupMetadata record: generations, joins, leaves,
                                assignment changes
    snapshot(spark, dirs)       __consumer_offsets as Kafka's log cleaner would leave it
    records(spark, dirs)        records as a read_committed (default) or read_uncommitted
                                consumer reads them (pipeline.isolation)
    export(spark, dirs, out)    topics to Parquet, partitioned by topic and partition
    skipped(spark, dirs)        what the readers skip (torn tails, corrupt batches)

`dirs` is a data dir, a partition dir, or a list of them (see pipeline.segments). The
DataFrames are lazy; nothing is read until an action. Transforms use the DataFrame API
only (no Python UDFs after the source), so Spark plans them on the JVM side.

Log end offset: the last valid batch's baseOffset + lastOffsetDelta + 1 (mode=segments
reads it from batch headers alone). Never a record count: compaction leaves gaps.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pipeline.isolation import (
    READ_COMMITTED,
    check_isolation,
    first_open_offsets,
    read_committed,
)
from pipeline.session import register
from protocol.records import ControlRecordType

__all__ = [
    "committed_offsets",
    "consumer_offsets",
    "export",
    "group_history",
    "group_metadata",
    "lag",
    "lag_chart",
    "log_end_offsets",
    "offset_commits",
    "parquet_counts",
    "read",
    "records",
    "skipped",
    "snapshot",
]

Dirs = str | os.PathLike[str] | Sequence[str | os.PathLike[str]]

_CONTROL_COMMIT = int(ControlRecordType.COMMIT)
_PAIRS = "array<struct<member_id: string, topic: string, partition: int>>"


def _paths(dirs: Dirs) -> list[str]:
    """`dirs` as absolute paths, resolved against this process's (the driver's) directory.

    Executors run in directories of their own, so a relative path would name another
    place there (pipeline.segments.plan makes the segment paths absolute too, for callers
    of the data source itself).
    """
    if isinstance(dirs, (str, os.PathLike)):
        dirs = [dirs]
    return [os.path.abspath(os.fspath(d)) for d in dirs]


def read(spark: Any, dirs: Dirs, **options: Any) -> Any:
    """`spark.read.format("kmock-log")` over `dirs` with `options` (lists become comma lists).

    Options that are None are left out, so callers can pass optional filters through.
    """
    register(spark)
    reader = spark.read.format("kmock-log")
    for key, value in options.items():
        if value is None:
            continue
        if isinstance(value, (list, tuple, set, frozenset)):
            value = ",".join(str(v) for v in value)
        reader = reader.option(key, str(value))
    return reader.load(_paths(dirs))


# --- __consumer_offsets -----------------------------------------------------------------


def consumer_offsets(spark: Any, dirs: Dirs) -> Any:
    """Every __consumer_offsets record, decoded (schema: pipeline.offsets.SCHEMA)."""
    return read(spark, dirs, decode="consumer_offsets")


def _committed_transactions_only(df: Any) -> Any:
    """Drop control records and the records of aborted or unfinished transactions.

    A transactional record (TxnOffsetCommit) counts once its producer's next transaction
    marker in the same partition is a COMMIT, as Kafka's coordinator applies it. The next
    marker is found in one pass: newest first, the last marker seen so far (a running
    frame; Spark recomputes an unbounded-following frame for every row).
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    newest_first = (
        Window.partitionBy("partition", "producer_id")
        .orderBy(F.col("offset").desc())
        .rowsBetween(Window.unboundedPreceding, Window.currentRow)
    )
    outcome = F.last("control_type", ignorenulls=True).over(newest_first)
    keep = ~F.col("is_transactional") | (outcome == _CONTROL_COMMIT)
    return (
        df.withColumn("_keep", keep)
        .where(F.col("_keep") & (F.col("record_type") != "control"))
        .drop("_keep")
    )


def snapshot(spark: Any, dirs: Dirs) -> Any:
    """__consumer_offsets compacted: what Kafka's log cleaner would keep.

    Per __consumer_offsets partition and raw record key (the cleaner's identity, so key
    versions 0 and 1 of one offset key are different keys, as in Kafka), the record with
    the highest offset wins; keys whose winner is a tombstone are dropped, as they are
    once delete.retention.ms has passed. Transaction markers and the records of aborted
    transactions are not state and are left out. Same schema as `consumer_offsets`.
    """
    from pyspark.sql import functions as F

    df = _committed_transactions_only(consumer_offsets(spark, dirs)).where(F.col("key").isNotNull())
    columns = df.columns
    latest = (
        df.groupBy("partition", "key")
        .agg(F.max_by(F.struct(*columns), "offset").alias("r"))
        .select("r.*")
    )
    return latest.where(~F.col("tombstone"))


def offset_commits(df: Any) -> Any:
    """Offset-commit rows of a decoded __consumer_offsets DataFrame, flattened.

    Columns: group, topic, partition, offset, leader_epoch, metadata, commit_timestamp,
    expire_timestamp, tombstone, log_partition, log_offset, log_timestamp (where the record
    sits in __consumer_offsets).
    """
    return _flattened(
        df,
        "offset_commit",
        "topic",
        "partition",
        "offset",
        "leader_epoch",
        "metadata",
        "commit_timestamp",
        "expire_timestamp",
    )


def group_metadata(df: Any) -> Any:
    """GroupMetadata rows of a decoded __consumer_offsets DataFrame, flattened.

    Columns: group, generation, protocol_type, protocol, leader, current_state_timestamp,
    members (pipeline.offsets.MEMBER), tombstone, log_partition, log_offset, log_timestamp.
    """
    from pyspark.sql import functions as F

    members = F.col("group_metadata")["members"]
    return _flattened(
        df,
        "group_metadata",
        "generation",
        "protocol_type",
        "protocol",
        "leader",
        "current_state_timestamp",
        F.coalesce(members, F.array().cast("array<" + _member_ddl() + ">")).alias("members"),
    )


def _flattened(df: Any, record_type: str, *fields: Any) -> Any:
    """The `record_type` rows of a decoded __consumer_offsets DataFrame: group, the named
    fields of its `record_type` struct column (or columns given whole), tombstone, and
    where the record sits in the log."""
    from pyspark.sql import functions as F

    record = F.col(record_type)
    return df.where(F.col("record_type") == record_type).select(
        "group",
        *(record[f].alias(f) if isinstance(f, str) else f for f in fields),
        "tombstone",
        F.col("partition").alias("log_partition"),
        F.col("offset").alias("log_offset"),
        F.col("timestamp").alias("log_timestamp"),
    )


def _member_ddl() -> str:
    from pipeline.offsets import MEMBER
    from pipeline.source import ddl_type

    return ddl_type(MEMBER)


def committed_offsets(spark: Any, dirs: Dirs, *, groups: Iterable[str] | None = None) -> Any:
    """The offsets groups have committed, as the coordinator's replay of the log leaves them.

    Per (group, topic, partition), the latest offset-commit record in log order wins, and
    a tombstone deletes the offset. Unlike `snapshot`, key versions 0 and 1 count as one
    key here, because the coordinator decodes keys before it applies them. Columns as in
    `offset_commits`.
    """
    from pyspark.sql import functions as F

    commits = offset_commits(_committed_transactions_only(consumer_offsets(spark, dirs)))
    if groups is not None:
        commits = commits.where(F.col("group").isin(list(groups)))
    latest = (
        commits.groupBy("group", "topic", "partition")
        .agg(F.max_by(F.struct(*commits.columns), "log_offset").alias("r"))
        .select("r.*")
    )
    return latest.where(~F.col("tombstone"))


# --- log end offsets, lag ---------------------------------------------------------------


def log_end_offsets(spark: Any, dirs: Dirs, *, topics: Iterable[str] | None = None) -> Any:
    """(topic, partition, log_end_offset) of every partition, from batch headers alone."""
    from pyspark.sql import functions as F

    return (
        read(spark, dirs, mode="segments", topics=None if topics is None else sorted(topics))
        .groupBy("topic", "partition")
        .agg(F.max("log_end_offset").alias("log_end_offset"))
    )


def lag(
    spark: Any,
    dirs: Dirs,
    *,
    groups: Iterable[str] | None = None,
    isolation: str = READ_COMMITTED,
) -> Any:
    """Consumer lag per group, topic and partition, ordered by them.

    Columns: group, topic, partition, committed_offset (from `committed_offsets`),
    log_end_offset, last_stable_offset, lag, commit_timestamp, metadata. lag = end -
    committed_offset, as Kafka's kafka-consumer-groups computes it: not clamped, and null
    when the partition is not on disk. Only partitions with a committed offset appear (the
    log does not record assignments without commits). Log end offsets come from batch
    headers (mode=segments) of every partition, in the same query.

    The end is the log end offset with isolation "read_uncommitted", and the last stable
    offset with "read_committed" (the default): the first offset of the partition's
    earliest open transaction, else the log end offset (read from batch headers,
    mode=batches; pipeline.isolation.first_open_offsets). A read_committed consumer cannot
    read past it. last_stable_offset is null with read_uncommitted, which does not read it.
    """
    from pyspark.sql import functions as F

    check_isolation(isolation)
    commits = committed_offsets(spark, dirs, groups=groups)
    ends = log_end_offsets(spark, dirs)
    if isolation == READ_COMMITTED:
        open_txns = first_open_offsets(read(spark, dirs, mode="batches"))
        ends = ends.join(open_txns, ["topic", "partition"], "left").withColumn(
            "last_stable_offset", F.coalesce("first_open_offset", "log_end_offset")
        )
        end = F.col("last_stable_offset")
    else:
        ends = ends.withColumn("last_stable_offset", F.lit(None).cast("long"))
        end = F.col("log_end_offset")
    return (
        commits.join(ends, ["topic", "partition"], "left")
        .select(
            "group",
            "topic",
            "partition",
            F.col("offset").alias("committed_offset"),
            "log_end_offset",
            "last_stable_offset",
            (end - F.col("offset")).alias("lag"),
            "commit_timestamp",
            "metadata",
        )
        .orderBy("group", "topic", "partition")
    )


def lag_chart(
    rows: Sequence[Any], path: str | os.PathLike[str], *, title: str = "Consumer lag"
) -> None:
    """Draw lag rows (from `lag`, collected) as a horizontal bar chart PNG at `path`.

    Uses matplotlib's object API with the Agg canvas, so no display and no global backend
    switch is needed. Partitions whose log end is unknown are labelled "n/a".
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    labels = [f"{r['group']}  {r['topic']}-{r['partition']}" for r in rows]
    values = [r["lag"] if r["lag"] is not None else 0 for r in rows]
    groups = sorted({r["group"] for r in rows})
    palette = [
        "#4C72B0",
        "#DD8452",
        "#55A868",
        "#C44E52",
        "#8172B3",
        "#937860",
        "#DA8BC3",
        "#8C8C8C",
    ]
    colours = [palette[groups.index(r["group"]) % len(palette)] for r in rows]
    fig = Figure(figsize=(9, 1.2 + 0.35 * max(len(rows), 1)))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    positions = list(range(len(rows)))[::-1]
    ax.barh(positions, values, color=colours)
    ax.set_yticks(positions, labels, fontsize=8)
    for y, r, v in zip(positions, rows, values, strict=True):
        ax.annotate(
            "n/a" if r["lag"] is None else f"{v:,}",
            (v, y),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=8,
        )
    ax.set_xlabel("lag (records): log end offset - committed offset")
    ax.set_title(title if rows else f"{title}: no committed offsets")
    ax.margins(x=0.15)
    fig.tight_layout()
    fig.savefig(os.fspath(path), format="png", dpi=100)


# --- group history ----------------------------------------------------------------------


def group_history(spark: Any, dirs: Dirs, *, groups: Iterable[str] | None = None) -> Any:
    """Every GroupMetadata record of every group, oldest first, with what changed.

    Kafka's coordinator writes one when a generation's assignment is synced (Stable), when
    a group becomes Empty, and a tombstone when it is deleted. Columns: group, log_offset,
    log_timestamp, log_partition, state (Stable / Empty / Dead, from the record), generation,
    protocol_type, protocol, leader, current_state_timestamp, members (member_id,
    group_instance_id, client_id, client_host, session_timeout, rebalance_timeout, topics
    subscribed, assigned_partitions), member_ids, joined and left (member ids against the
    group's previous record), assignment (member_id, topic, partition, sorted),
    assigned (pairs new since the previous record), revoked (pairs gone since it), and
    assignment_changed. Only what is still in the log: compaction removes old records.
    """
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    df = group_metadata(consumer_offsets(spark, dirs))
    if groups is not None:
        df = df.where(F.col("group").isin(list(groups)))
    members = F.transform(
        "members",
        lambda m: F.struct(
            m["member_id"].alias("member_id"),
            m["group_instance_id"].alias("group_instance_id"),
            m["client_id"].alias("client_id"),
            m["client_host"].alias("client_host"),
            m["session_timeout"].alias("session_timeout"),
            m["rebalance_timeout"].alias("rebalance_timeout"),
            m["consumer_subscription"]["topics"].alias("topics"),
            m["consumer_assignment"]["assigned_partitions"].alias("assigned_partitions"),
        ),
    )
    pairs = F.array_sort(
        F.flatten(
            F.transform(
                "members",
                lambda m: F.flatten(
                    F.transform(
                        F.coalesce(m["consumer_assignment"]["assigned_partitions"], F.array()),
                        lambda tp: F.transform(
                            tp["partitions"],
                            lambda p: F.struct(
                                m["member_id"].alias("member_id"),
                                tp["topic"].alias("topic"),
                                p.alias("partition"),
                            ),
                        ),
                    )
                ),
            )
        )
    )
    by_group = Window.partitionBy("group").orderBy("log_partition", "log_offset")
    state = (
        F.when(F.col("tombstone"), "Dead").when(F.size("members") == 0, "Empty").otherwise("Stable")
    )
    out = (
        df.select(
            "group",
            "log_offset",
            "log_timestamp",
            "log_partition",
            state.alias("state"),
            "generation",
            "protocol_type",
            "protocol",
            "leader",
            "current_state_timestamp",
            members.alias("members"),
            F.transform("members", lambda m: m["member_id"]).alias("member_ids"),
            pairs.alias("assignment"),
        )
        .withColumn(
            "_prev_ids",
            F.coalesce(F.lag("member_ids").over(by_group), F.array().cast("array<string>")),
        )
        .withColumn(
            "_prev_pairs", F.coalesce(F.lag("assignment").over(by_group), F.array().cast(_PAIRS))
        )
        .withColumn("joined", F.array_except("member_ids", "_prev_ids"))
        .withColumn("left", F.array_except("_prev_ids", "member_ids"))
        .withColumn("assigned", F.array_except("assignment", "_prev_pairs"))
        .withColumn("revoked", F.array_except("_prev_pairs", "assignment"))
        .withColumn("assignment_changed", (F.size("assigned") > 0) | (F.size("revoked") > 0))
        .drop("_prev_ids", "_prev_pairs")
    )
    return out.orderBy("group", "log_partition", "log_offset")


# --- records, export ---------------------------------------------------------------------


def records(
    spark: Any,
    dirs: Dirs,
    *,
    topics: Iterable[str] | None = None,
    partitions: Iterable[int] | None = None,
    start_offset: int | None = None,
    end_offset: int | None = None,
    isolation: str = READ_COMMITTED,
) -> Any:
    """Records (schema RECORDS) in `[start_offset, end_offset)`, as `isolation` reads them.

    read_committed (the default) leaves out transaction markers, the records of aborted
    transactions and those of transactions still open at the end of the log (past the last
    stable offset), as a read_committed consumer does (pipeline.isolation). A transaction
    whose marker lies past `end_offset` is decided by that marker. When no batch in the
    selection is transactional, only markers could be left out and no window is needed:
    one query over batch headers tells.
    """
    from pyspark.sql import functions as F

    check_isolation(isolation)
    topics = None if topics is None else sorted(topics)
    partitions = None if partitions is None else sorted(partitions)
    df = read(
        spark,
        dirs,
        topics=topics,
        partitions=partitions,
        start_offset=start_offset,
        end_offset=end_offset,
    )
    if isolation != READ_COMMITTED:
        return df
    headers = read(spark, dirs, mode="batches", topics=topics, partitions=partitions)
    if headers.where(F.col("is_transactional")).limit(1).count() == 0:
        return df.where(~F.col("is_control"))
    markers = None
    if end_offset is not None:
        markers = read(spark, dirs, topics=topics, partitions=partitions, start_offset=end_offset)
    return read_committed(df, markers)


def export(
    spark: Any,
    dirs: Dirs,
    out: str | os.PathLike[str],
    *,
    topics: Iterable[str] | None = None,
    partitions: Iterable[int] | None = None,
    start_offset: int | None = None,
    end_offset: int | None = None,
    progress: Callable[[int, int], None] | None = None,
    isolation: str = READ_COMMITTED,
) -> str:
    """Write records (schema RECORDS) to Parquet under `out`, partitioned by topic and partition.

    `out` is replaced. The layout is Hive-style, `out/topic=<t>/partition=<p>/part-*.parquet`,
    which Spark, pyarrow and DuckDB read back with the two columns restored. Timestamps are
    INT64 microseconds (UTC). `progress(done, total)` is called from a polling thread as
    segments (one task each) finish. Returns `out` as an absolute path.

    With no records to export, `out` holds one Parquet file with the RECORDS columns
    (topic and partition included) and no rows: Spark writes no file at all for an empty
    partitioned write, and a directory without one cannot be read back (Spark fails with
    UNABLE_TO_INFER_SCHEMA), where an empty export should read as empty.

    `isolation` is "read_committed" (the default: see `records`) or "read_uncommitted"
    (every record, transaction markers and aborted transactions included).
    """
    df = records(
        spark,
        dirs,
        topics=topics,
        partitions=partitions,
        start_offset=start_offset,
        end_offset=end_offset,
        isolation=isolation,
    )
    target = os.path.abspath(os.fspath(out))
    writer = df.write.mode("overwrite").partitionBy("topic", "partition")
    with _Progress(spark, progress) if progress is not None else contextlib.nullcontext():
        writer.parquet(target)
    if not _has_parquet(spark, target):
        spark.createDataFrame([], df.schema).write.mode("overwrite").parquet(target)
    return target


def _has_parquet(spark: Any, path: str) -> bool:
    """Whether Spark finds Parquet files under `path` (through its own file system layer)."""
    from pyspark.errors import AnalysisException

    try:
        spark.read.parquet(path)
    except AnalysisException as e:
        if e.getCondition() == "UNABLE_TO_INFER_SCHEMA":
            return False
        raise
    return True


# The thread-local properties SparkContext.setJobGroup sets, restored after an export.
_JOB_GROUP_PROPERTIES = (
    "spark.jobGroup.id",
    "spark.job.description",
    "spark.job.interruptOnCancel",
)


class _Progress:
    """Polls Spark's status tracker while a job runs and reports tasks done / total."""

    _INTERVAL_S = 0.5

    def __init__(self, spark: Any, report: Callable[[int, int], None]) -> None:
        self._sc = spark.sparkContext
        self._report = report
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="kmock-export-progress", daemon=True)
        self._group = f"kmock-export-{id(self)}"
        self._last: tuple[int, int] | None = None

    def __enter__(self) -> _Progress:
        self._previous = {key: self._sc.getLocalProperty(key) for key in _JOB_GROUP_PROPERTIES}
        self._sc.setJobGroup(self._group, "kmock report export")
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._poll()
        for key, value in self._previous.items():
            self._sc.setLocalProperty(key, value)  # None removes it

    def _run(self) -> None:
        while not self._stop.wait(self._INTERVAL_S):
            self._poll()

    def _poll(self) -> None:
        tracker = self._sc.statusTracker()
        done = total = 0
        for job_id in tracker.getJobIdsForGroup(self._group):
            job = tracker.getJobInfo(job_id)
            if job is None:
                continue
            for stage_id in job.stageIds:
                stage = tracker.getStageInfo(stage_id)
                if stage is not None:
                    done += stage.numCompletedTasks
                    total += stage.numTasks
        if total and (done, total) != self._last:
            self._last = (done, total)
            self._report(done, total)


# --- what was skipped -------------------------------------------------------------------


def skipped(
    spark: Any,
    dirs: Dirs,
    *,
    topics: Iterable[str] | None = None,
    check: str = "crc",
) -> list[dict[str, Any]]:
    """Byte ranges the readers skip, as dicts: topic, partition, path, position, length, reason.

    `check="crc"` finds what fails framing and CRC checks (every mode skips those);
    `check="records"` also decodes every record and lists batches that do not decode
    (mode=records skips those), at the cost of decoding everything once more.
    """
    from pyspark.sql import functions as F

    df = read(
        spark, dirs, mode="segments", check=check, topics=None if topics is None else sorted(topics)
    )
    rows = (
        df.where(F.col("skipped_bytes") > 0)
        .select("topic", "partition", "path", F.explode("skipped").alias("s"))
        .select("topic", "partition", "path", "s.position", "s.length", "s.reason")
        .orderBy("topic", "partition", "path", "position")
        .collect()
    )
    return [r.asDict() for r in rows]


def parquet_counts(spark: Any, out: str | os.PathLike[str]) -> list[tuple[str, int, int]]:
    """(topic, partition, rows) of an export, read back from its Parquet footers."""
    counts = (
        spark.read.parquet(os.fspath(out))
        .groupBy("topic", "partition")
        .count()
        .orderBy("topic", "partition")
    )
    return [(r["topic"], r["partition"], r["count"]) for r in counts.collect()]
