"""Two checkouts of kmock side by side on one closed-loop load (not part of `make bench`).

    python bench/ab.py {commit|metadata} CONNECTIONS TREE_A TREE_B [--seconds S] [--reps N]

Each repetition starts `kmock serve` from each tree afresh (num.partitions=4), in turn and
in alternating order, creates §9's topics and runs `kwire.py`'s closed loop of §9 (OffsetCommit
v9, each connection its own group; or Metadata v8 for `bench-meta`) for 0.5 s of warm-up and S
seconds measured. Prints per tree the medians of server CPU us/request, requests/s, p50 and
p99 (ms), and the raw CPU figures: a before/after comparison in one run, for a machine whose
load moves every absolute figure. Each tree's own bench code (kwire.py, side_by_side.py,
common.py: its `KmockProcess` runs that tree's code) drives its load.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_ONE = r"""
import json, sys
import kwire, side_by_side
from common import KmockProcess, percentile
api, n, seconds = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
with KmockProcess(overrides={"num.partitions": 4}) as k:
    side_by_side._create_topics("kmock", k)
    if api == "commit":
        requests = side_by_side._commit_requests(n, "ab", 9)
    else:
        requests = [(side_by_side._metadata_request(), side_by_side.METADATA_VERSION)] * n
    r = kwire.closed_loop(k.addr, requests, duration_s=seconds, warmup_s=0.5, server_pid=k.pid)
    with open(f"/proc/{k.pid}/status") as f:  # the server's peak RSS (Linux)
        hwm = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
print(json.dumps({
    "cpu_us": r.server_cpu_s / r.requests * 1e6,
    "rate": r.rate,
    "p50": percentile(r.latencies_s, 50) * 1000,
    "p99": percentile(r.latencies_s, 99) * 1000,
    "rss_mb": hwm / 1024,
}))
"""


def _one(tree: Path, api: str, n: int, seconds: float) -> dict[str, float]:
    # The tree's code and its bench modules (whose KmockProcess runs kmock serve on the tree).
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(tree / "bench")]))
    out = subprocess.run(
        [sys.executable, "-c", _ONE, api, str(n), str(seconds)],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{tree}: {out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("api", choices=("commit", "metadata"))
    ap.add_argument("connections", type=int)
    ap.add_argument("trees", type=Path, nargs=2)
    ap.add_argument("--seconds", type=float, default=2.0)
    ap.add_argument("--reps", type=int, default=4)
    a = ap.parse_args()
    trees = [t.resolve() for t in a.trees]
    results: dict[Path, list[dict[str, float]]] = {t: [] for t in trees}
    for i in range(a.reps):
        for tree in trees if i % 2 == 0 else trees[::-1]:
            results[tree].append(_one(tree, a.api, a.connections, a.seconds))
    for tree, rs in results.items():
        med = {
            k: statistics.median(r[k] for r in rs)
            for k in ("cpu_us", "rate", "p50", "p99", "rss_mb")
        }
        print(
            f"{tree}: {med['cpu_us']:.0f} us/req, {med['rate']:,.0f} req/s, "
            f"p50 {med['p50']:.2f} ms, p99 {med['p99']:.2f} ms, peak RSS {med['rss_mb']:.1f} MB "
            f"(raw us/req {[round(r['cpu_us']) for r in rs]}, "
            f"raw p99 {[round(r['p99']) for r in rs]})"
        )


if __name__ == "__main__":
    main()
