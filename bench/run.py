"""kmock benchmarks: `make bench` (or `python bench/run.py`) writes bench/RESULTS.md.

Every measurement runs kmock as a separate `kmock serve` process and, where one exists,
its reference side by side in the same run, repetitions interleaved, medians reported
(this machine is shared and noisy). Targets are reported with a met / not met column,
never asserted. BENCH_QUICK=1: smaller counts and fewer repetitions (a smoke run).
BENCH_ONLY=1,3: run only those sections (development; RESULTS.md then says so); with
BENCH_APPEND=1 as well, their report is added at the end of RESULTS.md instead of replacing it.
See bench/README.md for what each number means.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import platform
import random
import shlex
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

import common  # noqa: E402
from common import (  # noqa: E402
    COMMIT_TARGET_P99_MS,
    COMMIT_TARGET_VS_FLOOR,
    PY,
    QUICK,
    ROOT,
    TMP,
    FloorProcess,
    KmockProcess,
    MockProcess,
    fmt,
    median,
    percentile,
    proc_cpu_s,
    proc_status,
    ratio,
    run_json,
    start_once,
)

# BENCH_RESULTS=path: write the report there instead (development runs)
RESULTS = Path(os.environ.get("BENCH_RESULTS") or BENCH_DIR / "RESULTS.md")
# §9's selection of rows (bench/side_by_side.py), named in the report's command line
SBS_ENV = (
    "BENCH_SBS_ROWS",
    "BENCH_SBS_APIS",
    "BENCH_SBS_CONNS",
    "BENCH_SBS_TARGETS",
    "BENCH_SBS_REPS",
)

# Targets: reported with a met / not met column, never asserted. The texts that state them
# (summary rows, table headers, section text) are made from these.
START_TARGET_S = 0.3
IDLE_RSS_TARGET_MB = 40
# kmock / mock, msg/s: 100 B messages must not fall behind the mock (they are at or above it);
# 10 KiB messages at 0.7x with kmock's default durability (the decision).
PC_TARGET_RATIO = {100: 1.0, 10240: 0.7}
PC_TARGET_RATIO_DEFAULT = 0.7  # other sizes (quick runs use the same two)
JOIN_TARGET_MS = 100
REPLAY_TARGET_S = 10
REPLAY_TARGET_RECORDS = 1_000_000  # the count the replay target is for
CONTROLS_TARGET_RATIO = 0.95  # req/s with the journal recording / without it

PC_HEADER = [
    "phase",
    "mock msg/s",
    "mock MB/s",
    "kmock msg/s",
    "kmock MB/s",
    "ratio",
    "target",
    "met",
    "raw mock",
    "raw kmock",
]  # with two columns per diagnostic run before "raw mock", and its raw column at the end
COMMIT_HEADER = [
    "target",
    "commits/s",
    "p50 ms",
    "p99 ms",
    "server CPU us/commit",
    "errors",
    "ratio kmock/mock",
    "ratio kmock/floor",
    f"target met (>= {COMMIT_TARGET_VS_FLOOR}x floor, p99 <= {COMMIT_TARGET_P99_MS} ms)",
    "raw commits/s",
    "raw p99 ms",
]
JOIN_HEADER = [
    "rep",
    "t1 - t0 ms",
    "t1 - last JoinGroup sent by anyone ms",
    "generations synced",
    "final generation",
    "rejoins after t0",
    "error",
]
META_HEADER = [
    "target",
    "req/s",
    "p50 ms",
    "p99 ms",
    "p99.9 ms",
    "max ms",
    "server CPU us/req",
    "connect all s",
    "errors",
    "raw p99 ms",
]
CONTROLS_HEADER = [
    "kmock",
    "req/s",
    "vs off",
    "p50 ms",
    "p99 ms",
    "server CPU us/req",
    "server CPU vs off",
    "errors",
    "raw req/s",
]
SUMMARY_HEADER = ["#", "measurement", "kmock", "reference", "ratio", "target", "met?"]

P = {  # parameters: (full, quick)
    "start_reps": (5, 2),
    "idle_s": (1.0, 0.5),
    "pc_sizes": ([(100, 1_000_000), (10240, 30_000)], [(100, 100_000), (10240, 3_000)]),
    "pc_trials": (5, 1),  # client-bound rows: one trial moves +-15% (bench/README.md, round 14)
    "pc_diagnostics": (True, False),  # the "strict" and "no storage" kmock of §2
    "pc_settle_s": (3.0, 0.0),
    "pc_timeout_s": (240, 90),
    "commit_conns": ([32, 256], [256]),
    "commit_duration_s": (5.0, 1.5),
    "commit_warmup_s": (1.0, 0.3),
    "commit_reps": (3, 1),
    "join_members": (100, 100),
    "join_reps": (7, 3),
    "replay_records": (REPLAY_TARGET_RECORDS, 100_000),
    "replay_reps": (3, 1),
    "meta_conns": (1000, 1000),
    "meta_duration_s": (5.0, 1.5),
    "meta_warmup_s": (1.0, 0.3),
    "meta_reps": (3, 1),
    "pipeline_timeout_s": (420, 240),
    "sync_trips": (500, 100),
    "sync_reps": (3, 1),
    # §9, side by side with Tansu and the floors
    "sbs_reps": (3, 1),
    "sbs_trips": (500, 200),
    "sbs_group_reps": (2, 1),
    "sbs_conns": ([1, 32, 256, 1000], [1, 32, 256, 1000]),
    "sbs_warmup_s": (1.0, 0.3),
    "sbs_duration_s": (5.0, 1.5),
    "sbs_rss_produce": ((10240, 30_000), (10240, 10_000)),
    "controls_conns": (16, 16),
    "controls_first_s": (1.5, 1.0),  # untimed, once per server: its journal fills
    "controls_duration_s": (1.0, 0.5),  # per round
    "controls_warmup_s": (0.2, 0.2),
    "controls_reps": (15, 4),  # rounds
    # §11: (transactions, records per transaction) per shape; repetitions
    "txn_shapes": ([(500, 10), (100, 100)], [(100, 10), (20, 100)]),
    "txn_reps": (3, 1),
}


def p(name: str) -> Any:
    full, quick = P[name]
    return quick if QUICK else full


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def met(ok: bool | None) -> str:
    return "-" if ok is None else ("met" if ok else "**not met**")


def _nan(x: float | None) -> bool:
    return x is None or x != x


class Report:
    """Collects the summary rows and the per-section markdown."""

    def __init__(self) -> None:
        # (#, measurement, kmock, reference, ratio, target, met)
        self.summary: list[tuple[str, ...]] = []
        self.sections: list[str] = []
        self.notes: list[str] = []

    def row(
        self, num: str, what: str, kmock: str, ref: str, rat: str, target: str, ok: bool | None
    ) -> None:
        self.summary.append((num, what, kmock, ref, rat, target, met(ok)))

    def section(self, text: str) -> None:
        self.sections.append(text.rstrip() + "\n")


def table(header: list[str], rows: list[list[Any]]) -> str:
    out = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
    ]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out) + "\n"


def raw(xs: list[float], digits: int = 0, scale: float = 1.0) -> str:
    return ", ".join(fmt(x * scale if not _nan(x) else x, digits) for x in xs)


def _vs_row(
    label: str,
    kmock: list[float],
    ref: list[float],
    digits: int,
    unit: str,
    *,
    ref_raw: bool = True,
) -> list[str]:
    """A table row: kmock's median, the reference's, their ratio, then the raw values (the
    reference's as "-" if not ref_raw: another row of the table shows them)."""
    mk, mr = median(kmock), median(ref)
    return [
        label,
        fmt(mk, digits, unit),
        fmt(mr, digits, unit),
        ratio(mk, mr),
        raw(kmock, digits),
        raw(ref, digits) if ref_raw else "-",
    ]


def _kmock_row(label: str, xs: list[float], digits: int, unit: str) -> list[str]:
    """A table row with no reference: kmock's median, then its raw values."""
    return [label, fmt(median(xs), digits, unit), "-", "-", raw(xs, digits), "-"]


def _rotated(items: list[str], k: int) -> list[str]:
    """The order of the targets in repetition `k`: `items` rotated by k, so that each comes
    first in turn (the repetitions interleave)."""
    k %= len(items)
    return items[k:] + items[:k]


# --- 1. start-up time and idle RSS --------------------------------------------------------


def bench_startup(rep: Report) -> None:
    reps = p("start_reps")
    k_conn, k_logged, k_serve, k_rss, f_conn, f_rss, cold = [], [], [], [], [], [], []
    k_first: list[float] = []
    # Untimed warm-up: writes the bytecode caches (bench/tmp/pycache) of kmock and trio.
    start_once(KmockProcess())
    start_once(FloorProcess())
    for r in range(reps):
        order = ["kmock", "floor", "cold"]
        random.Random(r).shuffle(order)
        for who in order:
            if who == "kmock":
                with KmockProcess() as k:
                    time.sleep(p("idle_s"))
                    k_rss.append(proc_status(k.pid).get("VmRSS", 0) / 1024)
                    k_conn.append(k.start_s)
                    k_first.append(k.first_response_s)
                serve_ms, since_spawn_ms = k.logged_listening()
                k_serve.append(serve_ms)
                k_logged.append(since_spawn_ms / 1000)
            elif who == "cold":
                with KmockProcess(env=common.no_bytecode_cache_env()) as k:
                    cold.append(k.start_s)
            else:
                with FloorProcess() as f:
                    time.sleep(p("idle_s"))
                    f_rss.append(proc_status(f.pid).get("VmRSS", 0) / 1024)
                    f_conn.append(f.start_s)
    mc, mf = median(k_conn), median(f_conn)
    mr, mfr = median(k_rss), median(f_rss)
    rep.row(
        "1",
        "start: spawn `kmock serve` -> TCP connect OK (empty data dir)",
        fmt(mc, 3, " s"),
        fmt(mf, 3, " s") + " (python+trio listener)",
        ratio(mc, mf),
        f"<= {START_TARGET_S} s",
        mc <= START_TARGET_S,
    )
    rep.row(
        "1",
        "idle RSS after start",
        fmt(mr, 1, " MB"),
        fmt(mfr, 1, " MB") + " (python+trio listener)",
        ratio(mr, mfr),
        f"<= {IDLE_RSS_TARGET_MB} MB",
        mr <= IDLE_RSS_TARGET_MB,
    )
    rep.section(f"""## 1. Start-up time and idle RSS

`kmock serve --listeners PLAINTEXT://127.0.0.1:<free port> --log-dirs <new empty dir>`
spawned as a subprocess; the clock runs from just before `Popen` until a TCP connect to the
port succeeds (polled every 1 ms). Reference, interleaved with it: `bench/trio_floor.py`
(the same interpreter importing trio and listening on a port, nothing else): the floor of
any Python/trio broker. Bytecode caches are on (kept in bench/tmp/pycache, written by one
untimed start of each), as for any installed copy; the "no bytecode cache" row starts kmock
with PYTHONDONTWRITEBYTECODE=1 and an empty cache dir, i.e. compiling every module.
RSS is VmRSS from /proc/PID/status {p("idle_s")} s after the port accepts. {reps}
repetitions, the three kinds of start shuffled in each; medians.

{
        table(
            [
                "measurement",
                "kmock",
                "reference: python+trio listener",
                "ratio",
                "raw kmock",
                "raw reference",
            ],
            [
                _vs_row("spawn -> TCP connect succeeds", k_conn, f_conn, 3, " s"),
                _kmock_row(
                    "spawn -> first ApiVersions response (connect, then one round trip)",
                    k_first,
                    3,
                    " s",
                ),
                _kmock_row(
                    "spawn -> 'kmock listening' log line (its timestamp, ms resolution)",
                    k_logged,
                    3,
                    " s",
                ),
                _kmock_row(
                    "inside serve(), as logged ('listening ... in N ms')", k_serve, 0, " ms"
                ),
                _vs_row(
                    "spawn -> TCP connect, no bytecode cache", cold, f_conn, 3, " s", ref_raw=False
                ),
                _vs_row("idle RSS (VmRSS)", k_rss, f_rss, 1, " MB"),
            ],
        )
    }
Of the {fmt(mc, 3)} s, about {fmt(mf, 3)} s is the interpreter + trio floor; the rest is
importing kmock's modules and parsing the configuration before serve() binds the port.
serve() opens the port before it starts the group coordinator and its other tasks and
starts accepting, so the kernel accepts connections {fmt(median(k_serve), 0)} ms (median,
inside serve()) before kmock answers them: the first ApiVersions answer and the "listening"
line come after that.
""")


# --- 2. produce / consume with confluent-kafka --------------------------------------------


def _msgs_per_s(o: dict[str, Any], phase: str, count: int) -> float:
    if phase == "produce" and "produce_s" in o:
        return count / o["produce_s"]
    if phase == "consume" and "consume_s" in o:
        return o["consumed"] / o["consume_s"]
    if phase == "consume_default" and "consume_default_s" in o:
        return o["consumed_default"] / o["consume_default_s"]
    return float("nan")


class _PcVariant(NamedTuple):
    """A kmock server of §2: how it is started and how it is shown."""

    overrides: dict[str, Any]  # --override settings
    command: list[str] | None  # instead of kmock's own command (None: kmock's)
    client_args: list[str]  # after bench/ck_client.py's BOOTSTRAP TOPIC SIZE COUNT
    label: str  # in the CPU table
    short: str  # in the diagnostic columns ("" for the scored kmock)
    about: str  # its "(c) ..." in the section text ("" for the scored kmock)


# The kmock servers of §2. Beside the scored "kmock" (kmock's defaults, Kafka's durability: an
# acks=all produce is answered once it is in the page cache; the summary and the targets use
# it), two diagnostics (pc_diagnostics): "strict", kmock with kmock.durability=strict (group
# commit: answered once an fsync covers it); "nowrite", kmock with its segment writes skipped
# (the mock keeps nothing), produce only.
_PC_VARIANTS = {
    "kmock": _PcVariant({}, None, [], "kmock process", "", ""),
    "strict": _PcVariant(
        {"kmock.durability": "strict"},
        None,
        [],
        "kmock, strict",
        "strict",
        "the same kmock with kmock.durability=strict (group commit: an acks=all produce is "
        "answered once an fsync covers it; the mock never fsyncs)",
    ),
    "nowrite": _PcVariant(
        {},
        [PY, str(BENCH_DIR / "kmock_nowrite.py")],
        ["produce-only"],
        "kmock, no storage (produce only)",
        "no storage",
        "kmock with its segment writes skipped (`bench/kmock_nowrite.py`: everything else a"
        " Produce costs, but no byte reaches the page cache, as the mock keeps nothing; produce"
        " phase only)",
    ),
}
_PC_DIAGNOSTICS = [w for w in _PC_VARIANTS if w != "kmock"]


def _pc_header(diagnostics: list[str]) -> list[str]:
    """PC_HEADER with the columns of the diagnostics that were run."""
    at = PC_HEADER.index("raw mock")
    shorts = [_PC_VARIANTS[w].short for w in diagnostics]
    return (
        PC_HEADER[:at]
        + [c for s in shorts for c in (f"kmock {s} msg/s", f"ratio {s}")]
        + PC_HEADER[at:]
        + [f"raw {s}" for s in shorts]
    )


def _diagnostics_text(diagnostics: list[str]) -> str:
    """The section's sentence on the diagnostics that were run, lettered on from (c)."""
    items = [f"({chr(ord('c') + i)}) {_PC_VARIANTS[w].about}" for i, w in enumerate(diagnostics)]
    if not items:
        return ""
    listed = items[0] if len(items) == 1 else ", ".join(items[:-1]) + ", and " + items[-1]
    return f" As diagnostics only: {listed}."


def _storing_text(size: int, count: int, med: dict[str, float]) -> str:
    """What storing costs, from the produce medians (msg/s by target) of `size` B messages:
    empty when the diagnostics were not run."""
    if not {"nowrite", "strict"} <= med.keys():
        return ""
    no_storage, page_cache, durable = (
        ratio(med[w], med["mock"]) for w in ("nowrite", "kmock", "strict")
    )
    return f"""**Storing.** Producing {size} B messages, kmock / mock: {no_storage} with no
storage, {page_cache} writing to the page cache (the default, no fsync), {durable} with
kmock.durability=strict's group commit. The mock keeps about 5 MiB per partition in memory; a
broker that keeps what it acknowledges writes every byte ({count * size / 1e6:,.0f} MB per
trial) to a file, and the steps between the three ratios are what that costs here: copying
into fresh page cache (slow at each page's first touch on a VM whose host takes back freed
guest memory, as bench/README.md shows for this one) and, in the strict mode, writing it back
to the disk before the answer, while the client and the broker share the CPUs.
"""


def bench_produce_consume(rep: Report) -> None:
    sizes = p("pc_sizes")
    trials = p("pc_trials")
    diagnostics = _PC_DIAGNOSTICS if p("pc_diagnostics") else []
    targets = ["mock", "kmock", *diagnostics]
    res: dict[tuple[int, str], list[dict[str, Any]]] = {}
    errors: list[str] = []
    for t in range(trials):
        for i, (size, count) in enumerate(sizes):
            for who in _rotated(targets, t + i):
                time.sleep(p("pc_settle_s"))  # why: bench/README.md, "Memory on this machine"
                topic = f"bench-{size}-{t}"
                variant = _PC_VARIANTS.get(who)
                cmd = [PY, str(BENCH_DIR / "ck_client.py"), "", topic, str(size), str(count)]
                if variant is not None:
                    cmd += variant.client_args
                env = {"BENCH_PRODUCE_LIMIT_S": str(p("pc_timeout_s") * 0.6)}
                log(f"produce/consume {who} {size} B x {count} (trial {t + 1}/{trials})")
                if variant is None:
                    with MockProcess() as m:
                        cmd[2] = m.bootstrap
                        cpu0 = proc_cpu_s(m.pid)
                        out = run_json(cmd, p("pc_timeout_s"), env)
                        out["server_cpu_s"] = proc_cpu_s(m.pid) - cpu0
                else:
                    with KmockProcess(overrides=variant.overrides, command=variant.command) as k:
                        cmd[2] = k.bootstrap
                        cpu0 = proc_cpu_s(k.pid)
                        out = run_json(cmd, p("pc_timeout_s"), env)
                        out["server_cpu_s"] = proc_cpu_s(k.pid) - cpu0
                        alive = k.alive()
                    if k.error_lines:
                        out.setdefault("error_log", k.error_lines[:3])
                    if not alive:
                        out["error"] = out.get("error", "") + " (kmock died)"
                if "error" in out:
                    errors.append(
                        f"{who} {size} B trial {t + 1}: {out['error']}"
                        + (f"; kmock log: {out['error_log'][0]}" if out.get("error_log") else "")
                    )
                res.setdefault((size, who), []).append(out)
    rows = []
    produce_med: dict[int, dict[str, float]] = {}  # size -> the produce medians by target
    for size, count in sizes:
        for phase in ("produce", "consume", "consume_default"):
            per = {
                who: [_msgs_per_s(o, phase, count) for o in res.get((size, who), [])]
                for who in targets
            }
            med = {who: median(v) for who, v in per.items()}
            if phase == "produce":
                produce_med[size] = med
            mm, mk = med["mock"], med["kmock"]
            mw = med.get("nowrite", float("nan"))
            scored = phase != "consume_default"
            label = (
                f"{phase} {size} B x {count:,}"
                if scored
                else f"consume {size} B x {count:,}, fetch.queue.backoff.ms default"
            )
            r = mk / mm if not (_nan(mk) or _nan(mm) or mm == 0) else float("nan")
            target = PC_TARGET_RATIO.get(size, PC_TARGET_RATIO_DEFAULT)
            verdict = None if _nan(r) or not scored else r >= target
            rows.append(
                [
                    label,
                    fmt(mm),
                    fmt(mm * size / 1e6, 1),
                    fmt(mk),
                    fmt(mk * size / 1e6, 1),
                    ratio(mk, mm),
                    f">= {target:.2f}x" if scored else "(diagnostic)",
                    met(verdict),
                    *(c for w in diagnostics for c in (fmt(med[w]), ratio(med[w], mm))),
                    raw(per["mock"]),
                    raw(per["kmock"]),
                    *(raw(per[w]) for w in diagnostics),
                ]
            )
            if scored:
                rep.row(
                    "2",
                    f"{phase} msg/s, {size} B messages (confluent-kafka)",
                    fmt(mk) + " msg/s",
                    fmt(mm)
                    + " msg/s (librdkafka mock)"
                    + (f"; kmock with no storage: {ratio(mw, mm)}" if not _nan(mw) else ""),
                    ratio(mk, mm),
                    f">= {target:.2f}x mock",
                    verdict,
                )
    cpu_rows = []
    for size, count in sizes:
        cpu_rows.append(
            [f"{size} B x {count:,}"]
            + [
                fmt(
                    median([o.get("server_cpu_s", float("nan")) for o in res.get((size, who), [])]),
                    2,
                    " s",
                )
                for who in targets
            ]
        )
    err_text = ("\n**Errors:**\n\n" + "\n".join(f"* {e}" for e in errors) + "\n") if errors else ""
    cpu_header = ["messages", "mock process", *(_PC_VARIANTS[w].label for w in targets[1:])]
    diagnostics_text = _diagnostics_text(diagnostics)
    largest, largest_count = max(sizes, key=lambda sc: sc[0])
    settle = p("pc_settle_s")
    pause = f", each after a {settle:g} s pause (bench/README.md says why)" if settle else ""
    rep.section(f"""## 2. Produce and consume throughput (confluent-kafka)

PERF-NOTES §5's harness (`bench/ck_client.py`), one fresh client process per trial, against
(a) the librdkafka mock cluster (`test.mock.num.brokers=1`) held in a separate process
(`bench/mock_holder.py`) and (b) `kmock serve` with a new temp data dir and default settings
(Kafka's durability: an acks=all produce is answered once its records are in the page cache,
no fsync).{diagnostics_text}
A new server process per trial; {trials} trial(s), the order of the targets rotating{pause}.
Producer: acks=all, linger.ms=5, batch.size=1000000, no compression, all messages to
partition 0, poll(0) every 1,024, poll(0.5 ms) on BufferError, flush(); the high watermark
must equal the count. Consumer: assign + consume(batch of up to 10,000),
fetch.wait.max.ms=10; the mock keeps only about 5 MiB per partition, so the consumer
re-reads the retained window (seek back to the low watermark) until it has read as many
messages as were produced; kmock's window is the whole log, read once. Each consume runs
twice in the same client process, each time with a new consumer: first with
fetch.queue.backoff.ms=10 (the scored row), then with librdkafka's default of 1000 ms (the
"default" row, §5 exactly). The reason: librdkafka stops fetching for fetch.queue.backoff.ms
whenever its prefetch queue holds more than queued.min.messages (100,000) or
queued.max.messages.kbytes (64 MiB). Re-reading the mock's small window purges that queue
at every seek, so the pause never happens against the mock; reading kmock's whole log it
does, and the default then mostly measures librdkafka's 1 s pause. Ratio = kmock / mock
(medians).

{table(_pc_header(diagnostics), rows)}
{_storing_text(largest, largest_count, produce_med[largest])}

Server CPU time over a whole trial (produce + consume), median:

{table(cpu_header, cpu_rows)}{err_text}""")


# --- 3. durable OffsetCommit throughput ---------------------------------------------------


def _commit_requests(n: int, rep_no: int, version: int) -> list[Any]:
    from protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    return [
        (
            OffsetCommitRequest(
                group_id=f"bench-commit-{rep_no}-{i}",
                generation_id_or_member_epoch=-1,
                member_id="",
                topics=[
                    OffsetCommitRequestTopic(
                        name="bench-commits",
                        partitions=[
                            OffsetCommitRequestPartition(
                                partition_index=0, committed_offset=1000 + i, committed_metadata=""
                            )
                        ],
                    )
                ],
            ),
            version,
        )
        for i in range(n)
    ]


def _prepare_wire(target: Any) -> dict[int, tuple[int, int]]:
    """ApiVersions, and create the topics the wire benchmarks use (Metadata auto-create)."""
    import kwire

    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

    adv = kwire.api_versions(target.addr)
    with kwire.connect(target.addr) as s:
        kwire.call(
            s,
            MetadataRequest(
                topics=[
                    MetadataRequestTopic(name="bench-commits"),
                    MetadataRequestTopic(name="bench-meta"),
                ]
            ),
            4,
        )
    time.sleep(0.2)
    return adv


def _loop_stats(rs: list[Any]) -> dict[str, Any]:
    """Medians over the repetitions' `kwire.LoopResult`s (latencies in ms), and the errors
    of all of them."""

    def latency_ms(q: float) -> list[float]:
        return [percentile(x.latencies_s, q) * 1000 for x in rs]

    p99 = latency_ms(99)
    return {
        "rate": median([x.rate for x in rs]),
        "p50": median(latency_ms(50)),
        "p99": median(p99),
        "p999": median(latency_ms(99.9)),
        "max": median([max(x.latencies_s) * 1000 if x.latencies_s else float("nan") for x in rs]),
        "connect": median([x.connect_s for x in rs]),
        "cpu_us": median(
            [x.server_cpu_s / x.requests * 1e6 if x.requests else float("nan") for x in rs]
        ),
        "errors": sum(sum(x.errors.values()) for x in rs),
        "raw": [x.rate for x in rs],
        "raw_p99": p99,
    }


def bench_commits(rep: Report) -> None:
    import kwire

    conns_list = p("commit_conns")
    reps = p("commit_reps")
    out: dict[tuple[int, str], list[kwire.LoopResult]] = {}
    version_used: dict[str, int] = {}
    # who -> (the server process, what to ask it before the load: the floor serves only
    # ApiVersions and OffsetCommit, so no Metadata to create the topics).
    servers: dict[str, tuple[Callable[[], Any], Callable[[Any], dict[int, tuple[int, int]]]]] = {
        "kmock": (KmockProcess, _prepare_wire),
        "mock": (MockProcess, _prepare_wire),
        "floor": (
            lambda: FloorProcess(script="request_floor.py"),
            lambda target: kwire.api_versions(target.addr),
        ),
    }
    targets = list(servers)
    for r in range(reps):
        for n in conns_list:
            for who in _rotated(targets, r):
                log(f"commits {who} {n} connections (rep {r + 1}/{reps})")
                server, prepare = servers[who]
                with server() as target:
                    adv = prepare(target)
                    probe = _commit_requests(1, 999, 0)[0][0]
                    version = kwire.usable_version(probe, (target.addr, adv))
                    version_used[who] = version
                    res = kwire.closed_loop(
                        target.addr,
                        _commit_requests(n, r, version),
                        duration_s=p("commit_duration_s"),
                        warmup_s=p("commit_warmup_s"),
                        server_pid=target.pid,
                    )
                out.setdefault((n, who), []).append(res)
    rows = []
    for n in conns_list:
        stats = {who: _loop_stats(out.get((n, who), [])) for who in targets}
        k, m, f = stats["kmock"], stats["mock"], stats["floor"]
        ok = (
            None
            if _nan(k["rate"])
            else (
                k["rate"] >= COMMIT_TARGET_VS_FLOOR * f["rate"] and k["p99"] <= COMMIT_TARGET_P99_MS
            )
        )
        for who in targets:
            s = stats[who]
            rows.append(
                [
                    f"{who}, {n} connections",
                    fmt(s["rate"]),
                    fmt(s["p50"], 1),
                    fmt(s["p99"], 1),
                    fmt(s["cpu_us"], 0),
                    s["errors"],
                    ratio(k["rate"], m["rate"]) if who == "kmock" else "-",
                    ratio(k["rate"], f["rate"]) if who == "kmock" else "-",
                    met(ok) if who == "kmock" else "-",
                    raw(s["raw"]),
                    raw(s["raw_p99"], 1),
                ]
            )
        rep.row(
            "3",
            f"durable OffsetCommit, {n} connections: commits/s; p99",
            f"{fmt(k['rate'])}/s; p99 {fmt(k['p99'], 1)} ms",
            f"{fmt(m['rate'])}/s; p99 {fmt(m['p99'], 1)} ms (mock, in memory); "
            f"floor {fmt(f['rate'])}/s",
            ratio(k["rate"], f["rate"]) + " (floor)",
            f">= {COMMIT_TARGET_VS_FLOOR}x floor and p99 <= {COMMIT_TARGET_P99_MS} ms",
            ok,
        )
    rep.section(f"""## 3. Durable OffsetCommit throughput and latency

Standalone commits (generation -1, empty member id, one partition each, OffsetCommit
v{version_used.get("kmock", "?")} on kmock, v{version_used.get("mock", "?")} on the mock)
encoded with kmock's own codec and sent by `bench/kwire.py`'s closed-loop generator
(one thread, epoll): N connections, each with its own group and exactly one request in
flight (a Kafka broker serves one request per connection at a time, so concurrency =
connections). kmock runs with its default durability, Kafka's: a commit is answered once
its record is written to the log (the page cache), no fsync before the answer. Reference:
the librdkafka mock (in memory, never fsyncs), same generator. Second
reference, "floor": `bench/request_floor.py`, python + trio with kmock's connection I/O
answering every commit with one fixed, pre-encoded response (nothing decoded past the header,
nothing stored): the most requests per second a broker in Python on trio, one task per
connection, answers on this machine with this generator, before doing any work. kmock / floor
is the share of that ceiling left once the commit is decoded, checked, written and
answered; the target is {COMMIT_TARGET_VS_FLOOR}x the floor with p99 <= {COMMIT_TARGET_P99_MS} ms
(it replaced an earlier 20,000 commits/s: the floor itself reaches 15-51k/s on this
machine, by its load).
{p("commit_warmup_s")} s warm-up, then {p("commit_duration_s")} s measured; {reps}
repetition(s) interleaved, medians. Latency is client-side, send to response. Server CPU
us/commit = server process CPU time in the window / commits answered in it.

{table(COMMIT_HEADER, rows)}""")


# --- 4. 100 members to Stable -------------------------------------------------------------


def bench_join(rep: Report) -> None:
    import join_bench
    import kwire
    import trio

    n = p("join_members")
    results = []
    with KmockProcess(overrides={"group.initial.rebalance.delay.ms": 0}) as k:
        versions = join_bench.request_versions(kwire.api_versions(k.addr))
        for r in range(p("join_reps")):
            log(f"join {n} members (rep {r + 1})")
            results.append(trio.run(join_bench.form_group, k.addr, n, f"bench-join-{r}", versions))
    ok_runs = [x for x in results if "error" not in x]
    ms = [x["ms"] for x in ok_runs]
    final = [x["final_round_ms"] for x in ok_runs]
    m = median(ms)
    rep.row(
        "4",
        f"last JoinGroup of {n} members -> all {n} SyncGroup responses",
        fmt(m, 1, " ms"),
        "n/a (see §4)",
        "-",
        f"<= {JOIN_TARGET_MS} ms",
        None if _nan(m) else m <= JOIN_TARGET_MS,
    )
    errs = [x["error"] for x in results if "error" in x]
    rows = [
        [
            i + 1,
            fmt(x.get("ms"), 1),
            fmt(x.get("final_round_ms"), 1),
            x.get("generations", "-"),
            x.get("final_generation", "-"),
            x.get("rejoins", "-"),
            x.get("error", ""),
        ]
        for i, x in enumerate(results)
    ]
    rep.section(f"""## 4. {n} members: last JoinGroup -> all Stable

`bench/join_bench.py`: {n} trio tasks in the bench process, one connection each, drive the
classic protocol on kmock's codec (JoinGroup v{versions["join"]}, SyncGroup
v{versions["sync"]}, Heartbeat v{versions["heartbeat"]}): JoinGroup without an id ->
MEMBER_ID_REQUIRED; when all have ids, all JoinGroup again at once (t0 = when the last of
these was sent); the leader assigns, everyone syncs; a SyncGroup or Heartbeat (every
{join_bench.HEARTBEAT_MS} ms once synced) answered REBALANCE_IN_PROGRESS makes a member join
again. t1 = when the last member received its SyncGroup response of the generation that all
{n} share. group.initial.rebalance.delay.ms=0 (kmock's default). A new group per repetition,
same kmock process; {len(results)} repetitions, median {fmt(m, 1)} ms (median of the final
round alone, from the last JoinGroup sent by anyone: {fmt(median(final), 1)} ms).

Reference: none measured. The librdkafka mock's classic group coordinator is driven by
fixed timers (group.initial.rebalance.delay.ms, 3 s by default, not settable from
confluent-kafka, then 100 ms once all members rejoined), so it would measure its timers.

{table(JOIN_HEADER, rows)}
{"**Errors:** " + "; ".join(errs) if errs else ""}""")


# --- 5. replay of __consumer_offsets ------------------------------------------------------


def bench_replay(rep: Report) -> None:
    import replay_gen

    n = p("replay_records")
    work = Path(tempfile.mkdtemp(prefix="replay-", dir=TMP))
    try:
        data = work / "data"
        # kmock writes meta.properties on its first start; replay_gen then creates
        # __consumer_offsets with kmock's registry (the broker makes it on first group use).
        log("replay: first start of kmock on the data dir")
        start_once(KmockProcess(data_dir=data))
        log(f"replay: writing {n:,} records")
        gen = replay_gen.generate(data, n)
        full, empty = [], []
        logged: list[tuple[int, float, float]] = []
        rss = []
        for r in range(p("replay_reps")):
            for who in _rotated(["full", "empty"], r):
                log(f"replay: start on the {who} dir (rep {r + 1})")
                if who == "full":
                    with KmockProcess(data_dir=data, admin=True, ready="readyz", timeout=120) as k:
                        full.append(k.start_s)
                        rss.append(proc_status(k.pid).get("VmRSS", 0) / 1024)
                    logged.append(k.logged_replay())
                else:
                    with KmockProcess(admin=True, ready="readyz") as k:
                        empty.append(k.start_s)
        mf, me = median(full), median(empty)
        records = logged[0][0] if logged else -1
        logged_s = [x[1] / 1000 for x in logged]
        mlog = median(logged_s)
        full_size = n == REPLAY_TARGET_RECORDS
        rep.row(
            "5",
            f"start with {n:,} __consumer_offsets records -> /readyz 200",
            fmt(mf, 2, " s"),
            fmt(me, 2, " s") + " (empty data dir)",
            ratio(mf, me),
            f"<= {REPLAY_TARGET_S} s"
            + ("" if full_size else f" for {REPLAY_TARGET_RECORDS:,} records (not this count)"),
            None if _nan(mf) or not full_size else mf <= REPLAY_TARGET_S,
        )
        rep.section(f"""## 5. Replay of {n:,} __consumer_offsets records at start

`bench/replay_gen.py` wrote {gen["records"]:,} offset-commit records ({gen["batches"]:,}
batches of up to {gen["partitions"]}, {gen["groups"]:,} groups x {gen["partitions"]} partitions =
{gen["keys"]:,} distinct keys, {gen["partitions_used"]} of the {gen["offsets_partitions"]}
__consumer_offsets partitions, {gen["bytes"] / 1e6:.1f} MB of segments) with kmock's own
storage.Log, build_batch and encode_key/encode_value into a data dir where kmock's topic
registry created __consumer_offsets as the broker does on first use; writing took
{gen["seconds"]:.1f} s. Then `kmock serve --admin-port <port>` was started on it; the clock
runs from spawn until GET /readyz answers 200 (set once the replay is done), polled every
1 ms. Reference, interleaved: the same on an empty data dir. The segment files are in the
page cache (just written). {len(full)} repetition(s), medians.

{
            table(
                [
                    "measurement",
                    "1M-record dir" if n == 1_000_000 else f"{n:,}-record dir",
                    "empty dir",
                    "ratio",
                    "raw (records)",
                    "raw (empty)",
                ],
                [
                    _vs_row("spawn -> /readyz 200", full, empty, 2, " s"),
                    _kmock_row("replay as logged ('replayed N ... in X ms')", logged_s, 2, " s"),
                    ["records replayed (logged)", fmt(records), "0", "-", "-", "-"],
                    [
                        "replay rate",
                        fmt(records / mlog if mlog else float("nan")) + " records/s",
                        "-",
                        "-",
                        "-",
                        "-",
                    ],
                    _kmock_row("RSS when ready", rss, 1, " MB"),
                ],
            )
        }""")
    finally:
        import shutil

        if not os.environ.get("BENCH_KEEP_TMP"):
            shutil.rmtree(work, ignore_errors=True)


# --- 6. 1,000 connections doing Metadata --------------------------------------------------


def bench_metadata(rep: Report) -> None:
    import kwire

    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

    n = p("meta_conns")
    reps = p("meta_reps")
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name="bench-meta")], allow_auto_topic_creation=False
    )
    out: dict[str, list[kwire.LoopResult]] = {}
    versions: dict[str, int] = {}
    # The mock creates 4 partitions per auto-created topic; give kmock's the same shape.
    for r in range(reps):
        for who in _rotated(["kmock", "mock"], r):
            log(f"metadata {who} {n} connections (rep {r + 1}/{reps})")
            ctx = KmockProcess(overrides={"num.partitions": 4}) if who == "kmock" else MockProcess()
            with ctx as target:
                adv = _prepare_wire(target)
                versions[who] = kwire.usable_version(request, (target.addr, adv))
                out.setdefault(who, []).append(
                    kwire.closed_loop(
                        target.addr,
                        [(request, min(versions.values()))] * n,
                        duration_s=p("meta_duration_s"),
                        warmup_s=p("meta_warmup_s"),
                        server_pid=target.pid,
                    )
                )
    stats = {who: _loop_stats(rs) for who, rs in out.items()}
    k, m = stats.get("kmock", {}), stats.get("mock", {})
    meta_version = min(versions.values()) if versions else "?"
    rep.row(
        "6",
        f"{n} connections, Metadata: p50 / p99 latency",
        f"{fmt(k.get('p50'), 1)} / {fmt(k.get('p99'), 1)} ms ({fmt(k.get('rate'))} req/s)",
        f"{fmt(m.get('p50'), 1)} / {fmt(m.get('p99'), 1)} ms ({fmt(m.get('rate'))} req/s, mock)",
        ratio(k.get("p99"), m.get("p99")) + " (p99)",
        "report only",
        None,
    )
    rows = []
    for who in ("kmock", "mock"):
        s = stats.get(who)
        if not s:
            continue
        rows.append(
            [
                who,
                fmt(s["rate"]),
                fmt(s["p50"], 1),
                fmt(s["p99"], 1),
                fmt(s["p999"], 1),
                fmt(s["max"], 1),
                fmt(s["cpu_us"]),
                fmt(s["connect"], 2),
                s["errors"],
                raw(s["raw_p99"], 1),
            ]
        )
    rep.section(f"""## 6. {n:,} concurrent connections doing Metadata

`bench/kwire.py`'s closed-loop generator: {n:,} connections (opened one after another, each
after one ApiVersions round trip), each sending Metadata v{meta_version}
for one 4-partition topic (`bench-meta`), one request in flight per connection, for
{p("meta_warmup_s")} s warm-up + {p("meta_duration_s")} s measured. Reference: the librdkafka
mock, same generator. (Metadata v9+ is not used: our codec rejects the mock's flexible
Metadata responses, which carry one byte too many.) {reps} repetition(s) interleaved, medians.
Report only: no target. Ratio kmock/mock p50 {ratio(k.get("p50"), m.get("p50"))},
p99 {ratio(k.get("p99"), m.get("p99"))}, req/s {ratio(k.get("rate"), m.get("rate"))}.

{table(META_HEADER, rows)}""")


# --- 7. pipeline bench --------------------------------------------------------------------


def bench_pipeline(rep: Report) -> None:
    script = BENCH_DIR / "pipeline_bench.py"
    if not script.exists():
        rep.section(
            "## 7. Pipeline bench\n\nbench/pipeline_bench.py does not exist yet: not run.\n"
        )
        rep.row("7", "pipeline bench", "not run (no bench/pipeline_bench.py)", "-", "-", "-", None)
        return
    if QUICK and not os.environ.get("BENCH_PIPELINE"):
        rep.section(
            "## 7. Pipeline bench\n\nSkipped in BENCH_QUICK mode: bench/pipeline_bench.py "
            "starts Spark and alone takes 1-3 minutes on this machine (set "
            "BENCH_PIPELINE=1 to run it anyway).\n"
        )
        rep.row("7", "pipeline bench", "skipped (BENCH_QUICK)", "-", "-", "-", None)
        return
    log("pipeline bench")
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(
            [PY, str(script)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=p("pipeline_timeout_s"),
        )
    except subprocess.TimeoutExpired:
        rep.section(f"## 7. Pipeline bench\n\nTimed out after {p('pipeline_timeout_s')} s.\n")
        rep.row("7", "pipeline bench", "timed out", "-", "-", "-", None)
        return
    took = time.perf_counter() - t0
    lines = [ln for ln in proc.stdout.splitlines() if ln.strip().startswith("|")]
    body = "\n".join(lines) if lines else "(no table rows printed)"
    if lines and not any(set(ln.replace("|", "").strip()) <= set("-: ") for ln in lines[:3]):
        cells = lines[0].strip().strip("|").count("|") + 1
        body = (
            "| "
            + " | ".join(f"column {i + 1}" for i in range(cells))
            + " |\n|"
            + "---|" * cells
            + "\n"
            + body
        )
    err = (
        ""
        if proc.returncode == 0
        else (f"\nExit code {proc.returncode}; stderr tail:\n\n```\n{proc.stderr[-1500:]}\n```\n")
    )
    rep.section(
        f"## 7. Pipeline bench\n\n`{PY} bench/pipeline_bench.py` ({took:.0f} s), its rows "
        f"verbatim:\n\n{body}\n{err}"
    )
    rep.row(
        "7",
        "pipeline bench",
        f"{len(lines)} row(s), see §7"
        if proc.returncode == 0
        else f"failed (exit {proc.returncode})",
        "-",
        "-",
        "-",
        None,
    )


# --- 8. sync produce round trip, per durability mode -------------------------------------

SYNC_TRIP_HEADER = ["kmock.durability", "p50 ms", "p99 ms", "round trips", "raw p50 ms"]
SYNC_TRIP_MODES = {"kafka": {}, "strict": {"kmock.durability": "strict"}}


def bench_sync_round_trip(rep: Report) -> None:
    """One confluent-kafka producer (acks=all), one record then flush(), over and over: the
    latency an application that waits for each write sees, in the default durability mode
    (Kafka's: answered from the page cache) and in the strict one (answered after an fsync)."""
    from confluent_kafka import Producer

    n, reps = p("sync_trips"), p("sync_reps")
    lat: dict[str, list[list[float]]] = {mode: [] for mode in SYNC_TRIP_MODES}
    for r in range(reps):
        for mode in _rotated(list(SYNC_TRIP_MODES), r):
            log(f"sync round trip {mode} x{n} (rep {r + 1}/{reps})")
            with KmockProcess(overrides=SYNC_TRIP_MODES[mode]) as target:
                producer = Producer(
                    {"bootstrap.servers": target.bootstrap, "acks": "all", "linger.ms": 0}
                )
                producer.produce("bench-sync", b"warm-up")  # topic creation, connections
                if producer.flush(30) != 0:
                    raise RuntimeError(f"{mode}: the warm-up record was not delivered")
                took = []
                for i in range(n):
                    t0 = time.perf_counter()
                    producer.produce("bench-sync", b"record-%d" % i)
                    if producer.flush(30) != 0:
                        raise RuntimeError(f"{mode}: record {i} was not delivered")
                    took.append((time.perf_counter() - t0) * 1000)
                lat[mode].append(took)
                del producer  # closed before its broker stops, so that it does not reconnect
    p50 = {m: [percentile(t, 50) for t in runs] for m, runs in lat.items()}
    p99 = {m: median([percentile(t, 99) for t in runs]) for m, runs in lat.items()}
    kafka, strict = median(p50["kafka"]), median(p50["strict"])
    rep.row(
        "8",
        "sync produce round trip (confluent-kafka, acks=all, 1 record, flush): p50",
        f"{fmt(kafka, 2)} ms (default)",
        f"{fmt(strict, 2)} ms (kmock.durability=strict)",
        ratio(kafka, strict),
        "default no slower",
        None if _nan(kafka) or _nan(strict) else kafka <= strict,
    )
    rows = [
        [mode, fmt(median(p50[mode]), 2), fmt(p99[mode], 2), n, raw(p50[mode], 2)]
        for mode in SYNC_TRIP_MODES
    ]
    rep.section(f"""## 8. Sync produce round trip, per durability mode

One confluent-kafka producer with acks=all produces one record and waits for it
(`flush()`), {n} times in a row on a fresh `kmock serve`, after one warm-up record that
creates the topic. Default: Kafka's durability, the answer comes from the page cache;
`kmock.durability=strict`: the answer waits for the group-commit fsync that covers the
record, so the difference is about one fsync on this disk. {reps} repetition(s)
interleaved, medians; target: the default no slower than strict.

{table(SYNC_TRIP_HEADER, rows)}""")


# --- 9. side by side with Tansu and the floors --------------------------------------------


def bench_side_by_side(rep: Report) -> None:
    import side_by_side

    side_by_side.report(side_by_side.run(p, log), rep, table)


# --- 10. test controls, unused -----------------------------------------------------------

# kmock servers of §10 (admin endpoint, fault, settings): without the admin endpoint (no
# journal: kmock serve's default), with it (the journal records every request, nobody reads
# it), with it and one fault armed for an API the load never sends (the fault table is
# consulted on every request), and with it but no journal (requests timed and counted for
# /metrics only): the last tells the journal's share from the endpoint's.
_CONTROLS_VARIANTS: dict[str, tuple[bool, dict[str, Any] | None, dict[str, Any]]] = {
    "off": (False, None, {}),
    "journal": (True, None, {}),
    "journal+fault": (
        True,
        {"api": "DeleteGroups", "error": "GROUP_ID_NOT_FOUND", "count": 1},
        {},
    ),
    "metrics only": (True, None, {"kmock.journal.size": 0}),
}


def _pin(pid: int, cpu: int) -> None:
    """Run every thread of process `pid` on `cpu` only (threads it starts later inherit it)."""
    for tid in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            os.sched_setaffinity(int(tid), {cpu})


def bench_controls(rep: Report) -> None:
    import json
    import urllib.request

    import kwire

    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

    n = p("controls_conns")
    rounds = p("controls_reps")
    request = MetadataRequest(
        topics=[MetadataRequestTopic(name="bench-meta")], allow_auto_topic_creation=False
    )
    cpus = sorted(os.sched_getaffinity(0))
    pinned = len(cpus) >= 2
    out: dict[str, list[kwire.LoopResult]] = {who: [] for who in _CONTROLS_VARIANTS}
    with contextlib.ExitStack() as stack:
        targets = {}
        for who, (admin, fault, settings) in _CONTROLS_VARIANTS.items():
            target = targets[who] = stack.enter_context(
                KmockProcess(admin=admin, overrides=settings)
            )
            _prepare_wire(target)
            if fault is not None:
                urllib.request.urlopen(
                    urllib.request.Request(
                        f"http://127.0.0.1:{target.admin_port}/v1/faults",
                        data=json.dumps(fault).encode(),
                        method="POST",
                    ),
                    timeout=10,
                ).read()
            if pinned:  # every server on one CPU, the load generator on another
                _pin(target.pid, cpus[-1])
        if pinned:
            stack.callback(os.sched_setaffinity, 0, set(cpus))
            os.sched_setaffinity(0, {cpus[0]})
        for who, target in targets.items():  # untimed: the journal's ring fills up
            log(f"controls {who}: warm-up, {n} connections, Metadata")
            kwire.closed_loop(
                target.addr, [(request, 4)] * n, duration_s=p("controls_first_s"), warmup_s=0
            )
        for r in range(rounds):
            log(f"controls: round {r + 1}/{rounds}, {n} connections, Metadata")
            for who in _rotated(list(_CONTROLS_VARIANTS), r):
                target = targets[who]
                out[who].append(
                    kwire.closed_loop(
                        target.addr,
                        [(request, 4)] * n,
                        duration_s=p("controls_duration_s"),
                        warmup_s=p("controls_warmup_s"),
                        server_pid=target.pid,
                    )
                )
    stats = {who: _loop_stats(rs) for who, rs in out.items()}

    def paired(who: str) -> tuple[float, float]:
        """Medians over the rounds of (rate, server CPU per request) of `who` / "off" in
        the same round."""
        rates, cpus_ = [], []
        for a, b in zip(out[who], out["off"], strict=True):
            if a.requests and b.requests:
                rates.append(a.rate / b.rate)
                cpus_.append((a.server_cpu_s / a.requests) / (b.server_cpu_s / b.requests))
        return (median(rates), median(cpus_)) if rates else (float("nan"), float("nan"))

    vs_off = {who: paired(who) for who in out}
    off, on = stats["off"], stats["journal"]
    r_on = vs_off["journal"][0]
    rep.row(
        "10",
        f"journal and fault table, unused: {n} connections, Metadata req/s",
        f"{fmt(on['rate'])} req/s (journal recording); with a fault armed: "
        f"{fmt(stats['journal+fault']['rate'])}",
        f"{fmt(off['rate'])} req/s (no admin endpoint, no journal)",
        "-" if _nan(r_on) else f"{r_on:.2f}x",
        f">= {CONTROLS_TARGET_RATIO:.2f}x",
        None if _nan(r_on) else r_on >= CONTROLS_TARGET_RATIO,
    )
    rows = [
        [
            who,
            fmt(s["rate"]),
            "-" if _nan(vs_off[who][0]) else f"{vs_off[who][0]:.2f}x",
            fmt(s["p50"], 2),
            fmt(s["p99"], 2),
            fmt(s["cpu_us"]),
            "-" if _nan(vs_off[who][1]) else f"{vs_off[who][1]:.2f}x",
            s["errors"],
            raw(s["raw"]),
        ]
        for who, s in stats.items()
    ]
    placement = (
        f"The servers run on CPU {cpus[-1]} and the load generator on CPU {cpus[0]}"
        if pinned
        else "Only one CPU is available: servers and load generator share it"
    )
    rep.section(f"""## 10. Test controls that nobody uses

What the request journal and the fault table (docs/controls.md) cost a broker whose tests
never read or arm them. Four `kmock serve` processes run side by side: "off" (kmock
serve's defaults: no admin endpoint, so no journal), "journal" (`--admin-port`: every
request is recorded in the journal, which nobody reads), "journal+fault" (the same, with one
fault armed for DeleteGroups, which the load never sends: the fault table is looked at for
every request), "metrics only" (`--admin-port` with `kmock.journal.size=0`: requests are
timed and counted for /metrics, nothing is recorded; what the endpoint costs without the
journal). `bench/kwire.py`'s closed loop, {n} connections each sending Metadata v4 for
one topic: first {p("controls_first_s")} s untimed against each (the journal's ring fills),
then {rounds} round(s) of {p("controls_warmup_s")} s warm-up + {p("controls_duration_s")} s \
measured against each in turn, the order rotated.

{placement}: where the scheduler puts a closed loop's two processes moves the rate of the
same server by up to 2x on this shared 2-CPU machine (bench/README.md, "Round 8: journal"),
and short rounds next to each other share whatever else the machine does. "vs off": the
median over the rounds of the rate (server CPU per request) against "off"'s in the same
round. Target: the journal's rate at least {CONTROLS_TARGET_RATIO:.2f}x the rate without it.

{table(CONTROLS_HEADER, rows)}""")


# --- 11. transactional produce -------------------------------------------------------------

TXN_HEADER = [
    "transactions x records",
    "target",
    "transactions/s",
    "records/s",
    "p50 ms / transaction",
    "p99 ms / transaction",
    "ratio kmock/mock (txn/s)",
    "raw transactions/s",
]
TXN_RECORD = b"r" * 100  # every record's value
TXN_TOPIC = "bench-txn"


def _txn_run(bootstrap: str, transactions: int, records: int) -> dict[str, Any]:
    """One confluent-kafka transactional producer: init_transactions, one untimed warm-up
    transaction (topic creation, the coordinator found, partition 0 added), then
    `transactions` x (begin, produce `records`, commit), timed. The high watermark must then
    be every record plus one COMMIT marker per transaction (the warm-up's included)."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    producer = Producer(
        {"bootstrap.servers": bootstrap, "transactional.id": "bench-txn", "linger.ms": 5}
    )
    producer.init_transactions(30)
    producer.begin_transaction()
    producer.produce(TXN_TOPIC, b"warm-up", partition=0)
    producer.commit_transaction(30)
    took = []
    t0 = time.perf_counter()
    for _ in range(transactions):
        s0 = time.perf_counter()
        producer.begin_transaction()
        for _ in range(records):
            producer.produce(TXN_TOPIC, TXN_RECORD, partition=0)
        producer.commit_transaction(30)
        took.append((time.perf_counter() - s0) * 1000)
    elapsed = time.perf_counter() - t0
    del producer  # closed before its broker stops, so that it does not reconnect
    want = 1 + transactions * records + (1 + transactions)
    probe = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-txn-probe"})
    deadline = time.monotonic() + 10  # the last marker may be written after EndTxn's answer
    while True:
        _, high = probe.get_watermark_offsets(TopicPartition(TXN_TOPIC, 0), timeout=10)
        if high == want or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    probe.close()
    if high != want:
        raise RuntimeError(f"high watermark {high}, expected {want} (records + markers)")
    return {
        "txn_s": transactions / elapsed,
        "records_s": transactions * records / elapsed,
        "p50": percentile(took, 50),
        "p99": percentile(took, 99),
    }


def bench_transactions(rep: Report) -> None:
    """A confluent-kafka transactional producer committing N transactions of M records,
    against kmock (defaults) and the librdkafka mock cluster, interleaved."""
    shapes, reps = p("txn_shapes"), p("txn_reps")
    res: dict[tuple[int, int, str], list[dict[str, Any]]] = {}
    errors: list[str] = []
    for r in range(reps):
        for i, (n, m) in enumerate(shapes):
            for who in _rotated(["mock", "kmock"], r + i):
                log(f"transactions {who} {n} x {m} records (rep {r + 1}/{reps})")
                server = MockProcess() if who == "mock" else KmockProcess()
                try:
                    with server as target:
                        res.setdefault((n, m, who), []).append(_txn_run(target.bootstrap, n, m))
                except Exception as e:  # one failed repetition is reported, not fatal
                    errors.append(f"{who} {n} x {m} rep {r + 1}: {type(e).__name__}: {e}")
    rows = []
    for n, m in shapes:
        per = {who: res.get((n, m, who), []) for who in ("mock", "kmock")}
        rate = {who: median([o["txn_s"] for o in os_]) for who, os_ in per.items()}
        for who, os_ in per.items():
            rows.append(
                [
                    f"{n:,} x {m:,}",
                    "librdkafka mock" if who == "mock" else "kmock",
                    fmt(rate[who]),
                    fmt(median([o["records_s"] for o in os_])),
                    fmt(median([o["p50"] for o in os_]), 2),
                    fmt(median([o["p99"] for o in os_]), 2),
                    ratio(rate["kmock"], rate["mock"]) if who == "kmock" else "-",
                    raw([o["txn_s"] for o in os_]),
                ]
            )
        records = {who: median([o["records_s"] for o in os_]) for who, os_ in per.items()}
        rep.row(
            "11",
            f"transactional produce, {n:,} transactions x {m:,} records (confluent-kafka)",
            f"{fmt(rate['kmock'])} txn/s, {fmt(records['kmock'])} records/s",
            f"{fmt(rate['mock'])} txn/s, {fmt(records['mock'])} records/s (librdkafka mock)",
            ratio(rate["kmock"], rate["mock"]),
            "-",
            None,
        )
    err_text = ("\n**Errors:**\n\n" + "\n".join(f"* {e}" for e in errors) + "\n") if errors else ""
    rep.section(f"""## 11. Transactional produce (confluent-kafka)

One confluent-kafka producer with a `transactional.id` (linger.ms=5, otherwise librdkafka's
defaults: idempotent, acks=all) runs `init_transactions()`, one untimed warm-up transaction
(the topic is created, the transaction coordinator found), then N transactions of M records
of {len(TXN_RECORD)} B, all to partition 0: `begin_transaction()`, M x `produce()`,
`commit_transaction()` (which flushes the records, then sends EndTxn; the COMMIT marker
lands in the partition as the coordinator completes the transaction). Timed from the first
begin to the last commit's return; per-transaction latency is begin to commit's return.
Afterwards the partition's high watermark must be every record plus one marker per
transaction. Against `kmock serve` with
its defaults (a fresh data dir) and the librdkafka mock cluster (`bench/mock_holder.py`,
which implements the transaction coordinator and writes the markers too), a fresh server per
run, the client in the bench process; {reps} repetition(s), the order rotating, medians. No
target: the row is there to follow.

{table(TXN_HEADER, rows)}{err_text}""")


# --- main ---------------------------------------------------------------------------------

SECTIONS = [
    ("1", "start-up", bench_startup),
    ("2", "produce/consume", bench_produce_consume),
    ("3", "OffsetCommit", bench_commits),
    ("4", "JoinGroup x100", bench_join),
    ("5", "replay", bench_replay),
    ("6", "Metadata x1000", bench_metadata),
    ("7", "pipeline", bench_pipeline),
    ("8", "sync round trip", bench_sync_round_trip),
    ("9", "side by side", bench_side_by_side),
    ("10", "controls, unused", bench_controls),
    ("11", "transactional produce", bench_transactions),
]


def invocation() -> str:
    script = " ".join(
        shlex.quote(a)
        for a in [
            os.path.relpath(PY, ROOT) if PY.startswith(str(ROOT)) else PY,
            os.path.relpath(sys.argv[0], ROOT),
            *sys.argv[1:],
        ]
    )
    env = " ".join(
        f"{k}={shlex.quote(os.environ[k])}"
        for k in ("BENCH_QUICK", "BENCH_ONLY", "BENCH_APPEND", *SBS_ENV)
        if os.environ.get(k)
    )
    env = env + " " if env else ""
    if os.environ.get("MAKELEVEL"):
        return f"`{env}make bench` (which ran `{script}`)"
    return f"`{env}{script}`"


def _appended(old: str, only: set[str], text: str) -> str:
    """RESULTS.md with a partial run's report (BENCH_ONLY + BENCH_APPEND=1) added at its end,
    under a marker naming its sections; an earlier block of the same sections is replaced.
    The full run's report above it stays as it was."""
    marker = f"<!-- appended by a BENCH_ONLY={','.join(sorted(only))} run -->"
    old = old.split("\n" + marker, 1)[0].rstrip()
    body = text.replace(
        "# kmock benchmark results", "# Partial run: sections " + ", ".join(sorted(only)), 1
    )
    return f"{old}\n\n{marker}\n\n{body}"


def main() -> int:
    only = {s.strip() for s in os.environ.get("BENCH_ONLY", "").split(",") if s.strip()}
    TMP.mkdir(parents=True, exist_ok=True)
    nobytecode_env = common.use_bytecode_cache()
    if nobytecode_env:
        rep_note = (
            "PYTHONDONTWRITEBYTECODE was set in the environment; the bench unset it for "
            "the processes it starts and kept their bytecode caches in bench/tmp/pycache."
        )
    else:
        rep_note = ""
    started = dt.datetime.now(dt.UTC)
    load_before = common.loadavg()
    t0 = time.perf_counter()
    rep = Report()
    if rep_note:
        rep.notes.append(rep_note)
    _, kmock_cmd = common.kmock_command()
    for num, name, fn in SECTIONS:
        if only and num not in only:
            continue
        log(f"section {num}: {name}")
        s0 = time.perf_counter()
        try:
            fn(rep)
        except Exception as e:  # one broken section must not lose the others
            tb = traceback.format_exc()
            log(f"section {num} failed: {e}\n{tb}")
            rep.row(
                num,
                name,
                f"failed: {type(e).__name__}: {str(e).splitlines()[0][:150]}",
                "-",
                "-",
                "-",
                None,
            )
            rep.section(f"## {num}. {name}: FAILED\n\n```\n{tb[-3000:]}\n```\n")
        log(f"section {num} done in {time.perf_counter() - s0:.0f} s")
    total = time.perf_counter() - t0
    load_after = common.loadavg()
    import shutil

    for d in TMP.glob("nocache-*"):
        shutil.rmtree(d, ignore_errors=True)
    v = common.versions()
    if not only or "9" in only:
        from peers import tansu_version

        v["tansu"] = tansu_version().replace("tansu ", "")
    machine = table(
        ["", ""],
        [
            ["command", invocation()],
            [
                "mode",
                ("QUICK (BENCH_QUICK=1: reduced counts, smoke run)" if QUICK else "full")
                + (f", sections {','.join(sorted(only))} only" if only else ""),
            ],
            ["date (UTC)", started.strftime("%Y-%m-%d %H:%M:%S")],
            ["duration", f"{total:.0f} s"],
            [
                "machine",
                f"{os.cpu_count()} CPUs (nproc {len(os.sched_getaffinity(0))}), "
                f"{common.cpu_model()}, {common.mem_total()} RAM, "
                f"{platform.system()} {platform.release()}",
            ],
            ["load average before / after (1, 5, 15 min)", f"{load_before} / {load_after}"],
            [
                "kmock",
                f"`{kmock_cmd} serve` ({v.pop('kmock')}), this tree's code (PYTHONPATH), "
                f"git {common.git_revision()}",
            ],
            ["versions", ", ".join(f"{k} {val}" for k, val in v.items())],
        ],
    )
    notes = "\n".join(f"* {n}" for n in rep.notes)
    text = f"""# kmock benchmark results

Generated by {invocation()}; do not edit by hand (bench/README.md explains each number).

{machine}
## Summary

Medians. "reference" was measured side by side in the same run (interleaved repetitions);
ratio = kmock / reference. Targets are reported, not asserted.

{table(SUMMARY_HEADER, [list(r) for r in rep.summary])}
{notes + chr(10) if notes else ""}
{chr(10).join(rep.sections)}"""
    if only and os.environ.get("BENCH_APPEND"):
        text = _appended(RESULTS.read_text() if RESULTS.exists() else "", only, text)
    RESULTS.write_text(text)
    log(f"wrote {RESULTS} ({total:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
