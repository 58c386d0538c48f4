"""`kmock report lag|groups|snapshot|export`: the pipeline's jobs from the command line.

    kmock report lag --data-dir ./data [--group G] [--png lag.png] [--output json] [--master URL]
    kmock report groups --data-dir ./data [--group G] [--output json]
    kmock report snapshot --data-dir ./data [--group G] [--output json]
    kmock report export --data-dir ./data --out ./export [--topic T] [--partition N]
                        [--start-offset N] [--end-offset N] [--check crc|records]

broker/cli.py adds these with `register(subparsers)`; each subcommand sets `func`, which
takes the parsed arguments and returns the exit status. Standalone, and under spark-submit
(which needs a script path, with the packages shipped by --py-files):

    python -m pipeline.cli report lag --data-dir ./data
    spark-submit --master URL --py-files kmock.zip pipeline/cli.py report lag --data-dir /shared/data

Tables go to stdout; so does JSON with --output json. What the readers skipped (torn
tails, corrupt batches) is reported on stderr (and under "skipped" in JSON); it does not
change the exit status, because the report covers everything that was readable.
"""

from __future__ import annotations

import argparse
import base64
import datetime
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["main", "register"]

_DEFAULT_DATA_DIR = "./data"  # log.dirs' default


def register(subparsers: Any) -> None:
    """Add the `report` command (with lag, groups, snapshot, export) to an argparse subparsers."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--data-dir", action="append", metavar="PATH",
                        help=f"a kmock data dir or partition dir; repeatable (default {_DEFAULT_DATA_DIR})")
    common.add_argument("--master", metavar="URL",
                        help="Spark master (default: SPARK_MASTER, else local[*]; spark-submit's own under spark-submit)")
    common.add_argument("--output", choices=("table", "json"), default="table", help="output format (default table)")

    report = subparsers.add_parser("report", help="offline reports over a data dir, with PySpark (kmock[pipeline])",
                                   description="Reports over kmock's segment files; no broker needed.")
    jobs = report.add_subparsers(dest="report", required=True, metavar="{lag,groups,snapshot,export}")

    p = jobs.add_parser("lag", parents=[common], help="consumer lag per group, topic and partition")
    p.add_argument("--group", action="append", metavar="GROUP", help="only this group; repeatable")
    p.add_argument("--png", metavar="FILE", help="also draw the lag as a bar chart PNG")
    p.set_defaults(func=_run_lag)

    p = jobs.add_parser("groups", parents=[common], help="group history: generations, members, assignments")
    p.add_argument("--group", action="append", metavar="GROUP", help="only this group; repeatable")
    p.set_defaults(func=_run_groups)

    p = jobs.add_parser("snapshot", parents=[common], help="__consumer_offsets compacted: the latest state")
    p.add_argument("--group", action="append", metavar="GROUP", help="only this group; repeatable")
    p.set_defaults(func=_run_snapshot)

    p = jobs.add_parser("export", parents=[common], help="export topics to Parquet by topic and partition")
    p.add_argument("--out", required=True, metavar="DIR", help="output directory (replaced)")
    p.add_argument("--topic", action="append", metavar="TOPIC", help="only this topic; repeatable")
    p.add_argument("--partition", action="append", type=int, metavar="N", help="only this partition; repeatable")
    p.add_argument("--start-offset", type=int, metavar="N", help="first offset to export")
    p.add_argument("--end-offset", type=int, metavar="N", help="offset to stop before")
    p.add_argument("--check", choices=("crc", "records"), default="crc",
                   help="what to check when reporting skipped data: framing and CRCs (default), or every record too")
    p.set_defaults(func=_run_export)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kmock", description="kmock's offline reports (PySpark).")
    register(parser.add_subparsers(dest="command", required=True, metavar="report"))
    args = parser.parse_args(argv)
    return int(args.func(args))


# --- running a job ----------------------------------------------------------------------


def _with_session(args: argparse.Namespace, job: Callable[[Any, list[str]], int]) -> int:
    from pyspark.sql import SparkSession

    from pipeline.session import build_session

    owned = SparkSession.getActiveSession() is None
    spark = build_session(args.master)
    try:
        return job(spark, args.data_dir or [_DEFAULT_DATA_DIR])
    finally:
        if owned:
            spark.stop()


def _run_lag(args: argparse.Namespace) -> int:
    from pipeline import jobs

    def job(spark: Any, dirs: list[str]) -> int:
        rows = [r.asDict() for r in jobs.lag(spark, dirs, groups=args.group).collect()]
        topics = sorted({r["topic"] for r in rows} | {"__consumer_offsets"})
        skipped = jobs.skipped(spark, dirs, topics=topics)
        if args.png:
            jobs.lag_chart(rows, args.png)
        if args.output == "json":
            _print_json({"lag": rows, "skipped": skipped})
        else:
            print(_table(
                ["GROUP", "TOPIC", "PARTITION", "COMMITTED", "LOG-END", "LAG"],
                [[r["group"], r["topic"], r["partition"], r["committed_offset"], r["log_end_offset"], r["lag"]]
                 for r in rows],
            ) if rows else "no committed offsets")
            _report_skipped(skipped)
        if args.png:
            print(f"lag chart: {args.png}", file=sys.stderr)
        return 0

    return _with_session(args, job)


def _run_groups(args: argparse.Namespace) -> int:
    from pipeline import jobs

    def job(spark: Any, dirs: list[str]) -> int:
        rows = [r.asDict(recursive=True) for r in jobs.group_history(spark, dirs, groups=args.group).collect()]
        skipped = jobs.skipped(spark, dirs, topics=["__consumer_offsets"])
        if args.output == "json":
            _print_json({"history": rows, "skipped": skipped})
        else:
            print(_table(
                ["GROUP", "GEN", "STATE", "TIME", "PROTOCOL", "LEADER", "MEMBERS", "JOINED", "LEFT", "ASSIGNED"],
                [[r["group"], r["generation"], r["state"], _time(r["log_timestamp"]), r["protocol"], r["leader"],
                  len(r["members"]), _ids(r["joined"]), _ids(r["left"]),
                  " ".join(f"{a['topic']}-{a['partition']}>{a['member_id']}" for a in r["assigned"]) or "-"]
                 for r in rows],
            ) if rows else "no group metadata")
            _report_skipped(skipped)
        return 0

    return _with_session(args, job)


def _run_snapshot(args: argparse.Namespace) -> int:
    from pyspark.sql import functions as F

    from pipeline import jobs

    def job(spark: Any, dirs: list[str]) -> int:
        state = jobs.snapshot(spark, dirs)
        if args.group:
            state = state.where(F.col("group").isin(args.group))
        commits = [r.asDict() for r in jobs.offset_commits(state).orderBy("group", "topic", "partition").collect()]
        groups = [
            r.asDict(recursive=True)
            for r in jobs.group_metadata(state)
            .select("group", "generation", "protocol_type", "protocol", "leader", "current_state_timestamp",
                    F.transform("members", lambda m: m.dropFields("subscription", "assignment")).alias("members"))
            .orderBy("group")
            .collect()
        ]
        skipped = jobs.skipped(spark, dirs, topics=["__consumer_offsets"])
        if args.output == "json":
            _print_json({"offsets": commits, "groups": groups, "skipped": skipped})
        else:
            print(_table(
                ["GROUP", "TOPIC", "PARTITION", "OFFSET", "LEADER-EPOCH", "METADATA", "COMMITTED AT"],
                [[r["group"], r["topic"], r["partition"], r["offset"], r["leader_epoch"], r["metadata"],
                  _time(r["commit_timestamp"])] for r in commits],
            ) if commits else "no committed offsets")
            print()
            print(_table(
                ["GROUP", "GEN", "PROTOCOL", "LEADER", "MEMBERS", "STATE SINCE"],
                [[r["group"], r["generation"], f"{r['protocol_type']}/{r['protocol']}", r["leader"],
                  " ".join(f"{m['member_id']}({m['client_host']})" for m in r["members"]) or "-",
                  _time(r["current_state_timestamp"])] for r in groups],
            ) if groups else "no groups")
            _report_skipped(skipped)
        return 0

    return _with_session(args, job)


def _run_export(args: argparse.Namespace) -> int:
    from pipeline import jobs

    def progress(done: int, total: int) -> None:
        print(f"export: {done}/{total} tasks ({100 * done // total}%)", file=sys.stderr, flush=True)

    def job(spark: Any, dirs: list[str]) -> int:
        out = jobs.export(spark, dirs, args.out, topics=args.topic, partitions=args.partition,
                          start_offset=args.start_offset, end_offset=args.end_offset, progress=progress)
        counts = jobs.parquet_counts(spark, out)
        skipped = jobs.skipped(spark, dirs, topics=args.topic, check=args.check)
        if args.output == "json":
            _print_json({"path": out, "partitions": [{"topic": t, "partition": p, "rows": n} for t, p, n in counts],
                         "skipped": skipped})
        else:
            print(_table(["TOPIC", "PARTITION", "ROWS"], [list(c) for c in counts]) if counts else "no records")
            print(f"exported {sum(n for _, _, n in counts):,} records to {out}")
            _report_skipped(skipped)
        return 0

    return _with_session(args, job)


# --- output -----------------------------------------------------------------------------


def _report_skipped(skipped: list[dict[str, Any]]) -> None:
    for s in skipped:
        print(f"kmock report: skipped {s['length']} bytes of {s['path']} at {s['position']}: {s['reason']}",
              file=sys.stderr)


def _ids(ids: list[str] | None) -> str:
    return " ".join(ids) if ids else "-"


def _time(t: datetime.datetime | None) -> str:
    return "-" if t is None else t.astimezone(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


def _table(headers: list[str], rows: list[list[Any]]) -> str:
    cells = [headers] + [["-" if v is None else str(v) for v in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in cells)


def _json_default(value: Any) -> Any:
    if isinstance(value, datetime.datetime):
        return value.astimezone(datetime.timezone.utc).isoformat()
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _print_json(document: dict[str, Any]) -> None:
    json.dump(document, sys.stdout, default=_json_default, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    sys.exit(main())
