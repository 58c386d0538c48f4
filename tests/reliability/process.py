"""A kmock broker in its own process (`python -m cli.main serve`), so that SIGKILL is real.

The broker logs JSON lines (`--log-format json`) to a file per start, so that a test can read
what recovery reported and fail on anything logged at ERROR, as the in-process guard in
tests/conftest.py does for brokers in the test's own process.

Readiness is polled against the live process (the only waiting the tests do): the listener
accepts, and an OffsetFetch no longer answers COORDINATOR_LOAD_IN_PROGRESS (the replay of
__consumer_offsets is done).
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from client import ConnectionFailed, KafkaClient
from protocol.errors import ErrorCode, KafkaError
from tests.integration.harness import ROOT, wait_until

POLL_S = 0.02
START_TIMEOUT_S = 60.0


def free_port() -> int:
    """A port nothing listens on right now (the broker keeps it across restarts)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def child_env() -> dict[str, str]:
    """The environment for a broker child process: ours without KAFKA_* variables (which the
    broker would read as settings), with the project on PYTHONPATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("KAFKA_")}
    env["PYTHONPATH"] = str(ROOT)
    return env


def run_python(code: str, *args: str, timeout: float = 60.0) -> str:
    """Run `code` in a fresh interpreter (`python -c code args...`, child_env) and return what
    it printed; a failure raises with its stderr. For what only a new process shows: what
    start-up imports, the collector's state."""
    run = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=child_env(),
        timeout=timeout,
    )
    if run.returncode != 0:
        raise AssertionError(f"python -c exited {run.returncode}:\n{run.stderr}")
    return run.stdout


def poll_until(predicate: Any, timeout: float, what: str, detail: Any = None) -> Any:
    """Call `predicate` until it returns something truthy, for at most `timeout` seconds;
    on timeout the error adds `detail()` when given."""
    return wait_until(predicate, timeout, what, detail, poll_s=POLL_S)


class BrokerProcess:
    """Start, SIGKILL and restart one broker on a fixed port and data directory."""

    def __init__(
        self,
        data_dir: Path,
        log_dir: Path,
        *,
        port: int | None = None,
        overrides: dict[str, Any] | None = None,
        log_level: str = "WARNING",
        max_open_files: int | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.log_dir = Path(log_dir)
        self.port = port or free_port()
        self.overrides = dict(overrides or {})
        self.log_level = log_level
        self.max_open_files = max_open_files  # RLIMIT_NOFILE of the broker process
        self.env = dict(env or {})  # added to child_env() for the broker process
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        self.log_path: Path | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def command(self) -> list[str]:
        cmd = [
            sys.executable,
            "-m",
            "cli.main",
            "serve",
            "--listeners",
            f"PLAINTEXT://127.0.0.1:{self.port}",
            "--log-dirs",
            str(self.data_dir),
            "--log-level",
            self.log_level,
            "--log-format",
            "json",
        ]
        for key, value in self.overrides.items():
            cmd += ["--override", f"{key}={value}"]
        return cmd

    def start(self, *, timeout: float = START_TIMEOUT_S) -> BrokerProcess:
        """Start the broker and return once it serves group requests."""
        assert self.proc is None or self.proc.poll() is not None, "already running"
        self.starts += 1
        self.log_dir.mkdir(parents=True, exist_ok=True)
        self.log_path = self.log_dir / f"broker-{self.starts:04d}.log"
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                self.command(),
                cwd=ROOT,
                env={**child_env(), **self.env},
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                preexec_fn=self._limits if self.max_open_files else None,
            )
        poll_until(self._ready, timeout, f"broker start #{self.starts} ({self.log_path})")
        return self

    def _limits(self) -> None:
        import resource

        n = self.max_open_files
        resource.setrlimit(resource.RLIMIT_NOFILE, (n, n))

    def _ready(self) -> bool:
        assert self.proc is not None
        if self.proc.poll() is not None:
            raise AssertionError(
                f"broker exited with {self.proc.returncode} while starting:\n{self.log_text()}"
            )
        try:
            with KafkaClient(self.bootstrap, timeout_s=5) as client:
                client.committed_offsets("kmock-readiness-probe")
        except ConnectionFailed:
            return False
        except KafkaError as e:
            if e.code == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                return False
            raise
        return True

    def kill(self) -> None:
        """SIGKILL: no shutdown code runs, nothing is flushed or closed."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=30)

    def stop(self, *, timeout: float = 30.0) -> int:
        """SIGTERM (a graceful stop) and wait; returns the exit status."""
        if self.proc is None or self.proc.poll() is not None:
            return self.proc.returncode if self.proc else 0
        self.proc.send_signal(signal.SIGTERM)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=30)
            raise AssertionError(f"broker ignored SIGTERM for {timeout:g} s") from None

    def is_running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def rss_bytes(self) -> int:
        """Resident set size of the broker process (Linux /proc)."""
        status = Path(f"/proc/{self.pid}/status").read_text()
        for line in status.splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
        raise AssertionError("no VmRSS in /proc status")

    # --- its log ---------------------------------------------------------------------------

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path else ""

    def log_records(self) -> list[dict[str, Any]]:
        """The JSON log lines of the current (or last) start; other lines as {"raw": ...}."""
        out = []
        for line in self.log_text().splitlines():
            try:
                out.append(json.loads(line))
            except ValueError:
                out.append({"level": "RAW", "message": line})
        return out

    def problems(self) -> list[str]:
        """ERROR/CRITICAL records and anything that is not a log line (a traceback on
        stderr): what the in-process ERROR guard would fail a test for."""
        return [
            f"{r.get('level')} {r.get('logger', '')} {r.get('message')}"
            + (f"\n{r['exc_info']}" if r.get("exc_info") else "")
            for r in self.log_records()
            if r.get("level") in ("ERROR", "CRITICAL", "RAW")
        ]

    def recovery_notes(self) -> list[str]:
        return [
            r["message"]
            for r in self.log_records()
            if r.get("logger") == "broker.topics" and "recovered" in r.get("message", "")
        ]


@contextlib.contextmanager
def running_broker(*args: Any, **kwargs: Any) -> Iterator[BrokerProcess]:
    """A BrokerProcess, started, and killed on the way out whatever happens."""
    broker = BrokerProcess(*args, **kwargs)
    try:
        yield broker.start()
    finally:
        if broker.is_running():
            broker.kill()
