"""One SparkSession for the whole run (PYSPARK-NOTES §1 and §4), and the `pipeline` marker.

The session is local[2] with the UI off, two shuffle partitions and the C1-only JIT
(about 17% faster for a suite of small jobs; not for big production jobs), built through
pipeline.session so that the tests also exercise the local defaults the CLI uses. Tests
that use it are marked `pipeline` here, so `-m "not pipeline"` leaves Spark out.
"""

from __future__ import annotations

import shutil

import pytest


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.pipeline)


@pytest.fixture(scope="session")
def spark():
    pytest.importorskip(
        "pyspark", reason="the pipeline extra is not installed: pip install -e '.[pipeline]'"
    )
    if shutil.which("java") is None:
        pytest.fail("Spark needs Java 17 or 21 on PATH (make system-deps installs it)")
    from pipeline.session import build_session

    session = build_session(
        "local[2]",
        app_name="kmock-tests",
        conf={"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"},
        java_options=["-XX:TieredStopAtLevel=1"],
    )
    yield session
    session.stop()
