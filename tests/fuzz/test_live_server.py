"""The live-server fuzz, short version (runs with the suite). The long one, 120,000 frames,
is tests/reliability/test_long_fuzz.py (`make reliability`). See tests/fuzz/live.py.

The seed is printed in the report; KMOCK_FUZZ_SEED replays a run.
"""

from __future__ import annotations

import os
import random
from pathlib import Path

from tests.fuzz.live import RSS_GROWTH_LIMIT, FuzzReport, run_live_fuzz

FRAMES = 10_000
CONNECTIONS = 40


def check(report: FuzzReport) -> None:
    """Everything the fuzz must find true, with the evidence when it is not."""
    problems = []
    if report.broker_problems:
        problems.append(
            "the broker logged errors (each one an exception the dispatch site "
            "had to catch):\n" + "\n".join(report.broker_problems[:10])
        )
    if report.closed_after_valid:
        problems.append(
            "well-formed requests answered by closing the connection (frames in hex, "
            "size prefix included; tests/fuzz/live.py:describe_frame decodes one):\n"
            + "\n".join(report.closed_after_valid[:10])
        )
    if report.bad_responses:
        problems.append("bad responses:\n" + "\n".join(report.bad_responses[:10]))
    if report.canary_failures:
        problems.append(
            "the well-behaved client failed:\n" + "\n".join(report.canary_failures[:10])
        )
    warm = report.rss_after_warmup or report.rss_start
    if report.rss_end - warm > RSS_GROWTH_LIMIT:
        problems.append("the broker's memory kept growing after the warm-up")
    assert not problems, report.summary() + "\n\n" + "\n\n".join(problems)


async def test_live_fuzz_never_crashes_and_never_hurts_other_clients(tmp_path: Path) -> None:
    seed = int(os.environ.get("KMOCK_FUZZ_SEED", random.randrange(1 << 32)))
    report = await run_live_fuzz(
        tmp_path, frames=FRAMES, connections=CONNECTIONS, seed=seed, deadline_s=300
    )
    print(report.summary())
    check(report)
    assert report.frames >= FRAMES
    assert report.canary_rounds > 0
