"""How a session is chosen: local by default, --master / SPARK_MASTER, spark-submit's own."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from pipeline import session


@pytest.fixture(autouse=True)
def _clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("SPARK_MASTER", raising=False)


def test_python_workers_run_this_interpreter_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    assert session.choose_python({}) == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/py/bin/python3")
    assert session.choose_python({}) == "/opt/py/bin/python3"
    # spark.pyspark.python wins over the variable, as under spark-submit; pyspark reads
    # only the variable, so the setting must end up there.
    assert session.choose_python({"spark.pyspark.python": "/env/bin/python"}) == "/env/bin/python"
    assert session.os.environ["PYSPARK_PYTHON"] == "/env/bin/python"


def test_conf_is_applied_last_and_driver_java_options_are_added_to_ours() -> None:
    ours = {"spark.ui.enabled": "false", "spark.driver.extraJavaOptions": "-Dlog4j=x"}
    theirs = {"spark.ui.enabled": "true", "spark.driver.extraJavaOptions": "-Xss4m -Dlog4j=y"}
    assert session.merge_conf(ours, theirs) == {
        "spark.ui.enabled": "true",
        "spark.driver.extraJavaOptions": "-Dlog4j=x -Xss4m -Dlog4j=y",
    }
    assert session.merge_conf({}, theirs) == theirs


def test_local_by_default() -> None:
    assert session.resolve_master() == "local[*]"


def test_master_argument_then_spark_master_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_MASTER", "spark://from-env:7077")
    assert session.resolve_master() == "spark://from-env:7077"
    assert session.resolve_master("spark://from-flag:7077") == "spark://from-flag:7077"


def test_under_spark_submit_no_master_is_chosen(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYSPARK_GATEWAY_PORT", "40000")
    monkeypatch.setenv("SPARK_MASTER", "spark://from-env:7077")
    assert session.is_spark_submit()
    assert session.resolve_master("local[2]") is None


@pytest.mark.parametrize(
    ("master", "threads"),
    [("local", 1), ("local[2]", 2), ("local[3,2]", 3), ("spark://h:7077", None), ("yarn", None)],
)
def test_local_tweaks_apply_to_local_masters_only(master: str, threads: int | None) -> None:
    assert session._local_threads(master) == threads


def test_local_star_uses_every_core() -> None:
    import os

    assert session._local_threads("local[*]") == os.cpu_count()


def test_ship_code_zips_protocol_and_pipeline_for_the_executors() -> None:
    added: list[str] = []

    class Context:
        def addPyFile(self, path: str) -> None:
            added.append(path)

    class Session:
        sparkContext = Context()

    path = session.ship_code(Session())
    try:
        assert added == [path]
        names = set(zipfile.ZipFile(path).namelist())
        assert {
            "protocol/records.py",
            "storage/layout.py",
            "pipeline/source.py",
            "pipeline/log4j2.properties",
        } <= names
        assert not any(
            "__pycache__" in n or n.startswith(("broker/", "coordinator/")) for n in names
        )
    finally:
        Path(path).unlink()
