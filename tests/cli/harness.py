"""Running `kmock` in tests: admin commands call `cli.main.main` in a worker thread
(`trio.to_thread.run_sync`) while the broker (the `broker` fixture of tests/conftest.py)
serves from the test's nursery."""

from __future__ import annotations

import io
import json
from functools import partial

import trio

from cli.main import main

SCENARIO_S = 30


async def cli(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    """Run `kmock argv...` in a worker thread; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = await trio.to_thread.run_sync(
        partial(main, list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err),
        abandon_on_cancel=True,
    )
    return code, out.getvalue(), err.getvalue()


async def cli_json(*argv: str, stdin: str = "") -> object:
    code, out, err = await cli(*argv, "--output", "json", stdin=stdin)
    assert code == 0, err
    return json.loads(out)


def bs(b) -> tuple[str, str]:
    return ("--bootstrap-server", b.bootstrap_servers)
