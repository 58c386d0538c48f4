"""Profile a kmock process under one of the benchmark loads with py-spy (not part of `make bench`).

    python bench/profile.py SCENARIO [--seconds S] [--top N] [--native] [--wall] [--conns N]

By default only samples that hold the GIL are kept (py-spy --gil): on this loaded 2-core VM
a wall-clock profile charges send() with the time the woken client runs. `--wall` keeps all.

SCENARIO: startup | replay | commits | metadata | join | produce100 | produce10k |
          consume100 | consume10k | syncproduce
syncproduce: one confluent-kafka producer (acks=all, linger.ms=0) producing one record and
flush()ing, in a loop (bench/run.py §9's sync produce round trip); `commits --conns 1` is §9's
sync OffsetCommit round trip.
py-spy must be installed in the same venv (`pip install py-spy`). Prints the functions with
the most samples, by self time and by inclusive time (a function counted once per stack),
and keeps the raw collapsed stacks in bench/tmp/profile-<scenario>.txt for flame graphs.
"""

from __future__ import annotations

import argparse
import collections
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

BENCH_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH_DIR.parent))
sys.path.insert(0, str(BENCH_DIR))

from common import PY, TMP, KmockProcess, kmock_command, serve_args, start_once  # noqa: E402

PYSPY = str(Path(PY).parent / "py-spy")


class Spy:
    def __init__(
        self, pid: int, out: Path, seconds: float | None, native: bool, gil: bool = True
    ) -> None:
        cmd = [
            PYSPY,
            "record",
            "--pid",
            str(pid),
            "--format",
            "raw",
            "--rate",
            "250",
            "--function",
            "--threads",
            "-o",
            str(out),
        ]
        if gil:
            # Only samples holding the GIL: leaves out blocking syscalls (send() on loopback
            # is charged the receiver's wake-up and preemption on this busy 2-core VM).
            cmd.append("--gil")
        if seconds:
            cmd += ["--duration", str(int(seconds))]
        if native:
            cmd.append("--native")
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        time.sleep(0.3)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(2)
        self.proc.wait(30)


def report(path: Path, top: int) -> None:
    self_c: collections.Counter[str] = collections.Counter()
    incl: collections.Counter[str] = collections.Counter()
    files: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        count = int(n)
        frames = [
            f
            for f in stack.split(";")
            if not f.startswith("thread (") and not f.startswith("process ")
        ]
        if not frames:
            continue
        total += count
        self_c[_short(frames[-1])] += count
        shorts = {_short(x) for x in frames}
        for f in shorts:
            incl[f] += count
        for f in {x.partition(" (")[2].rpartition(":")[0] for x in shorts}:
            files[f] += count
    print(f"{total} samples")
    print("\n--- inclusive time by file (a file counted once per stack) ---")
    for f, c in files.most_common(top):
        print(f"{100 * c / total:5.1f}%  {f}")
    print("\n--- self time ---")
    for f, c in self_c.most_common(top):
        print(f"{100 * c / total:5.1f}%  {f}")
    print("\n--- inclusive time ---")
    for f, c in incl.most_common(top):
        print(f"{100 * c / total:5.1f}%  {f}")
    stages(path)


# The request path's stages, for "where the time goes" (bench/README.md): a sample is
# charged to the first of these, in this order, whose function is on its stack (so a
# metric update inside the handler counts as metrics, a storage append inside the
# coordinator runtime as storage).
STAGES = [
    ("metrics", ("broker/metrics.py",)),
    ("storage append (log, segment)", ("storage/",)),
    ("record batch build/validate", ("protocol/records.py",)),
    ("request header parse", ("parse_request_header",)),
    ("request body decode", ("decode (protocol/schema.py",)),
    ("response encode + frame", ("respond (broker/dispatch.py",)),
    ("socket write", ("_Connection.send", "_unsent", "_Connection.write")),
    ("coordinator (pure)", ("coordinator/",)),
    ("coordinator runtime (broker/runtime.py)", ("broker/runtime.py",)),
    ("handler", ("broker/handlers/", "broker/topics.py")),
    ("waiting to read (trio wait_readable)", ("_wait_readable",)),
    (
        "framing + read loop (os.read, FrameBuffer, dispatch)",
        ("broker/connection.py", "broker/reactor.py", "broker/dispatch.py"),
    ),
    ("trio scheduler, outside any connection task", ("trio/",)),
]


def stages(path: Path) -> None:
    """Share of the samples per stage of the request path (STAGES)."""
    counts: collections.Counter[str] = collections.Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack:
            continue
        total += int(n)
        frames = [_short(f) for f in stack.split(";")]
        for name, needles in STAGES:
            if any(needle in f for f in frames for needle in needles):
                counts[name] += int(n)
                break
        else:
            counts["other"] += int(n)
    print("\n--- stages of the request path ---")
    for name, c in counts.most_common():
        print(f"{100 * c / total:5.1f}%  {name}")


def _short(frame: str) -> str:
    # "func (path/to/file.py:123)" -> "func (file.py:123)" relative to the project
    name, _, where = frame.partition(" (")
    where = where.rstrip(")")
    root = str(BENCH_DIR.parent) + "/"
    where = where.replace(root, "")
    if "site-packages/" in where:
        where = where.split("site-packages/", 1)[1]
    elif "/lib/python3" in where:
        where = "stdlib/" + where.split("/lib/python3", 1)[1].split("/", 1)[1]
    return f"{name} ({where})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("scenario")
    ap.add_argument("--seconds", type=float, default=8.0)
    ap.add_argument("--top", type=int, default=35)
    ap.add_argument("--native", action="store_true")
    ap.add_argument("--wall", action="store_true", help="all samples, not only GIL-holding")
    ap.add_argument("--records", type=int, default=200_000)
    ap.add_argument("--conns", type=int, default=256)
    a = ap.parse_args()
    TMP.mkdir(parents=True, exist_ok=True)
    out = TMP / f"profile-{a.scenario}.txt"
    sc = a.scenario

    if sc == "startup":
        # py-spy launches kmock itself so that imports are sampled too.
        work = Path(tempfile.mkdtemp(dir=TMP))
        spy = _serve_under_spy(out, 1000, work / "data", stderr=subprocess.DEVNULL)
        time.sleep(a.seconds)
        _stop_served(spy, 30)
        shutil.rmtree(work, ignore_errors=True)
        report(out, a.top)
        return

    if sc == "replay":
        import replay_gen

        work = Path(tempfile.mkdtemp(dir=TMP))
        data = work / "data"
        start_once(KmockProcess(data_dir=data))
        print(replay_gen.generate(data, a.records))
        spy = _serve_under_spy(out, 250, data, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 600
        # wait for the replay line in kmock's stderr (py-spy passes it through)
        assert spy.stderr is not None
        for line in spy.stderr:
            if "replayed" in line:
                print(line.strip())
                break
            if time.time() > deadline:
                break
        _stop_served(spy, 60)
        shutil.rmtree(work, ignore_errors=True)
        report(out, a.top)
        return

    with KmockProcess() as k:
        import kwire
        from run import _commit_requests, _prepare_wire

        adv = _prepare_wire(k)
        if sc == "commits":
            v = kwire.common_version(type(_commit_requests(1, 0, 8)[0][0]), adv)
            reqs = _commit_requests(a.conns, 0, v)

            def load() -> object:
                return kwire.closed_loop(k.addr, reqs, duration_s=a.seconds + 2, warmup_s=0.5)

        elif sc == "metadata":
            from protocol.messages.metadata import MetadataRequest, MetadataRequestTopic

            req = MetadataRequest(topics=[MetadataRequestTopic(name="bench-meta")])

            def load() -> object:
                return kwire.closed_loop(
                    k.addr, [(req, 8)] * a.conns, duration_s=a.seconds + 2, warmup_s=0.5
                )

        elif sc == "join":
            import join_bench
            import trio

            vs = join_bench.request_versions(adv)

            def load() -> None:
                for r in range(int(a.seconds)):
                    print(trio.run(join_bench.form_group, k.addr, 100, f"prof-{r}", vs))
        elif sc in ("produce100", "produce10k", "consume100", "consume10k"):
            size, count = (100, 300_000) if sc.endswith("100") else (10240, 30_000)
            client = [
                PY,
                str(BENCH_DIR / "ck_client.py"),
                k.bootstrap,
                f"prof-{size}",
                str(size),
                str(count),
            ]
            if sc.startswith("consume"):  # fill the topic first, unprofiled
                subprocess.run(client, capture_output=True)
                client.append("consume-only")

            def load() -> None:
                r = subprocess.run(client, capture_output=True, text=True)
                print(r.stdout.strip()[-500:])
        elif sc == "syncproduce":
            from confluent_kafka import Producer

            producer = Producer({"bootstrap.servers": k.bootstrap, "acks": "all", "linger.ms": 0})
            producer.produce("prof-sync", b"warm-up")
            producer.flush(30)

            def load() -> str:
                t0 = time.perf_counter()
                end, n = t0 + a.seconds + 2, 0
                while time.perf_counter() < end:
                    producer.produce("prof-sync", b"record-%d" % n)
                    if producer.flush(30) != 0:
                        raise RuntimeError(f"record {n} was not delivered")
                    n += 1
                took = time.perf_counter() - t0
                return f"{n} sync produce round trips, {took / n * 1e6:.0f} us each"
        else:
            raise SystemExit(f"unknown scenario {sc}")
        result: list[object] = []
        t = threading.Thread(target=lambda: result.append(load()))
        t.start()
        time.sleep(1.0)
        spy = Spy(k.pid, out, None, a.native, gil=not a.wall)
        t.join()
        spy.stop()
        if result and isinstance(result[0], str):
            print(result[0])
        if result and hasattr(result[0], "rate"):
            r: Any = result[0]
            lat = sorted(r.latencies_s)
            print(
                f"rate {r.rate:.0f}/s p50 {lat[len(lat) // 2] * 1000:.1f} ms "
                f"p99 {lat[int(len(lat) * 0.99)] * 1000:.1f} ms errors {r.errors}"
            )
    report(out, a.top)


def _serve_under_spy(out: Path, rate: int, data_dir: Path, **popen: Any) -> subprocess.Popen[Any]:
    """`kmock serve` on a free port, launched by py-spy so that its start is sampled too."""
    cmd, _ = kmock_command()
    return subprocess.Popen(
        [
            PYSPY,
            "record",
            "--format",
            "raw",
            "--rate",
            str(rate),
            "--function",
            "-o",
            str(out),
            "--",
            *cmd,
            *serve_args(0, data_dir),
        ],
        stdout=subprocess.DEVNULL,
        **popen,
    )


def _stop_served(spy: subprocess.Popen[Any], timeout: float) -> None:
    """SIGTERM the kmock that py-spy launched; py-spy then writes its output and exits."""
    for child in _children(spy.pid):
        os.kill(child, 15)
    spy.wait(timeout)


def _children(pid: int) -> list[int]:
    try:
        out = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout
    except OSError:
        return []
    return [int(x) for x in out.split()]


if __name__ == "__main__":
    main()
