"""Where a `kmock` command writes, and how it ends: Output, exit codes, one-line errors.

Exit codes: 0 ok; 1 Kafka error, connection failure or startup failure, or input naming
what does not exist (a topic, a partition) (one line on stderr); 2 usage or configuration
error, or input that does not parse (a JSONL or CSV line, a date); 3 refused (resetting
offsets of a group that has members); 130 interrupted. A command raises `UsageError`,
`Refused` or `Failed` (or `KafkaError`), and `cli.main` turns it into its line on stderr
and its exit code.

rich is loaded when the first table or progress bar is drawn, not with this module:
`kmock serve` writes through Output too and never draws one.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import dataclasses
import functools
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "EXIT_ERROR",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "Failed",
    "Output",
    "Parser",
    "Refused",
    "UsageError",
    "as_text",
    "cell",
    "current_output",
    "isatty",
    "kmock_version",
    "parse_assignments",
]

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_INTERRUPTED = 130

# Width given to rich when output is not a terminal: wide enough that tables never elide.
_PIPE_WIDTH = 250


class UsageError(Exception):
    """Arguments that parse but do not make sense together (exit 2)."""


class Refused(Exception):
    """An operation refused for the state it would act on (exit 3)."""


class Failed(Exception):
    """A failure the command explains in one line (exit 1)."""


class Output:
    """Where a command writes: plain text, rich tables, JSON; stdin for `produce`."""

    def __init__(self, stdin: TextIO, stdout: TextIO, stderr: TextIO) -> None:
        self.stdin = stdin
        self.stdout = stdout
        self.stderr = stderr

    @functools.cached_property
    def console(self) -> Console:
        return self._console(self.stdout)

    @functools.cached_property
    def err_console(self) -> Console:
        return self._console(self.stderr)

    @staticmethod
    def _console(stream: TextIO) -> Console:
        from rich.console import Console

        width = None if isatty(stream) else _PIPE_WIDTH
        return Console(file=stream, highlight=False, width=width)

    def line(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def error(self, text: str) -> None:
        self.stderr.write(f"kmock: {text}\n")
        self.stderr.flush()

    def json(self, obj: Any, *, lines: bool = False) -> None:
        import json  # here: `kmock serve` prints no JSON, and need not import it at start

        if lines:
            self.stdout.write(json.dumps(obj, default=_json_default) + "\n")
        else:
            self.stdout.write(json.dumps(obj, indent=2, default=_json_default) + "\n")

    def table(
        self, columns: Sequence[str], rows: Sequence[Sequence[Any]], title: str | None = None
    ) -> None:
        from rich.table import Table
        from rich.text import Text

        table = Table(
            title=title, title_justify="left", box=None, header_style="bold", pad_edge=False
        )
        for name in columns:
            table.add_column(name, overflow="fold")
        for row in rows:
            # Text(): user data (topic names, values) is never read as rich markup.
            table.add_row(*(Text(cell(v)) for v in row))
        self.console.print(table)

    @contextlib.contextmanager
    def progress(
        self, description: str, total: float | None, *, writes_stdout: bool = True
    ) -> Iterator[Callable[[float], None]]:
        """A progress bar on stderr when it is a terminal; yields `advance(n)`.

        A command that writes stdout as it goes gets a bar only when stdout is redirected
        (`kmock consume t > file`): on a shared terminal the two would garble each other.
        """
        if not isatty(self.stderr) or (writes_stdout and isatty(self.stdout)):
            yield lambda n: None
            return
        from rich.progress import Progress

        with Progress(console=self.err_console, transient=True) as progress:
            task = progress.add_task(description, total=total)
            yield lambda n: progress.advance(task, n)


def isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes | bytearray | memoryview):
        return as_text(bytes(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return str(obj)


def as_text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "backslashreplace")


def parse_assignments(items: Sequence[str], what: str) -> dict[str, str]:
    """KEY=VALUE arguments (`--override`, `--config`) as a dict; `what` names the flag."""
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{what} {item!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


# The Output of the main() running in this thread (or task): argparse's own messages (usage,
# errors, --help) go to its streams, so that concurrent main() calls in tests stay apart.
current_output: contextvars.ContextVar[Output] = contextvars.ContextVar("kmock_cli_output")


class Parser(argparse.ArgumentParser):
    """argparse, with its messages (usage, errors, --help) written to the current Output."""

    def _print_message(self, message: str, file: Any = None) -> None:
        out = current_output.get(None)
        if out is None:
            super()._print_message(message, file)
        elif message:
            (out.stderr if file is sys.stderr else out.stdout).write(message)


def kmock_version() -> str:
    """The installed kmock's version, from the name of its `kmock-<version>.dist-info`
    directory on sys.path (the wheel and editable layouts, PEP 427 / PEP 660).

    importlib.metadata finds the same directory, but importing it loads email, zipfile,
    csv and datetime (~25 modules, 10-20 ms), which `kmock serve` would pay just before
    its first answers; it is asked only for a layout without that directory (an egg-info).
    """
    for entry in sys.path:
        try:
            names = os.listdir(entry or ".")
        except OSError:  # not a directory (a zip, a missing path)
            continue
        for name in names:
            if name.startswith("kmock-") and name.endswith(".dist-info"):
                return name.removeprefix("kmock-").removesuffix(".dist-info")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kmock")
    except PackageNotFoundError:
        return "(not installed)"
