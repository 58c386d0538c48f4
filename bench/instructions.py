"""Instructions per request, counted by valgrind (callgrind): a measure of the request path's
cost that the load of a shared machine does not move (not part of `make bench`).

    python bench/instructions.py [commit|metadata|produce] [--requests N] [--tree DIR]
    python bench/instructions.py [commit|metadata|produce] --requests 300 --bytecodes 40
    python bench/instructions.py commit --conns 256 [--one-partition] --requests 2560
    python bench/instructions.py metadata --requests 2000 --controls journal|metrics|fault

One process runs a broker (`serve`, this tree's code or --tree's) and a client on the same
trio loop, over a real socket: §9's 1-connection OffsetCommit v9 (each time the same group),
Metadata v8 for the 4-partition `bench-meta`, or Produce v9 with acks=all of one batch of
one 100-byte record to `bench-sync` (no producer id, as confluent-kafka's default
producer sends it; the same batch each time, appended each time). The process
runs twice under callgrind, with 0 and with N requests after the same warm-up; the
difference divided by N is the instructions of one round trip, the in-process client's
included (the same for every tree, so differences between trees are the broker's). About
40 s per run on the 2-vCPU machine of bench/RESULTS.md. `--tree ../main` measures another
checkout with this script. Needs valgrind (`apt-get install valgrind`).

`--conns N` counts a request at concurrency: N connections at once, one request in flight on
each (§9's 256- and 1,000-connection rows); for commits, each for a group of its own, spread over
__consumer_offsets' partitions as group ids hash, or, with `--one-partition`, all in one of
them (the case where commits could share a batch). 256 connections take about 9 minutes
per run under callgrind here.

`--controls` starts the broker as bench/run.py's §10 starts `kmock serve`: "off" (the
default: no admin endpoint, so no journal), "journal" (the admin endpoint on, on a free
port: every request is recorded in the journal, which nobody reads), "fault" (the same, with
§10's fault armed, for DeleteGroups, which the client never sends: the fault table is
consulted on every request); and "metrics" (the admin endpoint with `kmock.journal.size=0`:
requests timed and counted for /metrics, no journal), which tells the two costs apart.

The broker settles its garbage collector once ready, as `kmock serve` does (broker.server
.settle_gc: start-up frozen, a young generation of 10,000): with Python's default
thresholds a request that leaves one object alive (a journal entry) pays for collections
the served broker does not run.

`--bytecodes TOP` names the Python functions the instructions go to, which callgrind's
C-level view cannot (it sees the interpreter's loop): the same two runs in-process under
`sys.settrace`, counting each function's bytecodes and calls per round trip.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent


# What `--controls` adds to the broker's settings, and the fault it arms (bench/run.py §10).
CONTROLS = {
    "off": ({}, None),
    "journal": ({"admin.port": 0}, None),
    "metrics": ({"admin.port": 0, "kmock.journal.size": 0}, None),
    "fault": (
        {"admin.port": 0},
        {"api": "DeleteGroups", "error": "GROUP_ID_NOT_FOUND", "count": 1},
    ),
}


def _client(
    api: str,
    n: int,
    conns: int = 1,
    one_partition: bool = False,
    controls: str = "off",
    records: int = 1,
) -> None:
    """The process callgrind runs: broker and client on one trio loop, `n` round trips
    (with `conns` > 1: over that many connections at once, one request in flight on each,
    `n // conns` round trips each, each connection committing for a group of its own;
    with `one_partition`, groups whose offsets all go to one __consumer_offsets partition;
    `controls`: see `--controls`)."""
    import kwire
    import side_by_side
    import trio

    from broker.server import serve
    from protocol.messages.create_topics import CreatableTopic, CreateTopicsRequest
    from tests.conftest import broker_config

    async def main() -> None:
        data = Path(tempfile.mkdtemp(prefix="kmock-instructions-")) / "data"
        async with trio.open_nursery() as nursery:
            settings, fault = CONTROLS[controls]
            config = broker_config(data, **{"num.partitions": 4, **settings})
            broker = await nursery.start(functools.partial(serve, config, own_process=True))
            await broker.ready.wait()
            if fault is not None:  # as POST /v1/faults adds it (broker.controls.api)
                c = broker.controls
                c.add_fault(c.faults.parse(fault, c.routes()))
            host, port = broker.bootstrap_servers.split(",")[0].rsplit(":", 1)
            streams = [await trio.open_tcp_stream(host, int(port)) for _ in range(conns)]
            stream = streams[0]

            async def round_trip(frame: bytes, stream: Any = stream) -> bytes:
                await stream.send_all(frame)
                buf = b""
                while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
                    buf += await stream.receive_some(65536)
                return buf

            topics = [
                CreatableTopic(
                    name=name,
                    num_partitions=partitions,
                    replication_factor=-1,
                    assignments=[],
                    configs=[],
                )
                for name, partitions in side_by_side.TOPICS.items()
            ]
            await round_trip(
                kwire.request_bytes(CreateTopicsRequest(topics=topics, timeout_ms=30000), 5)
            )
            if api == "commit":
                request, version = side_by_side._commit_requests(1, "instructions", 9)[0]
            elif api == "produce":
                request, version = _produce_request(records), 9
            else:
                request, version = side_by_side._metadata_request(), side_by_side.METADATA_VERSION
            frame = kwire.request_bytes(request, version)
            if conns > 1:
                if api == "commit":
                    commits = side_by_side._commit_requests(conns * 60, "instructions", 9)
                    if one_partition:  # groups of one __consumer_offsets partition
                        partition_for = broker.coordinator.coordinator.partition_for
                        first = partition_for(commits[0][0].group_id)
                        commits = [c for c in commits if partition_for(c[0].group_id) == first]
                    frames = [kwire.request_bytes(r, v) for r, v in commits[:conns]]
                else:  # the same request on every connection
                    frames = [frame] * conns
                answers = []

                async def loop(stream: Any, frame: bytes) -> None:
                    for _ in range(20 + n // conns):
                        answers.append(await round_trip(frame, stream))

                async with trio.open_nursery() as clients:
                    for s, f in zip(streams, frames, strict=True):
                        clients.start_soon(loop, s, f)
                answer = answers[-1]
            else:
                for _ in range(20 + n):  # 20 to warm up, then the n counted
                    answer = await round_trip(frame)
            _, response = kwire.decode_response(request.API_KEY, version, answer[4:])
            if kwire.error_codes(response):  # a failing request would measure its failure
                raise RuntimeError(f"the broker answered with errors: {response}")
            nursery.cancel_scope.cancel()

    trio.run(main)


def _produce_request(records: int = 1) -> Any:
    from protocol.messages.produce import PartitionProduceData, ProduceRequest, TopicProduceData
    from protocol.records import build_batch

    # A millisecond per 1,000 records, as a client filling a batch for linger.ms would.
    batch = build_batch(
        [(None, b"x" * 100, (), 1_700_000_000_000 + i // 1000) for i in range(records)]
    )
    data = PartitionProduceData(index=0, records=batch)
    return ProduceRequest(
        acks=-1,
        timeout_ms=30000,
        topic_data=[TopicProduceData(name="bench-sync", partition_data=[data])],
    )


def _bytecodes(api: str, n: int, top: int, **load: Any) -> None:
    """Print where one round trip's Python bytecodes go, per function: a `sys.settrace`
    count of opcode events of a run of `n` requests minus one of none (both after a first,
    untraced run, so that neither pays the imports). Deterministic like callgrind's count,
    and it names the Python functions that callgrind's C-level view cannot; it leaves out
    what C code costs (allocations, struct packing, system calls)."""
    import collections

    opcodes: collections.Counter[Any] = collections.Counter()
    calls: collections.Counter[Any] = collections.Counter()

    def trace(frame: Any, event: str, arg: Any) -> Any:
        if event == "opcode":
            opcodes[frame.f_code] += 1
        elif event == "call":
            frame.f_trace_opcodes = True
            calls[frame.f_code] += 1
        return trace

    _client(api, 0, **load)  # the imports, untraced
    runs = []
    for requests in (0, n):
        opcodes.clear()
        calls.clear()
        sys.settrace(trace)
        try:
            _client(api, requests, **load)
        finally:
            sys.settrace(None)
        runs.append((opcodes.copy(), calls.copy()))
    (op0, calls0), (op1, calls1) = runs
    per = {code: (op1[code] - op0[code]) / n for code in op1}
    per_calls = {code: (calls1[code] - calls0[code]) / n for code in calls1}
    print(
        f"{api} (controls {load.get('controls', 'off')}): {sum(per.values()):,.0f} bytecodes, "
        f"{sum(per_calls.values()):,.1f} Python calls per round trip\n"
        "  bytecodes  calls  function"
    )
    root = str(BENCH_DIR.parent) + os.sep
    for code, count in sorted(per.items(), key=lambda item: -item[1])[:top]:
        where = code.co_filename.replace(root, "").replace(sys.prefix + os.sep, "")
        name = f"{where}:{code.co_firstlineno} {code.co_name}"
        print(f"  {count:9.1f} {per_calls.get(code, 0):6.1f}  {name}")


def _count(tree: Path, api: str, n: int, **load: Any) -> int:
    # `load`: _client's options, passed to the counted process as its command line's.
    options = []
    for name, value in load.items():
        flag = "--" + name.replace("_", "-")
        if value is True:
            options.append(flag)
        elif value is not False:
            options += [flag, str(value)]
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONPATH=f"{tree}{os.pathsep}{tree / 'bench'}")
    out = subprocess.run(
        [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            str(BENCH_DIR / "instructions.py"),
            "--child",
            api,
            "--requests",
            str(n),
            *options,
        ],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    )
    if out.returncode != 0:
        raise RuntimeError(f"the counted run failed:\n{out.stderr[-3000:]}")
    match = re.search(r"Collected : (\d+)", out.stderr)
    if match is None:
        raise RuntimeError(f"no instruction count from callgrind:\n{out.stderr[-2000:]}")
    return int(match.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("api", choices=("commit", "metadata", "produce"), nargs="?", default="commit")
    ap.add_argument("--requests", type=int, default=1000)
    ap.add_argument("--tree", type=Path, default=BENCH_DIR.parent)
    ap.add_argument(
        "--controls",
        choices=tuple(CONTROLS),
        default="off",
        help="off: no admin endpoint; journal: the journal recording; metrics: the admin "
        "endpoint without a journal (requests timed and counted); fault: the journal and a "
        "fault armed that matches nothing (as bench/run.py's §10)",
    )
    ap.add_argument(
        "--bytecodes",
        type=int,
        metavar="TOP",
        help="instead: the TOP functions by Python bytecodes per round trip (no valgrind, "
        "this tree's code, about 1 s per 100 requests)",
    )
    ap.add_argument(
        "--conns",
        type=int,
        default=1,
        help="that many connections at once, one request in flight on each (a commit: each "
        "its own group; §9's concurrent rows); the count is per request, warm-up and "
        "connects left out",
    )
    ap.add_argument(
        "--one-partition",
        action="store_true",
        help="with --conns: groups whose offsets all go to one __consumer_offsets partition",
    )
    ap.add_argument(
        "--records",
        type=int,
        default=1,
        help="produce: that many 100-byte records in the batch (4,400: ~480 KB, what "
        "confluent-kafka sends in §2's 100 B produce)",
    )
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    load = {
        "conns": a.conns,
        "one_partition": a.one_partition,
        "controls": a.controls,
        "records": a.records,
    }
    if a.child:
        _client(a.api, a.requests, **load)
        return
    if a.bytecodes is not None:
        _bytecodes(a.api, a.requests, a.bytecodes, **load)
        return
    tree = a.tree.resolve()
    if a.one_partition and a.api != "commit":
        ap.error("--one-partition is for commit only")
    if a.records != 1 and a.api != "produce":
        ap.error("--records is for produce only")
    base = _count(tree, a.api, 0, **load)
    loaded = _count(tree, a.api, a.requests, **load)
    print(
        f"{a.api} (controls {a.controls}): {(loaded - base) / a.requests:,.0f} instructions "
        f"per round trip ({tree})"
    )


if __name__ == "__main__":
    main()
