"""Shared fixtures: a real broker on port 0 with a temporary data dir, and a guard that
fails any test during which broker code logged at ERROR (nothing is swallowed silently).
Tests that expect an ERROR log (injected disk failures) mark themselves `expect_errors`.
"""

from __future__ import annotations

import logging
from typing import Any

import pytest

from broker.config import load_config
from broker.server import serve


def broker_config(data_dir: Any, **overrides: Any) -> Any:
    values = {"listeners": "PLAINTEXT://127.0.0.1:0", "log.dirs": str(data_dir)}
    values.update(overrides)
    return load_config(overrides=values)


@pytest.fixture
async def broker(nursery: Any, tmp_path: Any) -> Any:
    b = await nursery.start(serve, broker_config(tmp_path / "data"))
    await b.ready.wait()
    return b


class _ErrorCollector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith(("broker", "storage", "coordinator")):
            self.records.append(record)


@pytest.fixture(autouse=True)
def _fail_on_broker_errors(request: Any) -> Any:
    collector = _ErrorCollector()
    root = logging.getLogger()
    root.addHandler(collector)
    yield
    root.removeHandler(collector)
    if collector.records and not request.node.get_closest_marker("expect_errors"):
        msgs = "\n".join(f"{r.name}: {r.getMessage()}" for r in collector.records)
        pytest.fail(f"broker logged errors during the test:\n{msgs}")
