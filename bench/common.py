"""Shared helpers for the benchmarks: processes under test, statistics, machine facts.

Everything here runs in the orchestrating process (`bench/run.py`). The processes under
test are always separate: `kmock serve` (KmockProcess), the librdkafka mock cluster held by
`bench/mock_holder.py` (MockProcess), and the plain-trio references `bench/trio_floor.py` and
`bench/request_floor.py` (FloorProcess).
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"
TMP = BENCH / "tmp"  # scratch (gitignored; `make clean` removes it)
PY = sys.executable

QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")

# Every process started from here runs this tree's code: the venv's `kmock` script imports
# whatever checkout the venv was installed from (an editable install), which need not be
# the one whose git revision RESULTS.md names.
if str(ROOT) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        x for x in (str(ROOT), os.environ.get("PYTHONPATH", "")) if x
    )
PYCACHE = TMP / "pycache"


# Durable OffsetCommit target, shared by §3 (bench/run.py) and §9 (bench/side_by_side.py):
# kmock's commits/s at least this share of the request floor's (python + trio, fixed
# answers), with this p99. It replaced an earlier 20,000 commits/s (the floor itself peaks
# at 38-51k/s here).
COMMIT_TARGET_VS_FLOOR = 0.5
COMMIT_TARGET_P99_MS = 20


def use_bytecode_cache() -> bool:
    """Let every Python process started from here read and write bytecode caches, kept under
    bench/tmp/pycache (PYTHONPYCACHEPREFIX) so that the source tree stays untouched.

    Returns whether PYTHONDONTWRITEBYTECODE was set in the caller's environment (then every
    `kmock serve` would recompile all of kmock's modules at start, which no installed copy
    does)."""
    was_set = bool(os.environ.pop("PYTHONDONTWRITEBYTECODE", ""))
    os.environ["PYTHONPYCACHEPREFIX"] = str(PYCACHE)
    return was_set


def no_bytecode_cache_env() -> dict[str, str]:
    """Environment for a start without any bytecode cache (everything compiled from source)."""
    empty = Path(tempfile.mkdtemp(prefix="nocache-", dir=TMP))
    return {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": str(empty)}


# --- statistics ----------------------------------------------------------------------------


def median(xs: Sequence[float]) -> float:
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def percentile(xs: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of an unsorted sequence."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    k = max(0, min(len(s) - 1, round(q / 100 * len(s) + 0.5) - 1))
    return s[k]


def fmt(x: float | None, digits: int = 0, unit: str = "") -> str:
    if x is None or x != x:  # NaN
        return "-"
    return f"{x:,.{digits}f}" + unit


def ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or a != a or b != b or b == 0:
        return "-"
    return f"{a / b:.2f}x"


# --- ports, processes ----------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def try_connect(port: int, host: str = "127.0.0.1") -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.2):
            return True
    except OSError:
        return False


_API_VERSIONS_V0 = struct.pack(">ihhih", 10, 18, 0, 1, 0)  # size, key 18, v0, corr 1, id ""


def api_versions_round_trip(port: int, timeout: float) -> None:
    """Send ApiVersions v0 and wait for the whole answer (the broker really serves)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(_API_VERSIONS_V0)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack_from(">i", buf)[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError("closed before answering ApiVersions")
            buf += chunk


def proc_status(pid: int) -> dict[str, int]:
    """VmRSS / VmHWM in KiB from /proc/PID/status."""
    out: dict[str, int] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(("VmRSS:", "VmHWM:")):
                k, v = line.split(":", 1)
                out[k] = int(v.split()[0])
    except OSError:
        pass
    return out


_CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_cpu_s(pid: int) -> float:
    """utime + stime of a process (all its threads), seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _CLK_TCK
    except (OSError, IndexError):
        return float("nan")


def start_once(process: Any) -> None:
    """Start a server process and stop it again, untimed: what its first start writes
    (bytecode caches, meta.properties) is then in place for the timed ones."""
    with process as started:
        if not started.alive():
            raise RuntimeError(f"{type(started).__name__} exited during its first start")


def kmock_command() -> tuple[list[str], str]:
    """How to start kmock: the venv's `kmock` console script if installed, else -m."""
    script = Path(PY).parent / "kmock"
    if script.exists():
        return [str(script)], str(
            script.relative_to(ROOT) if script.is_relative_to(ROOT) else script
        )
    return [PY, "-m", "cli.main"], f"{PY} -m cli.main"


def serve_args(port: int, data_dir: Path) -> list[str]:
    """The arguments after kmock's command: `serve` on 127.0.0.1:port (0: any free port)
    with its data in data_dir."""
    return ["serve", "--listeners", f"PLAINTEXT://127.0.0.1:{port}", "--log-dirs", str(data_dir)]


def _stop(proc: subprocess.Popen[Any], timeout: float = 15.0) -> int | None:
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            proc.wait(5)
    return proc.returncode


class _Child:
    """A server process the benchmark started (`proc` is set by `__enter__`)."""

    proc: subprocess.Popen[Any] | None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None


class KmockProcess(_Child):
    """`kmock serve` on a fresh free port (and data dir unless given), log captured to a file.

    Use as a context manager; `.start_s` is spawn -> first successful TCP connect.
    """

    def __init__(
        self,
        data_dir: Path | None = None,
        *,
        overrides: dict[str, Any] | None = None,
        admin: bool = False,
        ready: str = "connect",
        timeout: float = 60.0,
        env: dict[str, str] | None = None,
        command: list[str] | None = None,
    ) -> None:
        self.env = env
        # kmock_command() unless given (e.g. bench/kmock_nowrite.py)
        self.command = command or kmock_command()[0]
        self.owns_dir = data_dir is None
        TMP.mkdir(parents=True, exist_ok=True)
        self.data_dir = data_dir or Path(tempfile.mkdtemp(prefix="kmock-", dir=TMP)) / "data"
        self.port = free_port()
        self.admin_port = free_port() if admin else None
        self.overrides = overrides or {}
        self.ready = ready  # "connect" or "readyz"
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = self.data_dir.parent / f"kmock-{self.port}.log"
        self.start_s = float("nan")
        self.first_response_s = float("nan")  # spawn -> first ApiVersions answer
        self.spawn_wall = 0.0
        self.exit_code: int | None = None
        self.error_lines: list[str] = []
        self._log_cache: str | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def addr(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def __enter__(self) -> KmockProcess:
        cmd = [*self.command, *serve_args(self.port, self.data_dir)]
        if self.admin_port is not None:
            cmd += ["--admin-port", str(self.admin_port)]
        for k, v in self.overrides.items():
            cmd += ["--override", f"{k}={v}"]
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log = open(self.log_path, "wb")
        self.spawn_wall = time.time()
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd,
            cwd=ROOT,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env} if self.env else None,
        )
        deadline = t0 + self.timeout
        check = self._readyz if self.ready == "readyz" else lambda: try_connect(self.port)
        while True:
            if check():
                self.start_s = time.perf_counter() - t0
                if self.ready == "connect":
                    api_versions_round_trip(self.port, max(1.0, deadline - time.perf_counter()))
                    self.first_response_s = time.perf_counter() - t0
                break
            if self.proc.poll() is not None:
                self.__exit__(None, None, None)
                raise RuntimeError(
                    f"kmock exited with {self.proc.returncode}:\n" + self.log_text()[-3000:]
                )
            if time.perf_counter() > deadline:
                self.__exit__(None, None, None)
                raise RuntimeError(
                    f"kmock not ready after {self.timeout} s:\n" + self.log_text()[-3000:]
                )
            time.sleep(0.001)
        return self

    def _readyz(self) -> bool:
        assert self.admin_port is not None
        try:
            with socket.create_connection(("127.0.0.1", self.admin_port), timeout=1) as s:
                s.sendall(b"GET /readyz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
                data = b""
                while chunk := s.recv(4096):
                    data += chunk
            return data.startswith(b"HTTP/1.1 200") or data.startswith(b"HTTP/1.0 200")
        except OSError:
            return False

    def log_text(self) -> str:
        if self._log_cache is not None:
            return self._log_cache
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None:
            self.exit_code = _stop(self.proc)
        with contextlib.suppress(Exception):
            self._log.close()
        self._log_cache = self.log_text()  # the log goes with the temp dir
        self.error_lines = [
            ln for ln in self._log_cache.splitlines() if " ERROR " in ln or " CRITICAL " in ln
        ]
        if self.owns_dir and not os.environ.get("BENCH_KEEP_TMP"):
            shutil.rmtree(self.data_dir.parent, ignore_errors=True)

    # --- what the log says ---

    def logged_listening(self) -> tuple[float, float]:
        """(ms inside serve() as logged, ms from spawn to the log line's timestamp)."""
        text = self.log_text()
        m = re.search(r"^(\S+) INFO broker\.server kmock listening on .* in (\d+) ms", text, re.M)
        if not m:
            return float("nan"), float("nan")
        return float(m.group(2)), (_log_ts(m.group(1)) - self.spawn_wall) * 1000

    def logged_replay(self) -> tuple[int, float, float]:
        """(records, ms as logged, ms from spawn to the log line's timestamp)."""
        text = self.log_text()
        m = re.search(
            r"^(\S+) INFO broker\.runtime replayed (\d+) __consumer_offsets records"
            r".* in (\d+) ms",
            text,
            re.M,
        )
        if not m:
            return -1, float("nan"), float("nan")
        return (int(m.group(2)), float(m.group(3)), (_log_ts(m.group(1)) - self.spawn_wall) * 1000)


def _log_ts(ts: str) -> float:
    """2026-11-21T15:30:48.713Z -> epoch seconds."""
    import calendar

    base, _, frac = ts.rstrip("Z").partition(".")
    t = calendar.timegm(time.strptime(base, "%Y-%m-%dT%H:%M:%S"))
    return t + (int(frac) / 1000 if frac else 0.0)


class MockProcess(_Child):
    """The librdkafka mock cluster (test.mock.num.brokers=1) held in its own process."""

    def __init__(self, timeout: float = 30.0) -> None:
        self.timeout = timeout
        self.proc: subprocess.Popen[str] | None = None
        self.bootstrap = ""

    def __enter__(self) -> MockProcess:
        self.proc = subprocess.Popen(
            [PY, str(BENCH / "mock_holder.py")],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            _stop(self.proc)
            raise RuntimeError("mock holder printed no bootstrap address")
        self.bootstrap = line
        return self

    @property
    def addr(self) -> tuple[str, int]:
        host, _, port = self.bootstrap.split(",")[0].rpartition(":")
        return (host, int(port))

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None:
            with contextlib.suppress(Exception):
                assert self.proc.stdin is not None
                self.proc.stdin.close()
            _stop(self.proc)


class FloorProcess(_Child):
    """A reference server in bench/ on a free port: `trio_floor.py` (python + trio + a
    listener, nothing else: the start-time floor) or `request_floor.py` (fixed answers: the
    request-rate floor)."""

    def __init__(self, env: dict[str, str] | None = None, script: str = "trio_floor.py") -> None:
        self.script = script
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_s = float("nan")
        self.env = env

    def __enter__(self) -> FloorProcess:
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            [PY, str(BENCH / self.script), str(self.port)],
            cwd=ROOT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **self.env} if self.env else None,
        )
        while not try_connect(self.port):
            if self.proc.poll() is not None or time.perf_counter() - t0 > 30:
                raise RuntimeError(f"{self.script} did not start")
            time.sleep(0.001)
        self.start_s = time.perf_counter() - t0
        return self

    @property
    def addr(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None:
            _stop(self.proc)


def run_json(cmd: list[str], timeout: float, env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a helper that prints one JSON object on its last stdout line."""
    try:
        p = subprocess.run(
            cmd,
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**os.environ, **(env or {})},
        )
    except subprocess.TimeoutExpired as e:
        return {"error": f"timed out after {timeout:.0f} s", "stderr": str(e.stderr)[-2000:]}
    lines = [ln for ln in p.stdout.splitlines() if ln.strip()]
    if p.returncode != 0 or not lines:
        return {"error": f"exit {p.returncode}", "stderr": p.stderr[-2000:]}
    try:
        return json.loads(lines[-1])
    except json.JSONDecodeError:
        return {"error": "no JSON", "stdout": p.stdout[-2000:], "stderr": p.stderr[-2000:]}


# --- machine -------------------------------------------------------------------------------


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def mem_total() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return f"{int(line.split()[1]) / 1024 / 1024:.1f} GiB"
    except OSError:
        pass
    return "?"


def versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for dist in ("trio", "construct", "crc32c", "cramjam", "confluent-kafka", "kafka-python"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "not installed"
    try:
        import confluent_kafka

        out["librdkafka"] = confluent_kafka.libversion()[0]
    except ImportError:
        pass
    try:
        out["kmock"] = metadata.version("kmock")
    except metadata.PackageNotFoundError:
        out["kmock"] = "not installed (run from source)"
    return out


def git_revision() -> str:
    def git(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, timeout=5)

    try:
        rev = git("rev-parse", "--short", "HEAD")
        if rev.returncode != 0:
            return "no commit yet"
        # RESULTS.md itself, rewritten by an earlier run, is not a change to what is measured
        dirty = git(
            "status", "--porcelain", "--untracked-files=no", "--", ".", ":!bench/RESULTS.md"
        )
        return rev.stdout.strip() + (" (with uncommitted changes)" if dirty.stdout.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return "?"
