"""`kmock report lag|groups|snapshot|export`: the pipeline's jobs from the command line.

    kmock report lag --data-dir ./data [--group G] [--png lag.png] [--output json]
                     [--isolation read_committed|read_uncommitted]
                     [--master URL] [--conf key=value ...]
    kmock report groups --data-dir ./data [--group G] [--output json]
    kmock report snapshot --data-dir ./data [--group G] [--output json]
    kmock report export --data-dir ./data --out ./export [--topic T] [--partition N]
                        [--start-offset N] [--end-offset N] [--check crc|records]
                        [--isolation read_committed|read_uncommitted] [--schemas]

cli/main.py adds these with `register(subparsers)`; each
subcommand sets `func(args, out) -> exit status`, where `out` is cli.output's Output (only
its `stdout` and `stderr` streams are used here, so that this module imports nothing of
broker/ and nothing of pyspark until a report runs). Standalone, and under spark-submit
(which needs a script path, with the packages shipped by --py-files):

    python -m pipeline.cli report lag --data-dir ./data
    spark-submit --master URL --py-files kmock.zip pipeline/cli.py \
        report lag --data-dir /shared/data

Every report takes --master and --conf key=value (repeatable: Spark settings, as
spark-submit's --conf). Relative paths are made absolute here, on the driver.

Tables go to stdout; so does JSON with --output json. What the readers skipped (torn
tails, corrupt batches) is reported on stderr (and under "skipped" in JSON); it does not
change the exit status, because the report covers everything that was readable. A planned
segment file that an executor cannot open is another matter: the report would be wrong, so
it fails (exit status 1) with a message naming the files (segments.UnreadableSegments).
An empty result is reported as such: a message for a table, an empty list in JSON, and for
export a Parquet file with the schema and no rows.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from storage.layout import OFFSETS_TOPIC

__all__ = ["main", "register"]

_DEFAULT_DATA_DIR = "./data"  # log.dirs' default
_C1_JIT = "-XX:TieredStopAtLevel=1"
_EXIT_FAILED = 1  # kmock's exit status for an error
_EXIT_USAGE = 2  # kmock's exit status for a usage error


def _setting(text: str) -> tuple[str, str]:
    """`key=value` of --conf, as spark-submit takes it."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(f"--conf takes key=value (a Spark setting), not {text!r}")
    return key.strip(), value


def register(subparsers: Any) -> None:
    """Add the `report` command (with lag, groups, snapshot, export) to an argparse subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--data-dir",
        action="append",
        metavar="PATH",
        help=f"a kmock data dir or partition dir; repeatable (default {_DEFAULT_DATA_DIR})",
    )
    common.add_argument(
        "--master",
        metavar="URL",
        help="Spark master (default: SPARK_MASTER, else local[*]; under spark-submit, its own)",
    )
    common.add_argument(
        "--conf",
        action="append",
        type=_setting,
        metavar="KEY=VALUE",
        help="a Spark setting, as spark-submit --conf; repeatable",
    )
    common.add_argument(
        "--output", choices=("table", "json"), default="table", help="output format (default table)"
    )
    isolation = argparse.ArgumentParser(add_help=False)
    isolation.add_argument(
        "--isolation",
        choices=("read_committed", "read_uncommitted"),
        default="read_committed",
        help="read_committed (default): leave out transaction markers and the records of aborted"
        " or open transactions, and end lag at the last stable offset; read_uncommitted: read all",
    )

    report = subparsers.add_parser(
        "report",
        help="offline reports over a data dir, with PySpark (kmock[pipeline])",
        description="Reports over kmock's segment files; no broker needed.",
    )
    jobs = report.add_subparsers(
        dest="report",
        required=True,
        metavar="{lag,groups,snapshot,export}",
        parser_class=type(report),
    )

    p = jobs.add_parser(
        "lag", parents=[common, isolation], help="consumer lag per group, topic and partition"
    )
    p.add_argument("--group", action="append", metavar="GROUP", help="only this group; repeatable")
    p.add_argument("--png", metavar="FILE", help="also draw the lag as a bar chart PNG")
    p.set_defaults(func=_run_lag)

    p = jobs.add_parser(
        "groups", parents=[common], help="group history: generations, members, assignments"
    )
    p.add_argument("--group", action="append", metavar="GROUP", help="only this group; repeatable")
    p.set_defaults(func=_run_groups)

    p = jobs.add_parser(
        "snapshot", parents=[common], help="__consumer_offsets compacted: the latest state"
    )
    p.add_argument("--group", action="append", metavar="GROUP", help="only this group; repeatable")
    p.set_defaults(func=_run_snapshot)

    p = jobs.add_parser(
        "export",
        parents=[common, isolation],
        help="export topics to Parquet by topic and partition",
    )
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (replaced)")
    p.add_argument("--topic", action="append", metavar="TOPIC", help="only this topic; repeatable")
    p.add_argument(
        "--partition",
        action="append",
        type=int,
        metavar="N",
        help="only this partition; repeatable",
    )
    p.add_argument("--start-offset", type=int, metavar="N", help="first offset to export")
    p.add_argument("--end-offset", type=int, metavar="N", help="offset to stop before")
    p.add_argument(
        "--check",
        choices=("crc", "records"),
        default="crc",
        help="what the skipped-data report checks: framing and CRCs (default), or records too",
    )
    p.add_argument(
        "--schemas",
        action="store_true",
        help="also write the schema registry's latest schema of each subject (from _schemas)"
        " to _schemas.json in --out",
    )
    p.set_defaults(func=_run_export)


class _Streams:
    """The part of cli.output's Output that the reports use, for running without cli/"""

    def __init__(self, stdout: TextIO, stderr: TextIO) -> None:
        self.stdout = stdout
        self.stderr = stderr


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kmock", description="kmock's offline reports (PySpark).")
    register(parser.add_subparsers(dest="command", required=True, metavar="report"))
    args = parser.parse_args(argv)
    return int(args.func(args, _Streams(sys.stdout, sys.stderr)))


# --- running a job ----------------------------------------------------------------------


def _with_session(
    args: argparse.Namespace, out: Any, job: Callable[[Any, list[str]], int], *, short: bool = True
) -> int:
    """Run `job(spark, data_dirs)`; stop the session afterwards if this call started it.

    `short` jobs (every report but export) run the driver JVM with the C1 JIT only: its
    warm-up dominates a report over a small __consumer_offsets, and C1 halves the CPU
    time of a cold lag report (bench/pipeline_bench.py). Export keeps the default JIT.
    """
    dirs = args.data_dir or [_DEFAULT_DATA_DIR]
    missing = [d for d in dirs if not os.path.isdir(d)]
    if missing:
        out.stderr.write(f"kmock report: not a directory: {', '.join(missing)}\n")
        return _EXIT_USAGE
    dirs = [os.path.abspath(d) for d in dirs]  # executors have working directories of their own

    from pyspark.errors import PySparkException
    from pyspark.sql import SparkSession

    from pipeline.segments import UnreadableSegments
    from pipeline.session import build_session

    owned = SparkSession.getActiveSession() is None
    spark = build_session(
        args.master, conf=dict(args.conf or ()), java_options=[_C1_JIT] if short else []
    )
    try:
        return job(spark, dirs)
    except PySparkException as e:
        # A task's UnreadableSegments reaches the driver as text in Spark's job error.
        message = UnreadableSegments.message_in(str(e))
        if message is None:
            raise
        out.stderr.write(f"kmock report: {message}\n")
        return _EXIT_FAILED
    finally:
        if owned:
            spark.stop()


def _run_lag(args: argparse.Namespace, out: Any) -> int:
    from pipeline import jobs

    def job(spark: Any, dirs: list[str]) -> int:
        rows = [
            r.asDict()
            for r in jobs.lag(spark, dirs, groups=args.group, isolation=args.isolation).collect()
        ]
        topics = sorted({r["topic"] for r in rows} | {OFFSETS_TOPIC})
        skipped = jobs.skipped(spark, dirs, topics=topics)
        if args.png:
            jobs.lag_chart(rows, args.png)
        if args.output == "json":
            _write_json(out, {"lag": rows, "skipped": skipped})
        else:
            _write_table(
                out,
                ["GROUP", "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAST-STABLE", "LAG"],
                [
                    [
                        r["group"],
                        r["topic"],
                        r["partition"],
                        r["committed_offset"],
                        r["log_end_offset"],
                        r["last_stable_offset"],
                        r["lag"],
                    ]
                    for r in rows
                ],
                empty="no committed offsets",
            )
            _write_skipped(out, skipped)
        if args.png:
            out.stderr.write(f"lag chart: {args.png}\n")
        return 0

    return _with_session(args, out, job)


def _run_groups(args: argparse.Namespace, out: Any) -> int:
    from pipeline import jobs

    def job(spark: Any, dirs: list[str]) -> int:
        rows = [
            r.asDict(recursive=True)
            for r in jobs.group_history(spark, dirs, groups=args.group).collect()
        ]
        skipped = jobs.skipped(spark, dirs, topics=[OFFSETS_TOPIC])
        if args.output == "json":
            _write_json(out, {"history": rows, "skipped": skipped})
        else:
            _write_table(
                out,
                [
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
                ],
                [
                    [
                        r["group"],
                        r["generation"],
                        r["state"],
                        _time(r["log_timestamp"]),
                        r["protocol"],
                        r["leader"],
                        len(r["members"]),
                        _ids(r["joined"]),
                        _ids(r["left"]),
                        " ".join(
                            f"{a['topic']}-{a['partition']}>{a['member_id']}" for a in r["assigned"]
                        )
                        or None,
                    ]
                    for r in rows
                ],
                empty="no group metadata",
            )
            _write_skipped(out, skipped)
        return 0

    return _with_session(args, out, job)


def _run_snapshot(args: argparse.Namespace, out: Any) -> int:
    from pyspark.sql import functions as F

    from pipeline import jobs

    def job(spark: Any, dirs: list[str]) -> int:
        state = jobs.snapshot(spark, dirs)
        if args.group:
            state = state.where(F.col("group").isin(args.group))
        commits = [
            r.asDict()
            for r in jobs.offset_commits(state).orderBy("group", "topic", "partition").collect()
        ]
        groups = [
            r.asDict(recursive=True)
            for r in jobs.group_metadata(state)
            .select(
                "group",
                "generation",
                "protocol_type",
                "protocol",
                "leader",
                "current_state_timestamp",
                F.transform("members", lambda m: m.dropFields("subscription", "assignment")).alias(
                    "members"
                ),
            )
            .orderBy("group")
            .collect()
        ]
        skipped = jobs.skipped(spark, dirs, topics=[OFFSETS_TOPIC])
        if args.output == "json":
            _write_json(out, {"offsets": commits, "groups": groups, "skipped": skipped})
            return 0
        _write_table(
            out,
            ["GROUP", "TOPIC", "PARTITION", "OFFSET", "LEADER-EPOCH", "METADATA", "COMMITTED AT"],
            [
                [
                    r["group"],
                    r["topic"],
                    r["partition"],
                    r["offset"],
                    r["leader_epoch"],
                    r["metadata"] or None,
                    _time(r["commit_timestamp"]),
                ]
                for r in commits
            ],
            empty="no committed offsets",
        )
        out.stdout.write("\n")
        _write_table(
            out,
            ["GROUP", "GEN", "PROTOCOL", "LEADER", "MEMBERS", "STATE SINCE"],
            [
                [
                    r["group"],
                    r["generation"],
                    f"{r['protocol_type']}/{r['protocol']}",
                    r["leader"],
                    " ".join(f"{m['member_id']}({m['client_host']})" for m in r["members"]) or None,
                    _time(r["current_state_timestamp"]),
                ]
                for r in groups
            ],
            empty="no groups",
        )
        _write_skipped(out, skipped)
        return 0

    return _with_session(args, out, job)


def _run_export(args: argparse.Namespace, out: Any) -> int:
    from pipeline import jobs

    def progress(done: int, total: int) -> None:
        out.stderr.write(f"export: {done}/{total} tasks ({100 * done // total}%)\n")
        out.stderr.flush()

    def job(spark: Any, dirs: list[str]) -> int:
        path = jobs.export(
            spark,
            dirs,
            os.path.abspath(args.out),
            topics=args.topic,
            partitions=args.partition,
            start_offset=args.start_offset,
            end_offset=args.end_offset,
            progress=progress,
            isolation=args.isolation,
        )
        counts = jobs.parquet_counts(spark, path)
        schemas = None
        if args.schemas:
            from pipeline.registry import export_schemas

            try:
                schemas = export_schemas(spark, dirs, path)
            except ValueError as e:
                out.stderr.write(f"kmock report: --schemas: {e}\n")
                return _EXIT_FAILED
        skipped = jobs.skipped(spark, dirs, topics=args.topic, check=args.check)
        if args.output == "json":
            document: dict[str, Any] = {
                "path": path,
                "skipped": skipped,
                "partitions": [{"topic": t, "partition": p, "rows": n} for t, p, n in counts],
            }
            if schemas is not None:
                document["schemas"] = schemas
            _write_json(out, document)
            return 0
        _write_table(
            out, ["TOPIC", "PARTITION", "ROWS"], [list(c) for c in counts], empty="no records"
        )
        out.stdout.write(f"exported {sum(n for _, _, n in counts):,} records to {path}\n")
        if schemas is not None:
            out.stdout.write(f"exported the latest schema of each subject to {schemas}\n")
        if not counts and args.topic:
            _write_absent_topics(out, dirs, args.topic)
        _write_skipped(out, skipped)
        return 0

    return _with_session(args, out, job, short=False)


# --- output -----------------------------------------------------------------------------


def _write_absent_topics(out: Any, dirs: list[str], topics: list[str]) -> None:
    from pipeline.segments import partition_dirs

    present = {topic for topic, _, _ in partition_dirs(dirs)}
    for topic in sorted(set(topics) - present):
        out.stderr.write(f"kmock report: no partition of topic {topic} in {', '.join(dirs)}\n")


def _write_skipped(out: Any, skipped: list[dict[str, Any]]) -> None:
    for s in skipped:
        out.stderr.write(
            f"kmock report: skipped {s['length']} bytes of {s['path']} at {s['position']}: "
            f"{s['reason']}\n"
        )


def _ids(ids: list[str] | None) -> str | None:
    return " ".join(ids) if ids else None


def _time(t: datetime.datetime | None) -> str | None:
    return None if t is None else t.astimezone(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _write_table(out: Any, headers: list[str], rows: list[list[Any]], *, empty: str) -> None:
    """Aligned plain columns ("-" for none), or `empty` when there are no rows."""
    if not rows:
        out.stdout.write(empty + "\n")
        return
    cells = [headers] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        out.stdout.write(
            "  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)).rstrip() + "\n"
        )


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.UTC).isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _write_json(out: Any, document: dict[str, Any]) -> None:
    out.stdout.write(json.dumps(document, default=_json_default, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
