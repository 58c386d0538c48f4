"""Fixtures for the real-client matrix, the per-scenario deadline, and the hooks that write
docs/compatibility.md.

Brokers: `shared_broker` is one kmock for the whole session (every scenario uses its own
topic and group names, so sharing is safe); `fresh_broker` starts a private one for
scenarios that restart it. Both are `broker.pytest_plugin.KmockBroker`s (what the `kmock`
and `kmock_session` fixtures run): `broker.server.serve` under `trio.run` in a background
thread, so the clients (sync, asyncio, or other processes) run in the test's own thread.
The fixtures are our own because the shared broker needs settings of its own
(num.partitions=3, for a group of three), and because the pytest11 plugin is only
registered where kmock is installed as a package. Otherwise the broker runs with
`kmock serve`'s defaults.

A module's KNOWN_FAILURES (scenario -> cause) marks those cells xfail(strict=True): the run
stays green while the cause is open, the matrix still shows them as failures with the cause
and the error, and the day the cause is fixed the unexpected pass fails the run until the
entry is removed.

The matrix is written only when every cell ran in this session (a `-k` or `-x` run that
covers part of it leaves the file alone, so it never shows a partial picture).
"""

from __future__ import annotations

import shutil
import signal
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from broker.pytest_plugin import KmockBroker
from tests.integration import matrix
from tests.integration.harness import JS_DIR, SARAMA_BIN, ScenarioDeadline

# Shared-broker settings: auto-created topics get 3 partitions, enough for a group of three.
SHARED_OVERRIDES: dict[str, Any] = {"num.partitions": 3}

_results: dict[tuple[str, str], matrix.Result] = {}
_not_expressible: dict[tuple[str, str], str] = {}
_expected: set[tuple[str, str]] = set()
_known: dict[tuple[str, str], str] = {}
_summary: list[str] = []


# --- brokers ----------------------------------------------------------------------------


@pytest.fixture(scope="session")
def shared_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KmockBroker]:
    b = KmockBroker(tmp_path_factory.mktemp("kmock-shared") / "data", SHARED_OVERRIDES)
    b.start()
    yield b
    b.stop()


@pytest.fixture
def fresh_broker(tmp_path: Path) -> Iterator[Callable[..., KmockBroker]]:
    """fresh_broker(**overrides) -> a private broker on port 0, stopped after the test."""
    started: list[KmockBroker] = []

    def start(**overrides: Any) -> KmockBroker:
        b = KmockBroker(tmp_path / f"data{len(started)}", {**SHARED_OVERRIDES, **overrides})
        started.append(b)
        b.start()
        return b

    yield start
    for b in started:
        b.stop()


# --- client programs --------------------------------------------------------------------


@pytest.fixture(scope="session")
def kcat() -> str:
    path = shutil.which("kcat")
    assert path, "kcat is not installed (make system-deps installs Debian's kcat)"
    return path


@pytest.fixture(scope="session")
def kafkajs_check() -> list[str]:
    node = shutil.which("node")
    assert node, "node is not installed (make system-deps)"
    assert (JS_DIR / "node_modules" / "kafkajs").is_dir(), (
        "kafkajs is not installed: run `make node-deps` (npm ci in tests/integration/js)"
    )
    return [node, str(JS_DIR / "kafkajs-check.js")]


@pytest.fixture(scope="session")
def sarama_check() -> str:
    assert SARAMA_BIN.exists(), "sarama-check is not built: run `make sarama`"
    main_go = SARAMA_BIN.parent / "main.go"
    assert SARAMA_BIN.stat().st_mtime >= main_go.stat().st_mtime, (
        "sarama-check is older than main.go: run `make sarama`"
    )
    return str(SARAMA_BIN)


# --- deadline ---------------------------------------------------------------------------


@pytest.fixture(autouse=True)
def _scenario_deadline(request: pytest.FixtureRequest) -> Iterator[None]:
    """Fail a scenario that runs past its deadline, wherever it is stuck (SIGALRM raises in
    the test's thread; client threads and processes are bounded by their own timeouts)."""
    seconds = getattr(getattr(request.node, "function", None), "kmock_deadline", None)
    if seconds is None:
        yield
        return

    def expired(signum: int, frame: Any) -> None:
        raise ScenarioDeadline(f"scenario exceeded its {seconds:g} s deadline")

    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


# --- the matrix -------------------------------------------------------------------------


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    modules = set()
    for item in items:
        cell = matrix.cell_of(item)
        if cell is None:
            continue
        _expected.add(cell)
        module = item.module  # type: ignore[attr-defined]
        modules.add(module)
        reason = getattr(module, "KNOWN_FAILURES", {}).get(cell[1])
        if reason is not None:
            # Strict: the day the cause is fixed, the pass fails the run until the entry goes.
            item.add_marker(pytest.mark.xfail(reason=reason, strict=True))
            _known[cell] = reason
    for module in modules:
        for sid, why in getattr(module, "NOT_EXPRESSIBLE", {}).items():
            _not_expressible[module.CLIENT, sid] = why


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    cell = _cells_by_nodeid.get(report.nodeid)
    if cell is None:
        return
    current = _results.get(cell)
    if report.failed:
        if current is None or current.outcome != "failed":
            when = "" if report.when == "call" else f"[{report.when}] "
            _results[cell] = matrix.Result("failed", when + matrix.first_error_line(report))
    elif hasattr(report, "wasxfail"):
        _results[cell] = matrix.Result(
            "known", f"{_known.get(cell, report.wasxfail)} Got: {matrix.first_error_line(report)}"
        )
    elif report.skipped:
        if current is None:
            _results[cell] = matrix.Result("skipped", str(report.longrepr))
    elif report.when == "call" and current is None:
        _results[cell] = matrix.Result("passed")


_cells_by_nodeid: dict[str, tuple[str, str]] = {}


def pytest_itemcollected(item: pytest.Item) -> None:
    cell = matrix.cell_of(item)
    if cell is not None:
        _cells_by_nodeid[item.nodeid] = cell


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if not _expected or not _results:
        return
    every_cell = {(c, s) for c in matrix.CLIENTS for s in matrix.SCENARIOS}
    wanted = every_cell - set(_not_expressible)
    ran = {cell for cell, r in _results.items() if r.outcome in ("passed", "failed", "known")}
    if wanted <= ran:
        matrix.write(_results, _not_expressible)
        _summary.append(f"compatibility matrix written to {matrix.DOC.relative_to(matrix.ROOT)}")
    else:
        _summary.append(
            f"compatibility matrix not written: {len(ran & wanted)} of "
            f"{len(wanted)} cells ran in this session"
        )


def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in _summary:
        terminalreporter.write_line(line)
