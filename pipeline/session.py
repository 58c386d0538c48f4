"""The SparkSession the jobs run in: local by default, a cluster when asked, spark-submit's own.

How a job starts decides what this module does (PYSPARK-NOTES §1 and §6):

* `kmock report ...` with no --master and no SPARK_MASTER: local[*] in this process, with
  the local tweaks below;
* `--master URL` (or SPARK_MASTER=URL): that cluster, with this process as the driver.
  The `protocol` and `pipeline` packages are zipped and shipped with addPyFile, because
  executors import the data source by reference; they also need pyarrow, construct,
  crc32c and cramjam installed;
* `spark-submit [--master URL] --py-files kmock.zip pipeline/cli.py report ...`:
  spark-submit has already chosen the master and the configuration, so no .master() call is
  made and nothing local is changed. It is recognised by PYSPARK_GATEWAY_PORT, which
  spark-submit sets (SparkConf().contains("spark.master") is False there before the
  context exists, so it cannot tell).

Driver output, whenever this process starts the driver (not under spark-submit, whose
log settings are the user's): log4j2.properties, shipped beside this module, keeps Spark
at WARN while the JVM starts and ERROR after; no console progress bar (reports print their
own progress, and the bar garbles stderr).

Python workers, wherever they run (the driver's data source planner and the executors),
run this interpreter, the one kmock and its dependencies are installed in, unless the user
chose one: spark.pyspark.python (in `conf`, as spark-submit reads it), else PYSPARK_PYTHON.
pyspark itself defaults to `python3` from PATH, which need not have pyarrow; on a cluster
whose executors keep Python elsewhere, set one of the two. (pyspark reads only the
environment variable, so a spark.pyspark.python setting is copied into it here, before the
context starts, as spark-submit's org.apache.spark.deploy.PythonRunner does.)

Local tweaks, for local masters only (they would break a cluster): traffic pinned to
127.0.0.1 (the host name resolves to loopback, and Spark would otherwise bind to eth0),
this source tree importable by the Python workers (PYTHONPATH), no UI, as many shuffle
partitions as local threads (not 200), and a 2 GiB driver.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "LOCAL_MASTER",
    "build_session",
    "choose_python",
    "is_spark_submit",
    "merge_conf",
    "register",
    "resolve_master",
    "ship_code",
]

LOCAL_MASTER = "local[*]"
DRIVER_MEMORY = "2g"  # spark.driver.memory for local runs; only effective before the JVM starts
_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent  # the directory holding the protocol, storage and pipeline packages
# What the executors import: the pipeline, and the protocol and storage (its on-disk names,
# storage.layout) that it reads segments through.
_SHIPPED_PACKAGES = ("protocol", "storage", "pipeline")
_DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"
_LOCAL_THREADS = re.compile(r"local(?:\[(\*|\d+)(?:,\d+)?\])?")


def is_spark_submit() -> bool:
    """True when this Python process was started by spark-submit (or pyspark's shell)."""
    return "PYSPARK_GATEWAY_PORT" in os.environ


def resolve_master(master: str | None = None) -> str | None:
    """The master to ask for: `master`, else SPARK_MASTER, else local[*].

    None under spark-submit, which has chosen already.
    """
    if is_spark_submit():
        return None
    return master or os.environ.get("SPARK_MASTER") or LOCAL_MASTER


def _local_threads(master: str) -> int | None:
    m = _LOCAL_THREADS.fullmatch(master)
    if m is None:
        return None
    if m[1] is None:
        return 1
    return (os.cpu_count() or 1) if m[1] == "*" else int(m[1])


def build_session(
    master: str | None = None,
    *,
    app_name: str = "kmock-pipeline",
    conf: Mapping[str, str] | None = None,
    java_options: Iterable[str] = (),
) -> Any:
    """Get or create the SparkSession for a job and register the "kmock-log" data source.

    Args:
      master: a Spark master URL; None means SPARK_MASTER or local[*]. Ignored under
        spark-submit.
      conf: extra settings, applied last (`kmock report --conf`; tests pass their
        small-session settings here). spark.driver.extraJavaOptions is added to the
        driver options set here (the log4j file), not put in their place.
      java_options: extra driver JVM options (tests pass the C1-only JIT). Ignored under
        spark-submit, like every setting of the JVM, which is already running there.
    """
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    # Job semantics, wherever the job runs: report times in UTC, and write Parquet
    # timestamps as INT64 microseconds (Spark's default INT96 is deprecated in Parquet).
    settings: dict[str, str] = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    }
    choose_python(conf or {})
    resolved = resolve_master(master)
    threads = None if resolved is None else _local_threads(resolved)
    if resolved is not None:
        builder = builder.master(resolved)
        settings.update(_driver_settings(java_options))
    if threads is not None:
        settings.update(_local_settings(threads))
    settings = merge_conf(settings, conf or {})
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if resolved is not None:
        spark.sparkContext.setLogLevel("ERROR")
    if resolved is not None and threads is None:
        ship_code(spark)
    register(spark)
    return spark


def merge_conf(settings: Mapping[str, str], conf: Mapping[str, str]) -> dict[str, str]:
    """`settings` updated with `conf`; JVM options are joined, the user's last (so they win)."""
    merged = dict(settings)
    for key, value in conf.items():
        if key == _DRIVER_JAVA_OPTIONS and merged.get(key):
            value = f"{merged[key]} {value}"
        merged[key] = value
    return merged


def choose_python(conf: Mapping[str, str]) -> str:
    """Set PYSPARK_PYTHON for the Python workers (see the module docstring); return it.

    spark.pyspark.python in `conf` wins, then PYSPARK_PYTHON, then this interpreter. Only
    effective before the SparkContext starts.
    """
    chosen = conf.get("spark.pyspark.python")
    if chosen:
        os.environ["PYSPARK_PYTHON"] = chosen
    return os.environ.setdefault("PYSPARK_PYTHON", sys.executable)


def _driver_settings(java_options: Iterable[str]) -> dict[str, str]:
    jvm = list(java_options)
    log4j = _HERE / "log4j2.properties"
    if log4j.exists():
        jvm.append(f"-Dlog4j.configurationFile=file:{log4j}")
    return {
        "spark.ui.showConsoleProgress": "false",
        _DRIVER_JAVA_OPTIONS: " ".join(jvm),
    }


def _local_settings(threads: int) -> dict[str, str]:
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # Python workers are started by the JVM with its environment, which it inherits from
    # this process when getOrCreate launches it.
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if str(_ROOT) not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([str(_ROOT), *paths])
    return {
        "spark.ui.enabled": "false",
        "spark.sql.shuffle.partitions": str(threads),
        "spark.default.parallelism": str(threads),
        "spark.driver.host": "127.0.0.1",
        "spark.driver.bindAddress": "127.0.0.1",
        "spark.driver.memory": DRIVER_MEMORY,
    }


def ship_code(spark: Any) -> str:
    """Zip the protocol, storage and pipeline packages and add them to the job
    (SparkContext.addPyFile).

    Returns the zip's path; Spark serves the file to executors while the job runs, and it
    is removed when this process exits. Executors still need the third-party packages.
    """
    fd, name = tempfile.mkstemp(prefix="kmock-pipeline-", suffix=".zip")
    os.close(fd)
    atexit.register(_remove, name)
    with zipfile.ZipFile(name, "w", zipfile.ZIP_DEFLATED) as z:
        for package in _SHIPPED_PACKAGES:
            for path in sorted((_ROOT / package).rglob("*")):
                if path.is_file() and "__pycache__" not in path.parts:
                    z.write(path, path.relative_to(_ROOT).as_posix())
    spark.sparkContext.addPyFile(name)
    return name


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


def register(spark: Any) -> None:
    """Register the "kmock-log" data source with `spark`, once per session.

    (Spark warns each time a registration replaces an earlier one.)
    """
    from pipeline.source import KmockLogDataSource

    if getattr(spark, "_kmock_log_registered", False):
        return
    spark.dataSource.register(KmockLogDataSource)
    spark._kmock_log_registered = True
