"""Start-up to first useful answer: `kmock serve` spawned, then what a client does first.

    python bench/startup_first_request.py [--reps N] [--tree DIR ...]

Per start, the clock runs from just before the spawn (the venv's `kmock` script with
PYTHONPATH=DIR, an empty data dir, bytecode caches warm as in bench §1) until:
  connect      a TCP connect to the port succeeds (bench §1's number);
  apiversions  an ApiVersions v0 answer arrives (one round trip on a new connection);
  first send   a kafka-python producer made after that answer has its first record acked
               (acks=all, auto-created topic): ApiVersions, Metadata, CreateTopics-by-Metadata,
               Produce, each handler imported on its first call;
and then: the server's CPU time (utime + stime) at the ApiVersions answer, less noisy than the
wall clock on a shared machine, and its VmRSS after 0.5 s idle. Several trees (--tree, e.g. a
checkout of main and this one) are started in turn within each repetition, in rotating order;
medians and minimums are printed per tree.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

import common
from common import (
    TMP,
    api_versions_round_trip,
    free_port,
    kmock_command,
    median,
    proc_cpu_s,
    proc_status,
    serve_args,
    try_connect,
)


def start(tree: Path, *, deadline_s: float = 60.0) -> dict[str, float]:
    """One start of `kmock serve` from `tree`; the numbers of the module docstring."""
    from kafka import KafkaProducer

    TMP.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="startup-", dir=TMP))
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    cmd = [*kmock_command()[0], *serve_args(port, scratch / "data")]
    out: dict[str, float] = {}
    with open(scratch / "kmock.log", "wb") as log:
        t0 = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        try:
            while not try_connect(port):
                if proc.poll() is not None or time.perf_counter() - t0 > deadline_s:
                    raise RuntimeError((scratch / "kmock.log").read_text()[-3000:])
                time.sleep(0.001)
            out["connect"] = time.perf_counter() - t0
            api_versions_round_trip(port, deadline_s)
            out["apiversions"] = time.perf_counter() - t0
            out["cpu"] = proc_cpu_s(proc.pid)
            producer = KafkaProducer(bootstrap_servers=f"127.0.0.1:{port}", acks="all", linger_ms=0)
            try:
                producer.send("startup", b"first").get(timeout=deadline_s)
                out["first send"] = time.perf_counter() - t0
            finally:
                producer.close(timeout=5)
            time.sleep(0.5)
            out["rss"] = proc_status(proc.pid).get("VmRSS", 0) / 1024
        finally:
            proc.terminate()
            proc.wait(15)
            shutil.rmtree(scratch, ignore_errors=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--tree", action="append", type=Path, default=[])
    args = parser.parse_args()
    trees = [t.resolve() for t in args.tree] or [common.ROOT]
    common.use_bytecode_cache()
    for tree in trees:  # untimed: writes the bytecode caches
        start(tree)
    results: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    for rep in range(args.reps):
        k = rep % len(trees)
        for tree in trees[k:] + trees[:k]:
            results[tree].append(start(tree))
    keys = ["connect", "apiversions", "first send", "cpu", "rss"]
    units = {"rss": "MB"}
    print(f"{args.reps} starts per tree, load average {os.getloadavg()[0]:.2f}; median (min)")
    print("| tree | " + " | ".join(f"{k} ({units.get(k, 's')})" for k in keys) + " |")
    print("|---|" + "---:|" * len(keys))
    for tree, rows in results.items():
        cells = []
        for k in keys:
            xs = [r[k] for r in rows]
            digits = 1 if k == "rss" else 3
            cells.append(f"{median(xs):.{digits}f} ({min(xs):.{digits}f})")
        print(f"| {tree} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
