"""The container image: its size, `docker run` -> /readyz time, and the broker's RSS in the
container. Prints a Markdown section for bench/RESULTS.md.

    python bench/docker_bench.py [--image kmock:latest] [--runs 5]

Needs a running Docker engine and the image built (`docker build -t kmock .`, or `make
docker-test`, which also provides the base image where the registry is unreachable).

- size: `docker image inspect`'s Size of the image and of its base (the Dockerfile's FROM),
  and their difference, which is what kmock adds.
- run -> ready: from just before `docker run --detach` (container created and started)
  until GET /readyz on the published admin port answers 200, polled every 5 ms from the
  host; also the broker's own "listening ... in N ms" from its log. Each run is a new
  container with a new anonymous volume, removed afterwards.
- RSS: VmRSS of the broker (PID 1 in the container) once ready, and after producing and
  consuming 10,000 records of 100 bytes with kafka-python from the host; beside it the
  container's memory use as its cgroup counts it (`docker stats`, page cache included).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import re
import socket
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

RECORDS = 10_000
RECORD_BYTES = 100
READY_TIMEOUT_S = 60


def docker(*args: str) -> str:
    return subprocess.run(
        ["docker", *args], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:
        with (
            contextlib.suppress(urllib.error.URLError, ConnectionError, TimeoutError),
            urllib.request.urlopen(url, timeout=1) as answer,
        ):
            if answer.status == 200:
                return
        time.sleep(0.005)
    raise TimeoutError(f"{url} not ready in {READY_TIMEOUT_S} s")


def rss_mb(container: str) -> float:
    status = docker("exec", container, "cat", "/proc/1/status")
    (kb,) = re.findall(r"^VmRSS:\s+(\d+) kB", status, re.M)
    return int(kb) / 1024


def cgroup_mem(container: str) -> str:
    return docker("stats", "--no-stream", "--format", "{{.MemUsage}}", container).split(" / ")[0]


def load(bootstrap: str) -> None:
    from kafka import KafkaConsumer, KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for _ in range(RECORDS):
        producer.send("bench", b"x" * RECORD_BYTES)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(
        "bench",
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        consumer_timeout_ms=10_000,
    )
    seen = 0
    for _ in consumer:
        seen += 1
        if seen == RECORDS:
            break
    consumer.close()
    if seen != RECORDS:
        raise RuntimeError(f"consumed {seen} of {RECORDS} records")


def one_run(image: str, with_load: bool) -> dict[str, float | str]:
    port, admin = free_port(), free_port()
    started = time.monotonic()
    container = docker(
        "run", "--detach",
        "-p", f"127.0.0.1:{port}:9092", "-p", f"127.0.0.1:{admin}:8080",
        "-e", f"KAFKA_ADVERTISED_LISTENERS=PLAINTEXT://127.0.0.1:{port}",
        image,
    )  # fmt: skip
    try:
        wait_ready(f"http://127.0.0.1:{admin}/readyz")
        ready_s = time.monotonic() - started
        logged = subprocess.run(
            ["docker", "logs", container], capture_output=True, text=True, check=True
        ).stderr
        listening = re.search(r"kmock listening on .* in (\d+) ms", logged)
        out: dict[str, float | str] = {
            "ready_s": ready_s,
            "serve_ms": float(listening.group(1)) if listening else float("nan"),
            "rss_idle_mb": rss_mb(container),
            "cgroup_idle": cgroup_mem(container),
        }
        if with_load:
            load(f"127.0.0.1:{port}")
            out["rss_load_mb"] = rss_mb(container)
            out["cgroup_load"] = cgroup_mem(container)
        return out
    finally:
        docker("rm", "--force", "--volumes", container)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--image", default="kmock:latest")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    size = int(docker("image", "inspect", "--format", "{{.Size}}", args.image))
    dockerfile = (Path(__file__).resolve().parents[1] / "Dockerfile").read_text()
    base = re.findall(r"^FROM\s+(\S+)", dockerfile, re.M)[-1]
    base_size = int(docker("image", "inspect", "--format", "{{.Size}}", base))
    base_note = docker("image", "inspect", "--format", "{{.Comment}}", base) or "from the registry"
    runs = [one_run(args.image, with_load=(i == args.runs - 1)) for i in range(args.runs)]
    ready = [float(r["ready_s"]) for r in runs]
    serve = [float(r["serve_ms"]) for r in runs]
    idle = [float(r["rss_idle_mb"]) for r in runs]
    last = runs[-1]

    mb = 1_000_000
    print("## Container image (bench/docker_bench.py)\n")
    when = f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC"
    print(f"`python bench/docker_bench.py --runs {args.runs}`, {when},")
    print(f"{os.cpu_count()} CPUs, {platform.machine()}, Docker engine "
          f"{docker('version', '--format', '{{.Server.Version}}')}, load average "
          f"{os.getloadavg()[0]:.2f}. Base image: {base} ({base_note}).\n")  # fmt: skip
    print("| number | value |")
    print("|---|---|")
    print(f"| image size | {size / mb:.0f} MB ({base}: {base_size / mb:.0f} MB; kmock and its "
          f"dependencies add {(size - base_size) / mb:.0f} MB) |")  # fmt: skip
    print(f"| `docker run` -> /readyz 200, median (min-max) of {args.runs} | "
          f"{statistics.median(ready):.2f} s ({min(ready):.2f}-{max(ready):.2f}) |")  # fmt: skip
    print(
        f"| of which inside `serve()` (its log line), median | {statistics.median(serve):.0f} ms |"
    )
    print(f"| broker RSS once ready, median | {statistics.median(idle):.1f} MB "
          f"(container, `docker stats`: {last['cgroup_idle']}) |")  # fmt: skip
    print(f"| broker RSS after {RECORDS:,} x {RECORD_BYTES} B produced and consumed | "
          f"{float(last['rss_load_mb']):.1f} MB (container: {last['cgroup_load']}) |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
