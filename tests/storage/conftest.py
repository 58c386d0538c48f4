"""Fixtures for storage tests: a partition directory in tmp_path, and logs opened in it.

Logs default to flush_mode="none" so that tests do not pay an fsync per append; durability
tests set the mode they exercise.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from storage import Log, LogConfig
from tests.storage.helpers import T0


@pytest.fixture
def log_dir(tmp_path: Path) -> Path:
    return tmp_path / "topic-0"


@pytest.fixture
def open_log(log_dir: Path) -> Callable[..., Log]:
    """open_log(now_wall_ms=T0, **LogConfig fields) -> Log, always in `log_dir`."""

    def open_(*, now_wall_ms: int = T0, **config: Any) -> Log:
        config.setdefault("flush_mode", "none")
        return Log.open(log_dir, LogConfig(**config), now_wall_ms=now_wall_ms)

    return open_
