"""Pipeline bench: the "kmock-log" data source's scan rate and the lag report's time.

    python bench/pipeline_bench.py [--records N] [--master URL] [--dir DIR] [--keep]

Generates a log in kmock's layout in a temporary directory (BENCH_QUICK=1: 1M records;
default 10M): topic "bench" with 4 partitions of 200-record uncompressed batches (records
of a 12-byte key and a 64-byte value, about 100 bytes each on disk) in 64 MiB segments,
and __consumer_offsets with 50 partitions holding 3 groups' offset commits (500 rounds of
commits per partition each) and their GroupMetadata. Batches are built with
protocol.records.build_batch; the 10M records reuse 16 built batches with their base
offsets rewritten, as the broker does on append, so generating takes seconds.

Then (default local[2]):

1. scan: in this process's session (default JIT, as a production run), every record of
   "bench" through the data source into Spark's noop sink, after a small warm-up read
   (Python workers started): rows/s, and the CPU seconds of the whole process tree (driver,
   JVM, Python workers), which neighbours disturb less than wall time;
2. lag report: `python -m pipeline.cli report lag --png ... --output json` in its own
   process, as a user runs it, JVM start included (lag rows, the skipped-bytes check, the
   PNG chart), checked against the lag the generator built in. Target: <= 60 s on local[2].

Prints a markdown table (bench/run.py copies the rows into bench/RESULTS.md).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Run as a script, bench/ would come first on sys.path, and its modules (profile.py) would
# shadow the stdlib's for pyspark: import from the project root instead.
sys.path[0] = str(ROOT)

from protocol.consumer_offsets import (  # noqa: E402
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from protocol.records import build_batch, set_base_offset  # noqa: E402

TOPIC = "bench"
PARTITIONS = 4
BATCH_RECORDS = 200
TEMPLATES = 16
SEGMENT_BYTES = 64 * 1024 * 1024
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions
GROUPS = 3
COMMIT_ROUNDS = 500
T0 = 1_700_000_000_000
LAG_TARGET_S = 60.0
_CLK_TCK = os.sysconf("SC_CLK_TCK")


def _write_partition(
    root: Path, topic: str, partition: int, batches: list[tuple[bytes, int]]
) -> int:
    """Write (batch, record count) pairs from offset 0, rolling segments; returns the log end."""
    directory = root / f"{topic}-{partition}"
    directory.mkdir(parents=True, exist_ok=True)
    offset = 0
    f = None
    try:
        for template, count in batches:
            if f is None or f.tell() >= SEGMENT_BYTES:
                if f is not None:
                    f.close()
                f = open(directory / f"{offset:020d}.log", "wb")  # noqa: SIM115
            buf = bytearray(template)
            set_base_offset(buf, 0, offset)
            f.write(buf)
            offset += count
    finally:
        if f is not None:
            f.close()
    return offset


def generate(root: Path, records: int) -> dict[str, object]:
    """The bench log under `root`; returns its shape (log end offsets, bytes, segments)."""
    templates = [
        build_batch(
            [
                (
                    b"key-%08d" % (t * BATCH_RECORDS + i),
                    (b"%04d" % i) * 16,
                    (),
                    T0 + t * BATCH_RECORDS + i,
                )
                for i in range(BATCH_RECORDS)
            ]
        )
        for t in range(TEMPLATES)
    ]
    ends = []
    for p in range(PARTITIONS):
        n = records // PARTITIONS + (1 if p < records % PARTITIONS else 0)
        full, rest = divmod(n, BATCH_RECORDS)
        batches = [(templates[i % TEMPLATES], BATCH_RECORDS) for i in range(full)]
        if rest:
            batches.append((build_batch([(b"key-tail", b"v", (), T0)] * rest), rest))
        ends.append(_write_partition(root, TOPIC, p, batches))
    # __consumer_offsets: every partition exists (most empty, as on a broker); group i's
    # records go to partition i, each round committing every partition of the topic.
    for p in range(OFFSETS_PARTITIONS):
        (root / f"__consumer_offsets-{p}").mkdir(parents=True, exist_ok=True)
        if p >= GROUPS:
            (root / f"__consumer_offsets-{p}" / f"{0:020d}.log").write_bytes(b"")
    for g in range(GROUPS):
        group = f"group-{g}"
        member = MemberMetadata(
            member_id=f"consumer-{g}-1",
            client_id=f"consumer-{g}",
            client_host="/127.0.0.1",
            rebalance_timeout=300_000,
            session_timeout=10_000,
            subscription=b"",
            assignment=b"",
        )
        meta = (
            encode_key(GroupMetadataKey(group=group)),
            encode_value(
                GroupMetadataValue(
                    protocol_type="consumer",
                    generation=1,
                    protocol="range",
                    leader=member.member_id,
                    current_state_timestamp=T0,
                    members=[member],
                ),
                3,
            ),
        )
        batches = [(build_batch([(*meta, (), T0)]), 1)]
        for r in range(1, COMMIT_ROUNDS + 1):
            items = []
            for p, end in enumerate(ends):
                target = end * r // COMMIT_ROUNDS - g * 1000  # group g ends g * 1000 behind
                key = encode_key(OffsetCommitKey(group=group, topic=TOPIC, partition=p))
                value = encode_value(
                    OffsetCommitValue(
                        offset=max(target, 0), leader_epoch=0, metadata="", commit_timestamp=T0 + r
                    ),
                    3,
                )
                items.append((key, value, (), T0 + r))
            batches.append((build_batch(items), len(items)))
        _write_partition(root, "__consumer_offsets", g, batches)
    files = list(root.glob(f"{TOPIC}-*/*.log"))
    return {"ends": ends, "bytes": sum(f.stat().st_size for f in files), "segments": len(files)}


def _process_times() -> tuple[dict[int, int], dict[int, float]]:
    """(parent of, CPU seconds of) every process in /proc."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            fields = Path(entry.path, "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / _CLK_TCK
    return parents, times


def _descendants_cpu(root: int) -> dict[int, float]:
    """CPU seconds of `root` and every process below it, by pid."""
    parents, times = _process_times()
    out = {}
    for pid, t in times.items():
        p = pid
        while p > 1 and p != root:
            p = parents.get(p, 0)
        if p == root:
            out[pid] = t
    return out


def _tree_cpu_s() -> float:
    """utime + stime of this process and all its descendants (JVM, Python workers), seconds."""
    return sum(_descendants_cpu(os.getpid()).values())


def _run_measured(command: list[str]) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """Run `command`; return it with its wall seconds and the CPU seconds of its process tree.

    The tree is sampled every 0.1 s, so the last moments of a process that exits between
    samples are missed (a few ms each).
    """
    seen: dict[int, float] = {}
    t = time.perf_counter()
    with subprocess.Popen(
        command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as proc:
        done = threading.Event()

        def sample() -> None:
            while not done.wait(0.1):
                for pid, cpu in _descendants_cpu(proc.pid).items():
                    seen[pid] = max(cpu, seen.get(pid, 0.0))

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        stdout, stderr = proc.communicate()
        done.set()
        sampler.join()
    wall = time.perf_counter() - t
    result = subprocess.CompletedProcess(command, proc.returncode, stdout, stderr)
    return result, wall, sum(seen.values())


def main(argv: list[str] | None = None) -> int:
    quick = os.environ.get("BENCH_QUICK") == "1"
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000 if quick else 10_000_000)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument(
        "--dir", type=Path, help="where to generate the log (default: a temporary directory)"
    )
    parser.add_argument("--keep", action="store_true", help="keep the generated log")
    parser.add_argument(
        "--java-options", default="", help="extra driver JVM options, e.g. the C1 JIT"
    )
    args = parser.parse_args(argv)

    root = Path(tempfile.mkdtemp(prefix="kmock-pipeline-bench-", dir=args.dir))
    try:
        t = time.perf_counter()
        shape = generate(root / "data", args.records)
        generate_s = time.perf_counter() - t
        mb, segments = shape["bytes"] / 1e6, shape["segments"]
        print(
            f"generated {args.records:,} records, {mb:.0f} MB in {segments} segments, "
            f"in {generate_s:.1f} s",
            file=sys.stderr,
        )

        from pipeline import jobs
        from pipeline.session import build_session

        t = time.perf_counter()
        spark = build_session(
            args.master, app_name="kmock-pipeline-bench", java_options=args.java_options.split()
        )
        session_s = time.perf_counter() - t
        data = root / "data"
        jobs.read(spark, data, topics=TOPIC, partitions=0, end_offset=1000).count()  # warm-up

        cpu = _tree_cpu_s()
        t = time.perf_counter()
        jobs.read(spark, data, topics=TOPIC).write.format("noop").mode("overwrite").save()
        scan_s = time.perf_counter() - t
        scan_cpu = _tree_cpu_s() - cpu

        spark.stop()

        # The lag report as a user runs it: its own process, JVM start included.
        command = [
            sys.executable,
            "-m",
            "pipeline.cli",
            "report",
            "lag",
            "--data-dir",
            str(data),
            "--png",
            str(root / "lag.png"),
            "--output",
            "json",
            "--master",
            args.master,
        ]
        proc, lag_s, lag_cpu = _run_measured(command)
        if proc.returncode != 0:
            print(
                f"kmock report lag failed ({proc.returncode}):\n{proc.stderr[-3000:]}",
                file=sys.stderr,
            )
            return 1
        report = json.loads(proc.stdout)
        expected = [
            (f"group-{g}", TOPIC, p, min(g * 1000, e))
            for g in range(GROUPS)
            for p, e in enumerate(shape["ends"])
        ]
        got = [(r["group"], r["topic"], r["partition"], r["lag"]) for r in report["lag"]]
        if got != expected or report["skipped"]:
            print(
                f"wrong lag report: {got} (expected {expected}); {report['skipped']}",
                file=sys.stderr,
            )
            return 1

        size = f"{shape['bytes'] / 1e6:,.0f} MB, {shape['segments']} segments"
        load = os.getloadavg()[0]
        print("| measurement | records | log | wall s | rate | CPU s (process tree) | target |")
        print("|---|---:|---|---:|---:|---:|---|")
        n = f"{args.records:,}"
        verdict = "met" if lag_s <= LAG_TARGET_S else "**not met**"
        print(
            f"| data source scan to noop, {args.master} | {n} | {size} | {scan_s:.1f} | "
            f"{args.records / scan_s:,.0f} rows/s | {scan_cpu:.1f} | - |"
        )
        print(
            f"| `kmock report lag --png` (own process, JVM start included), {args.master} | {n} | "
            f"{size} | {lag_s:.1f} | {len(got)} rows | {lag_cpu:.1f} | "
            f"<= {LAG_TARGET_S:.0f} s: {verdict} |"
        )
        print(
            f"| session start ({args.master}) / generating the log | {args.records:,} | {size} | "
            f"{session_s:.1f} / {generate_s:.1f} | - | - | - (load average {load:.1f}) |"
        )
        return 0
    finally:
        if args.keep:
            print(f"kept {root}", file=sys.stderr)
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
