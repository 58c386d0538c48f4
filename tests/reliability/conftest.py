"""Options and reporting for the reliability tests.

`--cycles N` sets how many kill/restart cycles each crash-cycle test runs: 3 by default (the
short version that runs with the rest of the suite), 100 under `make reliability`.
`--fuzz-frames N` sets the length of the long live fuzz (1,000,000 by default, what `make
reliability` runs); `--soak-minutes M` the length of the soak (30 by default).

A module that sets LONG_RUN_ONLY (the long live fuzz, the soak) is collected only when the
run selects `-m reliability` (what `make reliability` does); in the full suite it is
deselected, because tests/fuzz/test_live_server.py runs a short fuzz there.

Each crash-cycle and fuzz test adds a line to the terminal summary with what it found, so
a run reports cycles, frames and losses even when it passes.
"""

from __future__ import annotations

from typing import Any

import pytest

DEFAULT_CYCLES = 3
DEFAULT_FUZZ_FRAMES = 1_000_000
DEFAULT_SOAK_MINUTES = 30.0

_report: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--cycles",
        type=int,
        default=None,
        metavar="N",
        help=f"kill/restart cycles per crash-cycle test (default {DEFAULT_CYCLES})",
    )
    parser.addoption(
        "--fuzz-frames",
        type=int,
        default=None,
        metavar="N",
        help=f"frames of the long live fuzz (default {DEFAULT_FUZZ_FRAMES:,})",
    )
    parser.addoption(
        "--soak-minutes",
        type=float,
        default=None,
        metavar="M",
        help=f"length of the soak (default {DEFAULT_SOAK_MINUTES:g} minutes)",
    )


@pytest.fixture
def cycles(request: pytest.FixtureRequest) -> int:
    # The option is only registered when this directory is named on the command line (a
    # conftest below the root is not read before the command line is parsed).
    value = request.config.getoption("--cycles", default=None)
    return int(value) if value is not None else DEFAULT_CYCLES


@pytest.fixture
def fuzz_frames(request: pytest.FixtureRequest) -> int:
    value = request.config.getoption("--fuzz-frames", default=None)
    return int(value) if value is not None else DEFAULT_FUZZ_FRAMES


@pytest.fixture
def soak_minutes(request: pytest.FixtureRequest) -> float:
    value = request.config.getoption("--soak-minutes", default=None)
    return float(value) if value is not None else DEFAULT_SOAK_MINUTES


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Modules with LONG_RUN_ONLY are deselected (not skipped) outside `-m reliability`."""
    if "reliability" in (config.getoption("-m", default="") or ""):
        return
    long_only = [i for i in items if getattr(getattr(i, "module", None), "LONG_RUN_ONLY", False)]
    if long_only:
        config.hook.pytest_deselected(items=long_only)
        items[:] = [i for i in items if i not in long_only]


@pytest.fixture
def reliability_report() -> Any:
    """report(line): add a line to the end-of-run summary."""
    return _report.append


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _report:
        terminalreporter.section("kmock reliability")
        for line in _report:
            terminalreporter.write_line(line)
