"""The live-server fuzz at full length: 120,000 random, mutated and garbage frames over 40
connections at a broker process, with a well-behaved client checked throughout and the
broker's memory watched (tests/fuzz/live.py). Runs under `make reliability`; the suite runs
the 10,000-frame version in tests/fuzz/test_live_server.py.
"""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

from tests.fuzz.live import run_live_fuzz
from tests.fuzz.test_live_server import check

FRAMES = 120_000
CONNECTIONS = 40
# Collected only when the run selects `-m reliability` (see conftest): `make test` has the
# 10,000-frame version in tests/fuzz; this one is `make reliability`'s.
LONG_RUN_ONLY = True


@pytest.mark.reliability
async def test_long_live_fuzz_never_crashes_and_never_hurts_other_clients(
    tmp_path: Path, reliability_report: Any
) -> None:
    seed = int(os.environ.get("KMOCK_FUZZ_SEED", random.randrange(1 << 32)))
    report = await run_live_fuzz(
        tmp_path, frames=FRAMES, connections=CONNECTIONS, seed=seed, deadline_s=3600
    )
    reliability_report(report.summary())
    check(report)
    assert report.frames >= FRAMES
