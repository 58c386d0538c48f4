"""`kmock`: run the broker, and look inside a running one. The parser and dispatch only.

    kmock serve [server.properties] [--log-dirs DIR] [--override key=value] ...
    kmock topics list | create NAME... | delete NAME... | describe [NAME...]
    kmock groups list | describe GROUP
    kmock offsets show GROUP | reset GROUP (--topic T | --all-topics) (--to-earliest | ...)
                                     [--execute] [--export]
    kmock produce [TOPIC] [--file PATH] [--format jsonl|lines|keyed] < lines
    kmock consume TOPIC [--from-beginning] [--max-messages N] [--timeout-ms MS]
    kmock dump-log PATH
    kmock faults|clock|journal|connections|cluster ...   (test controls, admin endpoint)
    kmock report lag|groups|snapshot|export ...   (pipeline/, with kmock[pipeline])

Each command family is a light module with `register(subparsers)` (`cli.serve`,
`cli.topics`, ...); each parser it adds sets `func=fn` with
`fn(args: argparse.Namespace, out: cli.output.Output) -> int` (an exit code), and subparsers
pass `parser_class=type(parser)` so that their messages go to the same streams. What a
family does lives in `cli.commands`, imported by its `run` when the command runs: the
parser never loads the broker, the client or rich. `kmock serve ...` registers `serve`
alone, and `pipeline.cli` (`kmock report`) is registered like any other family.
"""

from __future__ import annotations

import argparse
import gc
import sys
from collections.abc import Callable, Sequence
from typing import Any, TextIO

from cli.output import (
    EXIT_ERROR,
    EXIT_INTERRUPTED,
    EXIT_REFUSED,
    EXIT_USAGE,
    Failed,
    Output,
    Parser,
    Refused,
    UsageError,
    current_output,
    kmock_version,
)
from protocol.errors import KafkaError

__all__ = ["build_parser", "main"]


def build_parser(*, serve_only: bool = False) -> argparse.ArgumentParser:
    """The `kmock` parser; `serve_only` leaves out every subcommand but `serve`, which is all
    `kmock serve ...` needs (argparse takes ~10 ms to build the others: start-up time)."""
    parser = Parser(
        prog="kmock",
        description="A Kafka-compatible broker for tests and "
        "development, and the tools to look inside it.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=Parser
    )
    from cli import serve  # imports the broker's settings: after `main` has set up the start

    serve.register(sub)
    if serve_only:
        return parser
    for register in _other_families():
        register(sub)
    return parser


def _other_families() -> list[Callable[[Any], None]]:
    """The `register` of every family but `serve`, imported only when the parser needs them."""
    from cli import (
        acls,
        certs,
        consume,
        controls,
        dump_log,
        groups,
        offsets,
        produce,
        schemas,
        topics,
    )
    from pipeline import cli as report

    return [
        topics.register,
        groups.register,
        offsets.register,
        produce.register,
        consume.register,
        dump_log.register,
        controls.register,
        schemas.register,
        certs.register,
        acls.register,
        report.register,
    ]


class _VersionAction(argparse.Action):
    """argparse's "version" action, with the version looked up only when it is asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show program's version number and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        parser._print_message(f"kmock {kmock_version()}\n", sys.stdout)
        parser.exit()


def main(
    argv: Sequence[str] | None = None,
    *,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Run one `kmock` command; returns its exit code (the console script exits with it)."""
    out = Output(stdin or sys.stdin, stdout or sys.stdout, stderr or sys.stderr)
    argv = sys.argv[1:] if argv is None else list(argv)
    serving = argv[:1] == ["serve"]
    if serving:
        # `kmock serve` imports ~400 modules before it binds, whose objects live as long as
        # the process: the collector's passes over them were 8% of the start's instructions
        # (callgrind). It is off until they are imported, then they are frozen out of its
        # passes and it runs again (cli.commands.serve, before trio.run).
        gc.disable()
        # construct without construct.debug (pdb and friends), which nothing here uses.
        from cli.construct_import import import_without_debug

        import_without_debug()
    token = current_output.set(out)
    try:
        try:
            args = build_parser(serve_only=serving).parse_args(argv)
        except SystemExit as e:  # --help, --version, or a usage error (already printed)
            return e.code if isinstance(e.code, int) else EXIT_USAGE
        try:
            return int(args.func(args, out))
        except UsageError as e:
            out.error(str(e))
            return EXIT_USAGE
        except Refused as e:
            out.error(str(e))
            return EXIT_REFUSED
        except (KafkaError, Failed) as e:
            out.error(str(e))
            return EXIT_ERROR
        except KeyboardInterrupt:
            # Ctrl-C in consume/produce: stop quietly, as a shell tool does.
            return EXIT_INTERRUPTED
        finally:
            out.stdout.flush()
    finally:
        current_output.reset(token)
        if serving:
            gc.enable()  # if `serve` stopped before it turned the collector back on


if __name__ == "__main__":
    sys.exit(main())
