"""§9's held connections: what 1,000 and 5,000 idle client connections cost a server (its
resident memory), and the Metadata round trip of one more client while 5,000 are held.

Each connection is opened, makes one ApiVersions round trip (so the server has accepted it
and set it up) and then stays open and silent. The server's VmRSS is read from /proc before
the first connection and once each count is reached; the cost per connection is the
difference divided by the count. Then one more connection sends Metadata v8 in a closed loop
(bench/kwire.py) while they are all held.
"""

from __future__ import annotations

from typing import Any

import kwire
from common import fmt, median, percentile, proc_status, ratio

from broker.limits import raise_open_files_limit
from protocol.messages.api_versions import ApiVersionsRequest

COUNTS = (1000, 5000)


def _rss_mb(pid: int) -> float:
    return proc_status(pid).get("VmRSS", 0) / 1024


def measure(
    target: Any,
    metadata: tuple[Any, int],
    *,
    counts: tuple[int, ...] = COUNTS,
    warmup_s: float,
    duration_s: float,
) -> dict[str, Any]:
    """{"start_mb": RSS before, "held_mb": {count: RSS with that many held},
    "metadata": kwire.LoopResult of one more connection with the most held}."""
    raise_open_files_limit()  # this process holds every client end
    out: dict[str, Any] = {"start_mb": _rss_mb(target.pid), "held_mb": {}}
    held: list[Any] = []
    try:
        for n in sorted(counts):
            while len(held) < n:
                s = kwire.connect(target.addr)
                held.append(s)
                kwire.call(s, ApiVersionsRequest(), 0)
            out["held_mb"][n] = _rss_mb(target.pid)
        out["metadata"] = kwire.closed_loop(
            target.addr,
            [metadata],
            duration_s=duration_s,
            warmup_s=warmup_s,
            server_pid=target.pid,
        )
    finally:
        for s in held:
            s.close()
    return out


def kib_each(run: dict[str, Any], n: int) -> float:
    """The server's resident memory per held connection (KiB) at `n` connections."""
    held = run.get("held_mb", {}).get(n)
    if held is None:
        return float("nan")
    return (held - run["start_mb"]) * 1024 / n


HEADER = [
    "server",
    "RSS at start MB",
    "1,000 held: RSS MB (KiB each)",
    "5,000 held: RSS MB (KiB each)",
    "Metadata, 1 more client, 5,000 held: p50 / p99 ms",
    "raw KiB each at 5,000",
]


def report(
    runs_by_who: dict[str, list[dict[str, Any]]],
    labels: dict[str, str],
    rep: Any,
    table: Any,
) -> str:
    """The summary rows into `rep` (run.py's Report) and §9's table of held connections."""
    low, high = COUNTS
    rows = []
    stats: dict[str, dict[str, float]] = {}
    for who, runs in runs_by_who.items():
        if not runs:
            continue
        lat = [r["metadata"].latencies_s for r in runs if "metadata" in r]
        st = {
            "start": median([r["start_mb"] for r in runs]),
            "low_mb": median([r["held_mb"].get(low, float("nan")) for r in runs]),
            "high_mb": median([r["held_mb"].get(high, float("nan")) for r in runs]),
            "low_kib": median([kib_each(r, low) for r in runs]),
            "high_kib": median([kib_each(r, high) for r in runs]),
            "p50": median([percentile(x, 50) * 1000 for x in lat]),
            "p99": median([percentile(x, 99) * 1000 for x in lat]),
        }
        stats[who] = st
        rows.append(
            [
                labels[who],
                fmt(st["start"], 1),
                f"{fmt(st['low_mb'], 1)} ({fmt(st['low_kib'], 1)})",
                f"{fmt(st['high_mb'], 1)} ({fmt(st['high_kib'], 1)})",
                f"{fmt(st['p50'], 2)} / {fmt(st['p99'], 2)}",
                ", ".join(fmt(kib_each(r, high), 1) for r in runs),
            ]
        )
    k = stats.get("kmock", {})
    others = [w for w in ("tansu", "mock") if w in stats]
    short = {"tansu": "Tansu", "mock": "mock"}
    if k:
        rep.row(
            "9",
            f"{high:,} idle connections held: server memory per connection",
            fmt(k["high_kib"], 1, " KiB"),
            "; ".join(f"{fmt(stats[w]['high_kib'], 1)} KiB ({short[w]})" for w in others),
            ratio(k["high_kib"], stats["tansu"]["high_kib"]) + " (Tansu)"
            if "tansu" in stats
            else "-",
            "report only (stated, bounded)",
            None,
        )
        m = stats.get("mock", {})
        rep.row(
            "9",
            f"Metadata p99, one client while {high:,} connections are held",
            fmt(k["p99"], 2, " ms"),
            "; ".join(f"{fmt(stats[w]['p99'], 2)} ms ({short[w]})" for w in others),
            ratio(k["p99"], m.get("p99")) + " (mock)" if m else "-",
            "report only",
            None,
        )
    return f"""**Held connections** (`bench/held_connections.py`, a fresh server each: {low:,} then
{high:,} connections, each after one ApiVersions round trip, then silent; the server's VmRSS
from /proc; then one more connection sends Metadata v8 in a closed loop while all are held).
Every server, kmock included, is asked to keep each connection open; kmock closes an idle
one after `connections.max.idle.ms` (10 min).

{table(HEADER, rows)}
"""
