"""The reports on a real Spark standalone cluster: a master and one worker on 127.0.0.1.

Both are started from the installed pyspark (`spark-class ...Master` / `...Worker`, no
download), once for the module, on free ports, with small heaps, and stopped at the end
(also when a test fails). Each report then runs as a user runs it, in its own process with
`--master`, from the directory holding `./data` and with the relative `--data-dir data`,
and must print what the same report prints locally. The commands are the ones
docs/pipeline.md shows in "On a cluster: a tested example".

The worker runs executors in a work directory of its own and without this checkout on
PYTHONPATH, as on a real cluster: the code reaches them only as the zip the driver ships,
and paths only as the driver resolved them. That is what made a relative data dir read as
empty before paths were made absolute on the driver.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from pipeline import cli
from tests.pipeline.logdata import group_log, values, write_segment

pytestmark = pytest.mark.pipeline

ROOT = Path(__file__).resolve().parents[2]  # this checkout: the packages the driver ships
START_S = 120  # a daemon's start, up to the line that says it is ready
REPORT_S = 300  # one report on the cluster, JVMs included (a loaded 2-core machine: ~1-2 min)
STOP_S = 30
# Settings for every cluster run: the executor's heap within the worker's 1 GiB, no driver
# UI (it would take port 4040 on every interface), and the executor's JVM on the C1 JIT
# only, as kmock runs the driver's for short reports (about half the CPU time at start).
CONF = [
    "--conf",
    "spark.executor.memory=512m",
    "--conf",
    "spark.ui.enabled=false",
    "--conf",
    "spark.executor.extraJavaOptions=-XX:TieredStopAtLevel=1",
]
_SKIPPED = "kmock report: skipped "
WORKER = ["--cores", "1", "--memory", "1g"]  # what the worker offers executors
LOOPBACK = ["--host", "127.0.0.1", "--port", "0", "--webui-port", "0"]  # free ports on loopback


class Daemon:
    """A Spark daemon run by spark-class in its own process group; its log is read as it comes."""

    def __init__(self, argv: list[str], env: dict[str, str], log: Path) -> None:
        self._lines: list[str] = []
        self._ended = False
        self._changed = threading.Condition()
        self._proc = subprocess.Popen(
            argv,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,  # the executors the worker starts join its group
        )
        self._log = log
        self._reader = threading.Thread(target=self._read, name=f"log-{log.stem}", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self._proc.stdout is not None
        with self._log.open("w") as log:
            for line in self._proc.stdout:
                log.write(line)
                log.flush()
                with self._changed:
                    self._lines.append(line)
                    self._changed.notify_all()
        with self._changed:
            self._ended = True
            self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float) -> re.Match[str]:
        """The first log line matching `pattern`; fails if the daemon ends or time runs out."""
        rx = re.compile(pattern)

        def found() -> re.Match[str] | None:
            return next((m for line in self._lines if (m := rx.search(line))), None)

        with self._changed:
            self._changed.wait_for(lambda: self._ended or found() is not None, timeout)
            match = found()
        if match is None:
            tail = "".join(self._lines[-30:])
            raise AssertionError(f"{self._log.stem}: no line matching {pattern!r}:\n{tail}")
        return match

    def stop(self) -> None:
        """SIGTERM to the group (the daemon and any executor it started), SIGKILL if need be."""
        try:
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.killpg(self._proc.pid, signal.SIGTERM)
                self._proc.wait(STOP_S)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.wait(STOP_S)
        self._reader.join(STOP_S)


def _spark_env() -> dict[str, str]:
    """The environment of everything started here: loopback only, nothing of this checkout."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON", "SPARK_MASTER"}
        and not k.startswith("PYSPARK_GATEWAY")
    }
    env["SPARK_LOCAL_IP"] = "127.0.0.1"
    return env


@pytest.fixture(scope="module")
def master_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """spark://127.0.0.1:<port> of a standalone master with one worker (1 core, 1 GiB)."""
    pyspark = pytest.importorskip(
        "pyspark", reason="the pipeline extra is not installed: pip install -e '.[pipeline]'"
    )
    if shutil.which("java") is None:
        pytest.fail("Spark needs Java 17 or 21 on PATH (make system-deps installs it)")
    home = Path(pyspark.__file__).parent
    logs = tmp_path_factory.mktemp("spark-cluster")
    env = _spark_env() | {
        "SPARK_HOME": str(home),
        "SPARK_DAEMON_MEMORY": "256m",
        "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
        # The master's REST submission server would take the fixed port 6066.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    }
    spark_class = str(home / "bin" / "spark-class")
    daemons: list[Daemon] = []
    try:
        master = Daemon(
            [spark_class, "org.apache.spark.deploy.master.Master", *LOOPBACK],
            env,
            logs / "master.log",
        )
        daemons.append(master)
        url = master.wait_for(r"Starting Spark master at (spark://127\.0\.0\.1:\d+)", START_S)[1]
        work = ["--work-dir", str(logs / "work")]
        worker = Daemon(
            [spark_class, "org.apache.spark.deploy.worker.Worker", *LOOPBACK, *WORKER, *work, url],
            env,
            logs / "worker.log",
        )
        daemons.append(worker)
        worker.wait_for(r"Successfully registered with master", START_S)
        yield url
    finally:
        for daemon in reversed(daemons):
            daemon.stop()


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding ./data: groups' commits and metadata, and one torn tail."""
    root = tmp_path_factory.mktemp("reports")
    group_log(root / "data")
    write_segment(root / "data", "orders", 1, 20, [values(20, 2)[:-5]])
    return root


class ClusterRun:
    """`python -m pipeline.cli report ...` (what `kmock report ...` runs) from `workdir`.

    Started at once, so that the local run can go on meanwhile; `result()` waits for it,
    and leaving the `with` block stops it if it still runs. PYSPARK_PYTHON is left unset:
    executors must get this interpreter by default.
    """

    def __init__(self, workdir: Path, *argv: str) -> None:
        self.argv = argv
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "pipeline.cli", "report", *argv],
            cwd=workdir,
            env=_spark_env() | {"PYTHONPATH": str(ROOT)},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # the driver and its JVM, stopped as one
        )

    def __enter__(self) -> ClusterRun:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._proc.poll() is None:
            os.killpg(self._proc.pid, signal.SIGKILL)
            self._proc.communicate(timeout=STOP_S)

    def result(self) -> subprocess.CompletedProcess[str]:
        try:
            stdout, stderr = self._proc.communicate(timeout=REPORT_S)
        except subprocess.TimeoutExpired:
            os.killpg(self._proc.pid, signal.SIGKILL)
            stdout, stderr = self._proc.communicate(timeout=STOP_S)
            raise AssertionError(
                f"report {self.argv} ran over {REPORT_S} s:\n{stdout}\n{stderr}"
            ) from None
        return subprocess.CompletedProcess(self._proc.args, self._proc.returncode, stdout, stderr)


def run_locally(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture, *argv: str
) -> tuple[str, str]:
    """The same report on the test session (local[2]), from the same directory."""
    monkeypatch.chdir(workdir)
    capsys.readouterr()
    assert cli.main(["report", *argv]) == 0
    captured = capsys.readouterr()
    return captured.out, captured.err


def _skipped_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith(_SKIPPED)]


@pytest.mark.parametrize("report", ["lag", "groups", "snapshot"])
def test_a_report_on_the_cluster_prints_what_it_prints_locally(
    spark,
    master_url: str,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
    report: str,
) -> None:
    with ClusterRun(workdir, report, "--master", master_url, *CONF, "--data-dir", "data") as run:
        local_out, local_err = run_locally(
            workdir, monkeypatch, capsys, report, "--data-dir", "data"
        )
        on_cluster = run.result()
    assert on_cluster.returncode == 0, on_cluster.stderr
    assert on_cluster.stdout == local_out
    assert len(local_out.splitlines()) > 2  # a table with rows, not "no committed offsets"
    assert _skipped_lines(on_cluster.stderr) == _skipped_lines(local_err)
    if report == "lag":
        assert _skipped_lines(local_err) == [
            f"{_SKIPPED}82 bytes of {workdir}/data/orders-1/00000000000000000020.log at 0: "
            "truncated: batch at 0 cut short: 82 of 87 bytes"
        ]


def test_export_on_the_cluster_writes_what_it_writes_locally(
    spark,
    master_url: str,
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture,
) -> None:
    import pyarrow.parquet as pq

    argv = ["export", "--data-dir", "data", "--out"]
    with ClusterRun(workdir, *argv, "cluster", "--master", master_url, *CONF) as run:
        local_out, _ = run_locally(workdir, monkeypatch, capsys, *argv, "local")
        on_cluster = run.result()
    assert on_cluster.returncode == 0, on_cluster.stderr
    assert on_cluster.stdout.replace(str(workdir / "cluster"), "OUT") == local_out.replace(
        str(workdir / "local"), "OUT"
    )
    assert "no records" not in local_out

    def rows(directory: str) -> list[dict]:
        table = pq.read_table(workdir / directory)
        return sorted(table.to_pylist(), key=lambda r: (r["topic"], r["partition"], r["offset"]))

    assert rows("cluster") == rows("local")


def test_a_data_dir_the_worker_cannot_see_fails_the_report_naming_the_files(
    master_url: str, workdir: Path
) -> None:
    """/proc/self/cwd/data is ./data for the driver's processes only: an executor's
    /proc/self/cwd is its own work directory. So the driver plans segment files that no
    executor can open, as with a data dir on a disk that only the driver's machine mounts."""
    hidden = "/proc/self/cwd/data"
    with ClusterRun(workdir, "lag", "--master", master_url, *CONF, "--data-dir", hidden) as run:
        result = run.result()
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == ""
    message = [line for line in result.stderr.splitlines() if line.startswith("kmock report:")]
    assert len(message) == 1, result.stderr
    assert re.fullmatch(
        r"kmock report: kmock-log: host \S+ could not open \d+ planned segment files?: "
        rf"{re.escape(hidden)}/\S+\.log \(No such file or directory\).*"
        r"The data directory must be visible to every worker at the same path \(a shared "
        r"mount\), as the driver sees it\.",
        message[0],
    ), message[0]
