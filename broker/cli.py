"""`kmock`: run the broker, and look inside a running one.

    kmock serve [server.properties] [--log-dirs DIR] [--override key=value] ...
    kmock topics list | create NAME | delete NAME | describe NAME
    kmock groups list | describe GROUP
    kmock offsets show GROUP | reset GROUP --topic T (--to-earliest | ...) [--execute]
    kmock produce TOPIC < lines
    kmock consume TOPIC [--from-beginning] [--max-messages N] [--timeout-ms MS]
    kmock dump-log PATH

`serve` turns every setting of `broker.config.SETTINGS` into a flag (`log.dirs` ->
`--log-dirs`). Later sources win: defaults, the properties file, `KAFKA_*` variables, flags
(`--override key=value` last of all). A `KAFKA_*` variable that names no setting is ignored
with a warning rather than refused: Kafka's own scripts and images use KAFKA_HOME,
KAFKA_OPTS, KAFKA_HEAP_OPTS and friends for other things, and a broker that refuses to start
because of them is no drop-in replacement. A bad value in a variable is still an error.

The other commands talk to a live broker (`--bootstrap-server`, default 127.0.0.1:9092)
through `client.kafka`, kmock's own small Kafka client, and work against any Kafka broker
that supports the same API versions. Output is rich tables for people and `--output json`
for scripts (one JSON document; `consume` writes one JSON object per record and line).

Exit codes: 0 ok; 1 Kafka error, connection failure or startup failure (one line on
stderr); 2 usage or configuration error; 3 refused (resetting offsets of a group that has
members); 130 interrupted.

Commands from outside `broker/` (the lead's `kmock report ...` in `pipeline/`) plug in at
`register_extensions`: see there.
"""

from __future__ import annotations

import argparse
import contextlib
import contextvars
import dataclasses
import datetime as dt
import errno
import functools
import importlib
import importlib.util
import json
import logging
import mmap
import os
import random
import signal
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from broker.config import SETTINGS, ConfigError, Setting, env_to_name, load_config, parse_properties
from protocol.compression import CompressionType
from protocol.errors import ErrorCode, KafkaError

# `serve` starts with this module's imports, so what only some commands need is imported
# by them: client.kafka (the admin commands), rich (tables), importlib.metadata (version).
if TYPE_CHECKING:
    from rich.console import Console

    from client import KafkaClient

__all__ = [
    "EXIT_ERROR",
    "EXIT_OK",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "Output",
    "build_parser",
    "main",
    "register_extensions",
]

log = logging.getLogger("broker.cli")

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_REFUSED = 3
EXIT_INTERRUPTED = 130

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
# Width given to rich when output is not a terminal: wide enough that tables never elide.
_PIPE_WIDTH = 250
# DescribeConfigs config_source codes (Kafka's ConfigSource).
_CONFIG_SOURCES = {
    1: "topic",
    2: "dynamic broker",
    3: "dynamic default broker",
    4: "static broker",
    5: "default",
    6: "dynamic broker logger",
}
_GROUP_INACTIVE = ("Empty", "Dead")


class UsageError(Exception):
    """Arguments that parse but do not make sense together (exit 2)."""


class Refused(Exception):
    """An operation refused for the state it would act on (exit 3)."""


class Failed(Exception):
    """A failure the command explains in one line (exit 1)."""


# --- output ------------------------------------------------------------------------------


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

        width = None if _isatty(stream) else _PIPE_WIDTH
        return Console(file=stream, highlight=False, width=width)

    def line(self, text: str = "") -> None:
        self.stdout.write(text + "\n")

    def error(self, text: str) -> None:
        self.stderr.write(f"kmock: {text}\n")
        self.stderr.flush()

    def json(self, obj: Any, *, lines: bool = False) -> None:
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
            table.add_row(*(Text(_cell(v)) for v in row))
        self.console.print(table)

    @contextlib.contextmanager
    def progress(
        self, description: str, total: float | None, *, writes_stdout: bool = True
    ) -> Iterator[Callable[[float], None]]:
        """A progress bar on stderr when it is a terminal; yields `advance(n)`.

        A command that writes stdout as it goes gets a bar only when stdout is redirected
        (`kmock consume t > file`): on a shared terminal the two would garble each other.
        """
        if not _isatty(self.stderr) or (writes_stdout and _isatty(self.stdout)):
            yield lambda n: None
            return
        from rich.progress import Progress

        with Progress(console=self.err_console, transient=True) as progress:
            task = progress.add_task(description, total=total)
            yield lambda n: progress.advance(task, n)


def _isatty(stream: TextIO) -> bool:
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _cell(v: Any) -> str:
    if v is None:
        return "-"
    if isinstance(v, bool):
        return "true" if v else "false"
    return str(v)


def _json_default(obj: Any) -> Any:
    if isinstance(obj, bytes | bytearray | memoryview):
        return _text(bytes(obj))
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}
    return str(obj)


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8", "backslashreplace")


# --- argument parsing --------------------------------------------------------------------

# The Output of the main() running in this thread (or task): argparse's own messages (usage,
# errors, --help) go to its streams, so that concurrent main() calls in tests stay apart.
_current_output: contextvars.ContextVar[Output] = contextvars.ContextVar("kmock_cli_output")


class _Parser(argparse.ArgumentParser):
    def _print_message(self, message: str, file: Any = None) -> None:
        out = _current_output.get(None)
        if out is None:
            super()._print_message(message, file)
        elif message:
            (out.stderr if file is sys.stderr else out.stdout).write(message)


def _setting_flag(name: str) -> str:
    return "--" + name.replace(".", "-")


def _setting_help(s: Setting) -> str:
    default = "unset" if s.default is None else _cell(s.default)
    text = f"{s.name}: {s.doc} Default: {default}"
    if s.kafka_default is not None and s.kafka_default != s.default:
        text += f" (Kafka: {_cell(s.kafka_default)})"
    return (text + ".").replace("%", "%%")


_METAVARS = {"int": "N", "long": "N", "boolean": "true|false", "list": "LIST"}


def _add_serve_parser(sub: Any) -> None:
    p = sub.add_parser(
        "serve",
        help="run the broker",
        description=(
            "Run a kmock broker until SIGINT or SIGTERM (a graceful stop: logs are fsynced "
            "and closed). Settings use Kafka's names. Later sources win: defaults, the "
            "properties file, KAFKA_* environment variables (KAFKA_LOG_DIRS -> log.dirs; "
            "'__' stands for '_' and '___' for '-'), flags, then --override."
        ),
    )
    p.add_argument(
        "properties",
        nargs="?",
        metavar="server.properties",
        help="a Kafka-style properties file (key=value lines)",
    )
    p.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="set any setting by its Kafka name, as kafka-server-start does "
        "(repeatable; wins over the other flags)",
    )
    p.add_argument(
        "--log-level",
        default="INFO",
        type=str.upper,
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="INFO: a line per connection and rebalance; DEBUG: per request. Default: INFO.",
    )
    p.add_argument(
        "--log-format",
        default="text",
        choices=("text", "json"),
        help="text: 'ts level logger message key=value'; json: one object per line. Default: text.",
    )
    group = p.add_argument_group("broker settings (Kafka names)")
    for s in SETTINGS.values():
        group.add_argument(
            _setting_flag(s.name),
            dest=f"setting:{s.name}",
            default=None,
            metavar=_METAVARS.get(s.type, "VALUE"),
            help=_setting_help(s),
        )
    p.set_defaults(func=cmd_serve)


def _client_options() -> _Parser:
    common = _Parser(add_help=False)
    common.add_argument(
        "--bootstrap-server",
        default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT",
        help=f"the broker to talk to (default {DEFAULT_BOOTSTRAP})",
    )
    common.add_argument(
        "--request-timeout-ms",
        type=int,
        default=30000,
        metavar="MS",
        help="socket timeout of each request (default 30000)",
    )
    common.add_argument(
        "--output",
        choices=("text", "json"),
        default="text",
        help="text (tables) or json (for scripts)",
    )
    return common


def build_parser(*, serve_only: bool = False) -> argparse.ArgumentParser:
    """The `kmock` parser; `serve_only` leaves out every subcommand but `serve`, which is all
    `kmock serve ...` needs (argparse takes ~10 ms to build the others: start-up time)."""
    parser = _Parser(
        prog="kmock",
        description="A Kafka-compatible broker for tests and "
        "development, and the tools to look inside it.",
    )
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(
        dest="command", metavar="COMMAND", required=True, parser_class=_Parser
    )
    _add_serve_parser(sub)
    if serve_only:
        return parser
    common = _client_options()

    topics = sub.add_parser("topics", help="list, create, delete, describe topics")
    tsub = topics.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=_Parser
    )
    p = tsub.add_parser("list", parents=[common], help="list topics")
    p.add_argument("--exclude-internal", action="store_true", help="leave out __consumer_offsets")
    p.set_defaults(func=cmd_topics_list)
    p = tsub.add_parser("create", parents=[common], help="create a topic")
    p.add_argument("topic")
    p.add_argument(
        "--partitions",
        type=int,
        default=-1,
        metavar="N",
        help="default: the broker's num.partitions",
    )
    p.add_argument("--replication-factor", type=int, default=-1, metavar="N")
    p.add_argument(
        "--config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a topic config (retention.ms=60000; repeatable)",
    )
    p.add_argument("--if-not-exists", action="store_true")
    p.set_defaults(func=cmd_topics_create)
    p = tsub.add_parser("delete", parents=[common], help="delete a topic")
    p.add_argument("topic")
    p.add_argument("--if-exists", action="store_true")
    p.set_defaults(func=cmd_topics_delete)
    p = tsub.add_parser(
        "describe", parents=[common], help="partitions, offsets and configs of a topic"
    )
    p.add_argument("topic")
    p.set_defaults(func=cmd_topics_describe)

    groups = sub.add_parser("groups", help="list and describe consumer groups")
    gsub = groups.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=_Parser
    )
    p = gsub.add_parser("list", parents=[common], help="list groups")
    p.set_defaults(func=cmd_groups_list)
    p = gsub.add_parser(
        "describe", parents=[common], help="members, assignments, committed offsets and lag"
    )
    p.add_argument("group")
    p.set_defaults(func=cmd_groups_describe)

    offsets = sub.add_parser("offsets", help="show and reset a group's committed offsets")
    osub = offsets.add_subparsers(
        dest="action", metavar="ACTION", required=True, parser_class=_Parser
    )
    p = osub.add_parser("show", parents=[common], help="committed offsets and lag")
    p.add_argument("group")
    p.set_defaults(func=cmd_offsets_show)
    p = osub.add_parser(
        "reset",
        parents=[common],
        help="reset committed offsets (dry run unless --execute)",
        description="Like kafka-consumer-groups --reset-offsets: prints the plan, and commits "
        "it with --execute. The group must have no members (state Empty or "
        "Dead); otherwise nothing is done and the exit code is 3.",
    )
    p.add_argument("group")
    which = p.add_mutually_exclusive_group(required=True)
    which.add_argument(
        "--topic",
        action="append",
        default=[],
        metavar="TOPIC[:P,P]",
        help="a topic, or some of its partitions (repeatable)",
    )
    which.add_argument(
        "--all-topics", action="store_true", help="every topic the group has committed offsets for"
    )
    to = p.add_mutually_exclusive_group(required=True)
    to.add_argument("--to-earliest", action="store_true")
    to.add_argument("--to-latest", action="store_true")
    to.add_argument(
        "--to-datetime",
        metavar="ISO",
        help="first offset at or after this time (2025-01-31T12:00:00, local time "
        "unless it carries an offset or Z)",
    )
    to.add_argument(
        "--to-offset", type=int, metavar="N", help="this offset (clamped to what the log holds)"
    )
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--execute", action="store_true", help="commit the plan")
    mode.add_argument("--dry-run", action="store_true", help="only print the plan (default)")
    p.set_defaults(func=cmd_offsets_reset)

    p = sub.add_parser("produce", parents=[common], help="produce stdin's lines as records")
    p.add_argument("topic")
    p.add_argument(
        "--key-separator", metavar="SEP", help="split each line at the first SEP into key and value"
    )
    p.add_argument(
        "--partition",
        type=int,
        metavar="P",
        help="default: by key hash as Kafka's partitioner, else one per batch",
    )
    p.add_argument(
        "--compression", default="none", choices=[c.name.lower() for c in CompressionType]
    )
    p.add_argument(
        "--batch-size", type=int, default=500, metavar="N", help="records per batch (default 500)"
    )
    p.add_argument("--acks", type=int, default=-1, choices=(-1, 1), help="-1 (all, default) or 1")
    p.set_defaults(func=cmd_produce)

    p = sub.add_parser("consume", parents=[common], help="print a topic's records")
    p.add_argument("topic")
    p.add_argument(
        "--from-beginning",
        action="store_true",
        help="start at the earliest offset (default: the latest)",
    )
    p.add_argument("--partition", type=int, metavar="P", help="only this partition")
    p.add_argument(
        "--offset", metavar="O", help="start offset in --partition: a number, earliest or latest"
    )
    p.add_argument("--max-messages", type=int, metavar="N", help="stop after N records")
    p.add_argument(
        "--timeout-ms",
        type=int,
        metavar="MS",
        help="stop when no record arrives for this long (default: never)",
    )
    for field in ("key", "partition", "offset", "timestamp", "headers"):
        p.add_argument(f"--print-{field}", action="store_true", help=f"print each record's {field}")
    p.add_argument("--separator", default="\t", help="between the printed fields (default: tab)")
    p.set_defaults(func=cmd_consume)

    p = sub.add_parser(
        "dump-log",
        help="decode log segments offline",
        description="Decode the batches and records of a segment file (<base offset>.log) "
        "or of every segment in a partition directory, without a broker. Records "
        "of __consumer_offsets are decoded field by field.",
    )
    p.add_argument("path", type=Path)
    p.add_argument("--batches-only", action="store_true", help="do not print records")
    p.add_argument(
        "--offsets-decoder",
        action="store_true",
        help="decode records as __consumer_offsets records (automatic for a "
        "__consumer_offsets-N directory)",
    )
    p.add_argument("--output", choices=("text", "json"), default="text")
    p.set_defaults(func=cmd_dump_log)

    register_extensions(sub)
    return parser


def register_extensions(subparsers: Any) -> None:
    """Add the subcommands of packages outside `broker/` that are installed.

    The one registration point: `pipeline.cli.register(subparsers)`, when `pipeline.cli`
    can be found, adds `kmock report ...`. It must not import pyspark at module level (every
    `kmock` run imports it). Each parser it adds sets `func=fn` with
    `fn(args: argparse.Namespace, out: Output) -> int` (an exit code); `out` has the
    streams (`stdin`, `stdout`, `stderr`), `table()`, `json()` and `error()`. Subparsers
    should pass `parser_class=type(parser)` so their messages go to the same streams.
    """
    try:
        spec = importlib.util.find_spec("pipeline.cli")
    except ModuleNotFoundError:
        return
    if spec is not None:
        importlib.import_module("pipeline.cli").register(subparsers)


class _VersionAction(argparse.Action):
    """argparse's "version" action, with the version looked up only when it is asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "show program's version number and exit")
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        parser._print_message(f"kmock {_version()}\n", sys.stdout)
        parser.exit()


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kmock")
    except PackageNotFoundError:
        return "(not installed)"


# --- main ----------------------------------------------------------------------------------


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
    token = _current_output.set(out)
    try:
        try:
            args = build_parser(serve_only=argv[:1] == ["serve"]).parse_args(argv)
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
        _current_output.reset(token)


# --- serve -------------------------------------------------------------------------------


def _environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The KAFKA_* variables that name a setting; the others are ignored with a warning."""
    kept = {}
    for var, value in environ.items():
        name = env_to_name(var)
        if name is None:
            continue
        if name in SETTINGS or name == "broker.id":
            kept[var] = value
        else:
            log.warning("ignoring %s: %s is not a kmock setting", var, name)
    return kept


def _parse_assignments(items: Sequence[str], what: str) -> dict[str, str]:
    out = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{what} {item!r} is not KEY=VALUE")
        out[key.strip()] = value.strip()
    return out


def serve_config(args: argparse.Namespace, environ: Mapping[str, str]) -> Any:
    """The Config `kmock serve` runs with: defaults < file < KAFKA_* < flags < --override.

    Raises:
      ConfigError: an unknown setting, a value of the wrong type, an unreadable file, or a
        listener that is not PLAINTEXT://host:port.
    """
    from broker.server import parse_listeners

    overrides: dict[str, str] = {
        key.removeprefix("setting:"): value
        for key, value in vars(args).items()
        if key.startswith("setting:") and value is not None
    }
    try:
        overrides.update(_parse_assignments(args.override, "--override"))
    except UsageError as e:
        raise ConfigError(str(e)) from None
    properties = None
    if args.properties:
        try:
            properties = parse_properties(Path(args.properties).read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read {args.properties}: {e.strerror}") from None
    config = load_config(properties=properties, environ=_environment(environ), overrides=overrides)
    for name in ("listeners", "advertised.listeners"):
        if config[name]:
            try:
                parse_listeners(config[name])
            except ValueError as e:
                raise ConfigError(f"{name}: {e}") from None
    return config


def cmd_serve(args: argparse.Namespace, out: Output) -> int:
    import trio

    from broker.logging_setup import setup_logging

    setup_logging(args.log_level, args.log_format, out.stderr)
    try:
        config = serve_config(args, os.environ)
    except ConfigError as e:
        out.error(str(e))
        return EXIT_USAGE
    explicit = {name: config[name] for name in sorted(config.explicit)}
    log.info("starting kmock", extra=explicit)
    try:
        trio.run(_serve_until_signal, config)
    except Exception as e:
        # The nursery wraps failures in groups. A failure we can explain (a port in use, a
        # data directory we cannot write, a log we cannot open) is one line and exit 1;
        # anything else is a bug and keeps its traceback.
        leaves = list(_leaves(e))
        if not all(isinstance(leaf, OSError | KafkaError) for leaf in leaves):
            raise
        out.error(_startup_error(leaves[0]))
        return EXIT_ERROR
    return EXIT_OK


def _leaves(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in _leaves(sub)]
    return [e]


def _startup_error(e: BaseException) -> str:
    if isinstance(e, OSError) and e.errno == errno.EADDRINUSE:
        return f"cannot start: address already in use ({e})"
    if isinstance(e, OSError) and e.errno == errno.EACCES:
        return f"cannot start: permission denied ({e})"
    return f"cannot start: {e}"


async def _serve_until_signal(config: Any) -> None:
    """serve() in a nursery; SIGINT/SIGTERM stop it gracefully (main thread only)."""
    import trio

    from broker.server import serve

    broker: Any = None

    async def watch_signals(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            task_status.started()
            async for signum in signals:
                log.info("stopping", extra={"signal": signal.Signals(signum).name})
                if broker is None:  # still starting: nothing to drain yet
                    nursery.cancel_scope.cancel()
                else:
                    broker.shutdown()

    async def run_broker(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        await serve(config, task_status=task_status)
        nursery.cancel_scope.cancel()  # serve returned (shutdown): stop watching signals

    async with trio.open_nursery() as nursery:
        await nursery.start(watch_signals)
        broker = await nursery.start(run_broker)
        # Not in "starting kmock": looking it up (importlib.metadata) takes 10-20 ms, which
        # would delay the listeners.
        log.info("kmock version %s", _version())


# --- admin commands: helpers -------------------------------------------------------------


@contextlib.contextmanager
def _connect(args: argparse.Namespace) -> Iterator[KafkaClient]:
    """A connected client; a broker that cannot be reached or goes away raises `Failed`."""
    from client import ConnectionFailed, KafkaClient

    client = KafkaClient(args.bootstrap_server, timeout_s=args.request_timeout_ms / 1000)
    try:
        client.connect()
        yield client
    except ConnectionFailed as e:
        raise Failed(str(e)) from e
    finally:
        client.close()


def _log_end_offsets(
    client: KafkaClient, keys: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """Log end offsets, leaving out partitions that no longer exist (a deleted topic)."""
    from client import LATEST

    return client.list_offsets(keys, LATEST, raise_errors=False)


def _decode_consumer(
    member: Any, protocol_type: str
) -> tuple[list[str] | None, dict[str, list[int]] | None]:
    """(subscribed topics, assignment) of a member of a "consumer" group, else (None, None)."""
    from protocol.consumer_protocol import decode_assignment, decode_subscription
    from protocol.primitives import DecodeError

    if protocol_type != "consumer":
        return None, None
    topics = assignment = None
    with contextlib.suppress(DecodeError):
        if member.member_metadata:
            topics = list(decode_subscription(member.member_metadata).topics)
    with contextlib.suppress(DecodeError):
        if member.member_assignment:
            a = decode_assignment(member.member_assignment)
            assignment = {tp.topic: sorted(tp.partitions) for tp in a.assigned_partitions}
    return topics, assignment


def _offset_rows(
    client: KafkaClient, group_id: str, owners: Mapping[tuple[str, int], Any]
) -> list[dict[str, Any]]:
    """One row per partition the group has committed or is assigned: offsets and lag."""
    committed = client.committed_offsets(group_id)
    keys = sorted(set(committed) | set(owners))
    ends = _log_end_offsets(client, keys)
    rows = []
    for key in keys:
        c = committed.get(key)
        end = ends.get(key)
        member = owners.get(key)
        rows.append(
            {
                "topic": key[0],
                "partition": key[1],
                "committed_offset": None if c is None else c.offset,
                "log_end_offset": end,
                "lag": None if c is None or end is None else max(0, end - c.offset),
                "member_id": None if member is None else member.member_id,
                "client_id": None if member is None else member.client_id,
                "host": None if member is None else member.client_host,
            }
        )
    return rows


def _print_offset_rows(out: Output, rows: list[dict[str, Any]], title: str | None) -> None:
    out.table(
        [
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        ],
        [
            [
                r["topic"],
                r["partition"],
                r["committed_offset"],
                r["log_end_offset"],
                r["lag"],
                r["member_id"],
                r["host"],
                r["client_id"],
            ]
            for r in rows
        ],
        title=title,
    )


def _missing_group(group_id: str) -> KafkaError:
    return KafkaError(ErrorCode.GROUP_ID_NOT_FOUND, f"group {group_id!r} does not exist")


# --- topics --------------------------------------------------------------------------------


def cmd_topics_list(args: argparse.Namespace, out: Output) -> int:
    with _connect(args) as client:
        response = client.metadata(None)
    topics = sorted(
        (t for t in response.topics if not (args.exclude_internal and t.is_internal)),
        key=lambda t: t.name or "",
    )
    if args.output == "json":
        out.json(
            [
                {
                    "name": t.name,
                    "partitions": len(t.partitions),
                    "internal": t.is_internal,
                    "topic_id": str(t.topic_id),
                }
                for t in topics
            ]
        )
    else:
        out.table(
            ["TOPIC", "PARTITIONS", "INTERNAL"],
            [[t.name, len(t.partitions), t.is_internal] for t in topics],
        )
    return EXIT_OK


def cmd_topics_create(args: argparse.Namespace, out: Output) -> int:
    configs = _parse_assignments(args.config, "--config")
    with _connect(args) as client:
        try:
            result = client.create_topic(
                args.topic,
                num_partitions=args.partitions,
                replication_factor=args.replication_factor,
                configs=configs,
            )
        except KafkaError as e:
            if args.if_not_exists and e.code == ErrorCode.TOPIC_ALREADY_EXISTS:
                if args.output == "json":
                    out.json({"name": args.topic, "created": False})
                else:
                    out.line(f"Topic {args.topic} already exists.")
                return EXIT_OK
            raise
    if args.output == "json":
        out.json(
            {
                "name": result.name,
                "created": True,
                "topic_id": str(result.topic_id),
                "partitions": result.num_partitions,
                "replication_factor": result.replication_factor,
            }
        )
    else:
        out.line(f"Created topic {args.topic}.")
    return EXIT_OK


def cmd_topics_delete(args: argparse.Namespace, out: Output) -> int:
    with _connect(args) as client:
        try:
            client.delete_topic(args.topic)
            deleted = True
        except KafkaError as e:
            if not (args.if_exists and e.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                raise
            deleted = False
    if args.output == "json":
        out.json({"name": args.topic, "deleted": deleted})
    else:
        out.line(
            f"Deleted topic {args.topic}." if deleted else f"Topic {args.topic} does not exist."
        )
    return EXIT_OK


def cmd_topics_describe(args: argparse.Namespace, out: Output) -> int:
    from client import EARLIEST, LATEST, RESOURCE_TOPIC
    from protocol.messages.describe_configs import DescribeConfigsRequest

    with _connect(args) as client:
        response = client.metadata([args.topic])
        topic = next((t for t in response.topics if t.name == args.topic), None)
        if topic is None:
            raise KafkaError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"topic {args.topic!r}")
        if topic.error_code:
            raise KafkaError(ErrorCode(topic.error_code), f"topic {args.topic!r}")
        keys = [(args.topic, p.partition_index) for p in topic.partitions]
        starts = client.list_offsets(keys, EARLIEST)
        ends = client.list_offsets(keys, LATEST)
        configs = []
        if DescribeConfigsRequest.API_KEY in client.api_versions:
            configs = client.describe_configs(RESOURCE_TOPIC, args.topic)
    partitions: list[dict[str, Any]] = [
        {
            "partition": p.partition_index,
            "leader": p.leader_id,
            "leader_epoch": p.leader_epoch,
            "replicas": list(p.replica_nodes),
            "isr": list(p.isr_nodes),
            "log_start_offset": starts[(args.topic, p.partition_index)],
            "log_end_offset": ends[(args.topic, p.partition_index)],
        }
        for p in sorted(topic.partitions, key=lambda p: p.partition_index)
    ]
    config_rows = [
        {
            "name": c.name,
            "value": c.value,
            "source": _CONFIG_SOURCES.get(c.config_source, str(c.config_source)),
        }
        for c in sorted(configs, key=lambda c: c.name)
    ]
    if args.output == "json":
        out.json(
            {
                "name": topic.name,
                "topic_id": str(topic.topic_id),
                "internal": topic.is_internal,
                "partitions": partitions,
                "configs": config_rows,
            }
        )
        return EXIT_OK
    replication = len(topic.partitions[0].replica_nodes) if topic.partitions else 0
    out.line(
        f"Topic: {topic.name}  TopicId: {topic.topic_id}  "
        f"PartitionCount: {len(partitions)}  ReplicationFactor: {replication}"
    )
    out.table(
        ["PARTITION", "LEADER", "REPLICAS", "ISR", "LOG-START-OFFSET", "LOG-END-OFFSET"],
        [
            [
                p["partition"],
                p["leader"],
                ",".join(map(str, p["replicas"])),
                ",".join(map(str, p["isr"])),
                p["log_start_offset"],
                p["log_end_offset"],
            ]
            for p in partitions
        ],
    )
    if config_rows:
        out.table(
            ["CONFIG", "VALUE", "SOURCE"],
            [[c["name"], c["value"], c["source"]] for c in config_rows],
            title="Configs",
        )
    return EXIT_OK


# --- groups --------------------------------------------------------------------------------


def cmd_groups_list(args: argparse.Namespace, out: Output) -> int:
    with _connect(args) as client:
        groups = sorted(client.list_groups(), key=lambda g: g.group_id)
    if args.output == "json":
        out.json(
            [
                {
                    "group_id": g.group_id,
                    "protocol_type": g.protocol_type,
                    "state": g.group_state or None,
                }
                for g in groups
            ]
        )
    else:
        out.table(
            ["GROUP", "PROTOCOL-TYPE", "STATE"],
            [[g.group_id, g.protocol_type, g.group_state or None] for g in groups],
        )
    return EXIT_OK


def _describe(
    client: KafkaClient, group_id: str
) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    """(DescribedGroup, members, offset rows) of a group that exists."""
    group = client.describe_group(group_id)
    members = []
    owners: dict[tuple[str, int], Any] = {}
    for m in group.members:
        topics, assignment = _decode_consumer(m, group.protocol_type)
        for topic, partitions in (assignment or {}).items():
            for p in partitions:
                owners[(topic, p)] = m
        members.append(
            {
                "member_id": m.member_id,
                "group_instance_id": m.group_instance_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "subscription": topics,
                "assignment": assignment,
            }
        )
    rows = _offset_rows(client, group_id, owners)
    if group.group_state == "Dead" and not members and not rows:
        raise _missing_group(group_id)
    return group, members, rows


def cmd_groups_describe(args: argparse.Namespace, out: Output) -> int:
    with _connect(args) as client:
        group, members, rows = _describe(client, args.group)
    if args.output == "json":
        out.json(
            {
                "group_id": group.group_id,
                "state": group.group_state,
                "protocol_type": group.protocol_type,
                "protocol": group.protocol_data,
                "members": members,
                "offsets": rows,
            }
        )
        return EXIT_OK
    out.line(
        f"Group: {group.group_id}  State: {group.group_state}  "
        f"ProtocolType: {group.protocol_type or '-'}  Protocol: {group.protocol_data or '-'}"
        f"  Members: {len(members)}"
    )
    if members:
        out.table(
            ["CONSUMER-ID", "INSTANCE-ID", "HOST", "CLIENT-ID", "ASSIGNMENT"],
            [
                [
                    m["member_id"],
                    m["group_instance_id"],
                    m["host"],
                    m["client_id"],
                    _format_assignment(m["assignment"]),
                ]
                for m in members
            ],
            title="Members",
        )
    _print_offset_rows(out, rows, title="Offsets")
    return EXIT_OK


def _format_assignment(assignment: dict[str, list[int]] | None) -> str | None:
    if assignment is None:
        return None
    return (
        " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(assignment.items()))
        or "(none)"
    )


# --- offsets -------------------------------------------------------------------------------


def cmd_offsets_show(args: argparse.Namespace, out: Output) -> int:
    with _connect(args) as client:
        group, _, rows = _describe(client, args.group)
    if args.output == "json":
        out.json({"group_id": group.group_id, "state": group.group_state, "offsets": rows})
    else:
        _print_offset_rows(out, rows, title=f"Group {group.group_id} ({group.group_state})")
    return EXIT_OK


def _parse_topic_spec(spec: str) -> tuple[str, list[int] | None]:
    topic, sep, parts = spec.partition(":")
    if not topic:
        raise UsageError(f"--topic {spec!r}: no topic name")
    if not sep:
        return topic, None
    try:
        return topic, sorted({int(p) for p in parts.split(",") if p.strip()})
    except ValueError:
        raise UsageError(f"--topic {spec!r}: partitions must be numbers (TOPIC:0,1)") from None


def _parse_datetime_ms(text: str) -> int:
    try:
        when = dt.datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(f"--to-datetime {text!r} is not an ISO 8601 date and time") from None
    return int(when.timestamp() * 1000)  # naive: local time, as Kafka's tool reads it


def _reset_targets(
    client: KafkaClient, args: argparse.Namespace, committed: Mapping[tuple[str, int], Any]
) -> list[tuple[str, int]]:
    if args.all_topics:
        return sorted(committed)
    keys: set[tuple[str, int]] = set()
    for spec in args.topic:
        topic, partitions = _parse_topic_spec(spec)
        count = client.partition_count(topic)
        for p in partitions if partitions is not None else range(count):
            if not 0 <= p < count:
                raise Failed(f"topic {topic!r} has no partition {p} (it has {count})")
            keys.add((topic, p))
    return sorted(keys)


def cmd_offsets_reset(args: argparse.Namespace, out: Output) -> int:
    from client import EARLIEST, LATEST

    timestamp = _parse_datetime_ms(args.to_datetime) if args.to_datetime is not None else None
    with _connect(args) as client:
        group = client.describe_group(args.group)
        if group.group_state not in _GROUP_INACTIVE:
            raise Refused(
                f"offsets can only be reset while group {args.group!r} is inactive, but it "
                f"is {group.group_state} with {len(group.members)} member(s); stop its "
                f"consumers first"
            )
        committed = client.committed_offsets(args.group)
        keys = _reset_targets(client, args, committed)
        starts = client.list_offsets(keys, EARLIEST)
        ends = client.list_offsets(keys, LATEST)
        if args.to_earliest:
            new = dict(starts)
        elif args.to_latest:
            new = dict(ends)
        elif timestamp is not None:
            found = client.list_offsets(keys, timestamp)
            # No record at or after the time: the log end, as Kafka's tool does.
            new = {k: o if o >= 0 else ends[k] for k, o in found.items()}
        else:
            new = {k: min(max(args.to_offset, starts[k]), ends[k]) for k in keys}
        plan: list[dict[str, Any]] = [
            {
                "topic": t,
                "partition": p,
                "current_offset": committed[(t, p)].offset if (t, p) in committed else None,
                "new_offset": new[(t, p)],
            }
            for t, p in keys
        ]
        if args.execute and plan:
            client.commit_offsets(
                args.group, {(r["topic"], r["partition"]): r["new_offset"] for r in plan}
            )
    if args.output == "json":
        out.json({"group_id": args.group, "executed": bool(args.execute), "plan": plan})
        return EXIT_OK
    title = (
        f"Committed for group {args.group}"
        if args.execute
        else f"Dry run for group {args.group}: nothing committed (add --execute)"
    )
    out.table(
        ["TOPIC", "PARTITION", "CURRENT-OFFSET", "NEW-OFFSET"],
        [[r["topic"], r["partition"], r["current_offset"], r["new_offset"]] for r in plan],
        title=title,
    )
    return EXIT_OK


# --- produce / consume ---------------------------------------------------------------------


def cmd_produce(args: argparse.Namespace, out: Output) -> int:
    from client import default_partition
    from protocol.records import build_batch

    if args.batch_size < 1:
        raise UsageError("--batch-size must be at least 1")
    codec = CompressionType[args.compression.upper()]
    sep = args.key_separator
    with _connect(args) as client:
        count = client.partition_count(args.topic, allow_auto_topic_creation=True)
        if args.partition is not None and not 0 <= args.partition < count:
            raise Failed(f"topic {args.topic!r} has no partition {args.partition} (it has {count})")
        pending: dict[int, list[Any]] = {}
        written: dict[int, list[int]] = {}  # partition -> [first offset, last offset]
        sticky = random.randrange(count)
        total = 0
        # Typed lines go out one by one, as they are entered; piped ones in batches.
        batch_size = 1 if _isatty(out.stdin) else args.batch_size

        def flush(partition: int) -> None:
            records = pending.pop(partition, [])
            if not records:
                return
            batch = build_batch(records, compression=codec)
            base = client.produce(args.topic, partition, batch, acks=args.acks)
            span = written.setdefault(partition, [base, base])
            span[1] = base + len(records) - 1

        with out.progress(f"producing to {args.topic}", None, writes_stdout=False) as advance:
            for lineno, raw in enumerate(out.stdin, 1):
                line = raw.rstrip("\r\n")
                key: bytes | None = None
                if sep:
                    k, found, line = line.partition(sep)
                    if not found:
                        raise Failed(f"line {lineno} has no key separator {sep!r}")
                    key = k.encode()
                if args.partition is not None:
                    partition = args.partition
                elif key is not None:
                    partition = default_partition(key, count)
                else:
                    partition = sticky
                pending.setdefault(partition, []).append(
                    (key, line.encode(), (), int(time.time() * 1000))
                )
                total += 1
                if len(pending[partition]) >= batch_size:
                    flush(partition)
                    if partition == sticky:
                        sticky = (sticky + 1) % count
                advance(1)
            for partition in list(pending):
                flush(partition)
    if args.output == "json":
        out.json(
            {
                "topic": args.topic,
                "records": total,
                "partitions": {
                    str(p): {"first_offset": a, "last_offset": b}
                    for p, (a, b) in sorted(written.items())
                },
            }
        )
    else:
        spans = ", ".join(f"{p}: {a}-{b}" for p, (a, b) in sorted(written.items()))
        out.line(f"Produced {total} record(s) to {args.topic}" + (f" ({spans})" if spans else "."))
    return EXIT_OK


def _start_offsets(
    client: KafkaClient, args: argparse.Namespace, partitions: list[int]
) -> dict[int, int]:
    from client import EARLIEST, LATEST

    keys = [(args.topic, p) for p in partitions]
    if args.offset is not None:
        if args.offset in ("earliest", "latest"):
            found = client.list_offsets(keys, EARLIEST if args.offset == "earliest" else LATEST)
            return {p: found[(args.topic, p)] for p in partitions}
        try:
            return dict.fromkeys(partitions, int(args.offset))
        except ValueError:
            raise UsageError(f"--offset {args.offset!r}: a number, earliest or latest") from None
    found = client.list_offsets(keys, EARLIEST if args.from_beginning else LATEST)
    return {p: found[(args.topic, p)] for p in partitions}


def cmd_consume(args: argparse.Namespace, out: Output) -> int:
    from protocol.records import decode_records, iter_batches

    if args.offset is not None and args.partition is None:
        raise UsageError("--offset needs --partition")
    if args.offset is not None and args.from_beginning:
        raise UsageError("--offset and --from-beginning exclude each other")
    consumed = 0
    with _connect(args) as client:
        count = client.partition_count(args.topic)
        if args.partition is not None and not 0 <= args.partition < count:
            raise Failed(f"topic {args.topic!r} has no partition {args.partition} (it has {count})")
        partitions = [args.partition] if args.partition is not None else list(range(count))
        positions = _start_offsets(client, args, partitions)
        idle_deadline = (
            None if args.timeout_ms is None else time.monotonic() + args.timeout_ms / 1000
        )
        with out.progress(f"consuming {args.topic}", args.max_messages) as advance:
            while args.max_messages is None or consumed < args.max_messages:
                wait_ms = 500
                if idle_deadline is not None:
                    left_ms = int((idle_deadline - time.monotonic()) * 1000)
                    if left_ms <= 0:
                        break
                    wait_ms = min(wait_ms, left_ms)
                data = client.fetch(args.topic, positions, max_wait_ms=wait_ms)
                got = 0
                for partition, pd in sorted(data.items()):
                    if pd.error_code:
                        raise KafkaError(
                            ErrorCode(pd.error_code),
                            f"fetch {args.topic}-{partition} at {positions[partition]}",
                        )
                    view = memoryview(pd.records or b"")
                    # A batch may start before the fetch offset: skip what was already printed.
                    for pos, header in iter_batches(view):
                        if not header.is_control:
                            for record in decode_records(view[pos : pos + header.size]):
                                if record.offset >= positions[partition] and not (
                                    args.max_messages is not None and consumed >= args.max_messages
                                ):
                                    _print_record(out, args, partition, record)
                                    consumed += 1
                                    got += 1
                                    advance(1)
                        positions[partition] = max(positions[partition], header.next_offset)
                out.stdout.flush()
                if got and idle_deadline is not None:
                    idle_deadline = time.monotonic() + args.timeout_ms / 1000
    out.stderr.write(f"Processed a total of {consumed} messages\n")
    return EXIT_OK


def _print_record(out: Output, args: argparse.Namespace, partition: int, record: Any) -> None:
    if args.output == "json":
        out.json(
            {
                "topic": args.topic,
                "partition": partition,
                "offset": record.offset,
                "timestamp": record.timestamp,
                "key": _text(record.key),
                "value": _text(record.value),
                "headers": [[k, _text(v)] for k, v in record.headers],
            },
            lines=True,
        )
        return
    fields = []
    if args.print_timestamp:
        fields.append(f"CreateTime:{record.timestamp}")
    if args.print_partition:
        fields.append(f"Partition:{partition}")
    if args.print_offset:
        fields.append(f"Offset:{record.offset}")
    if args.print_headers:
        fields.append(",".join(f"{k}:{_text(v)}" for k, v in record.headers) or "NO_HEADERS")
    if args.print_key:
        fields.append(_cell(_text(record.key)))
    fields.append(_cell(_text(record.value)))
    out.line(args.separator.join(fields))


# --- dump-log ------------------------------------------------------------------------------


def _segments(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(path.glob("*.log"))
    if path.is_file():
        if path.suffix != ".log":
            raise Failed(f"{path} is not a segment (<base offset>.log)")
        return [path]
    raise Failed(f"{path}: no such file or directory")


def _batch_fields(header: Any, pos: int, crc_ok: bool) -> dict[str, Any]:
    return {
        "base_offset": header.base_offset,
        "last_offset": header.last_offset,
        "count": header.records_count,
        "position": pos,
        "size": header.size,
        "partition_leader_epoch": header.partition_leader_epoch,
        "producer_id": header.producer_id,
        "producer_epoch": header.producer_epoch,
        "base_sequence": header.base_sequence,
        "last_sequence": header.last_sequence,
        "is_transactional": header.is_transactional,
        "is_control": header.is_control,
        "timestamp_type": "LogAppendTime" if header.timestamp_type else "CreateTime",
        "max_timestamp": header.max_timestamp,
        "compression": CompressionType(header.compression).name.lower()
        if header.compression <= CompressionType.ZSTD
        else str(header.compression),
        "crc": header.crc,
        "crc_valid": crc_ok,
    }


def _struct_fields(obj: Any) -> dict[str, Any]:
    """A coordinator record's fields, with consumer-protocol bytes decoded."""
    from protocol.consumer_offsets import MemberMetadata

    out: dict[str, Any] = {"type": type(obj).__name__}
    for f in dataclasses.fields(obj):
        value = getattr(obj, f.name)
        if isinstance(value, list) and value and isinstance(value[0], MemberMetadata):
            value = [_member_fields(m, getattr(obj, "protocol_type", None)) for m in value]
        out[f.name] = value
    return out


def _member_fields(m: Any, protocol_type: str | None) -> dict[str, Any]:
    from protocol.consumer_protocol import decode_assignment, decode_subscription
    from protocol.primitives import DecodeError

    fields = {f.name: getattr(m, f.name) for f in dataclasses.fields(m)}
    if protocol_type == "consumer":
        with contextlib.suppress(DecodeError):
            sub = decode_subscription(m.subscription)
            fields["subscription"] = {"topics": list(sub.topics)}
        with contextlib.suppress(DecodeError):
            a = decode_assignment(m.assignment)
            fields["assignment"] = {tp.topic: list(tp.partitions) for tp in a.assigned_partitions}
    return fields


def _record_fields(record: Any, offsets_topic: bool) -> dict[str, Any]:
    fields: dict[str, Any] = {
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key_size": -1 if record.key is None else len(record.key),
        "value_size": -1 if record.value is None else len(record.value),
        "headers": [[k, _text(v)] for k, v in record.headers],
    }
    if offsets_topic and record.key is not None:
        from protocol.consumer_offsets import UnknownRecordKey, decode_record
        from protocol.primitives import DecodeError

        try:
            key, value = decode_record(record.key, record.value)
        except DecodeError as e:
            fields["decode_error"] = str(e)
        else:
            fields["key"] = (
                {"type": "UnknownRecordKey", "version": key.version}
                if isinstance(key, UnknownRecordKey)
                else _struct_fields(key)
            )
            fields["value"] = None if value is None else _struct_fields(value)
            return fields
    fields["key"] = _text(record.key)
    fields["value"] = _text(record.value)
    return fields


def _format_fields(fields: Mapping[str, Any]) -> str:
    return " ".join(f"{k}={_format_value(v)}" for k, v in fields.items() if k != "type")


def _format_value(v: Any) -> str:
    if isinstance(v, bytes | bytearray | memoryview):
        return f"<{len(v)} bytes>"
    if isinstance(v, dict):
        return "{" + _format_fields(v) + "}"
    if isinstance(v, list):
        return "[" + ", ".join(_format_value(x) for x in v) + "]"
    if isinstance(v, str):
        return json.dumps(v)
    return _cell(v)


def _print_record_text(out: Output, r: dict[str, Any]) -> None:
    head = (
        f"| offset: {r['offset']} timestamp: {r['timestamp']} keySize: {r['key_size']} "
        f"valueSize: {r['value_size']}"
    )
    if r["headers"]:
        head += " headers: " + ",".join(f"{k}={v}" for k, v in r["headers"])
    if "decode_error" in r:
        out.line(f"{head} decode error: {r['decode_error']}")
        return
    key, value = r["key"], r["value"]
    if isinstance(key, dict):
        out.line(f"{head} key: {key['type']} {_format_fields(key)}")
        if value is None:
            out.line("|   payload: <tombstone>")
            return
        members = value.get("members")
        rest = {k: v for k, v in value.items() if k != "members"}
        out.line(f"|   payload: {value['type']} {_format_fields(rest)}")
        for m in members or ():
            out.line(f"|     member: {_format_fields(m)}")
    else:
        out.line(f"{head} key: {_cell(key)} payload: {_cell(value)}")


def cmd_dump_log(args: argparse.Namespace, out: Output) -> int:
    files = _segments(args.path)
    directory = args.path if args.path.is_dir() else args.path.parent
    offsets_topic = args.offsets_decoder or directory.name.startswith("__consumer_offsets-")
    as_json = args.output == "json"
    documents = []
    with out.progress("decoding", sum(f.stat().st_size for f in files)) as advance:
        for path in files:
            if not as_json:
                out.line(f"Dumping {path}")
            doc = _dump_segment(out, path, args, offsets_topic, advance)
            documents.append(doc)
            if not as_json:
                out.stdout.flush()
    if as_json:
        for doc in documents:
            del doc["summary"]
        out.json({"files": documents})
    else:
        out.table(
            ["SEGMENT", "BATCHES", "RECORDS", "BAD-CRC", "TRAILING-BYTES"],
            [doc["summary"] for doc in documents],
            title="Summary",
        )
    return EXIT_ERROR if any(doc["error"] for doc in documents) else EXIT_OK


def _dump_segment(
    out: Output,
    path: Path,
    args: argparse.Namespace,
    offsets_topic: bool,
    advance: Callable[[float], None],
) -> dict[str, Any]:
    """Decode one segment; prints it as text, or returns it as a JSON document."""
    from protocol.records import BATCH_HEADER_SIZE, decode_records, iter_batches, validate_batch

    as_json = args.output == "json"
    doc: dict[str, Any] = {"path": str(path), "batches": [], "trailing_bytes": None, "error": None}
    batches = records = invalid = 0
    data = _mapped(path)
    end = 0
    try:
        for pos, header in iter_batches(data):
            try:
                validate_batch(data, pos, check_crc=True)
                crc_ok = True
            except KafkaError:
                crc_ok = False
                invalid += 1
            batch = _batch_fields(header, pos, crc_ok)
            if not args.batches_only:
                try:
                    batch["records"] = [
                        _record_fields(r, offsets_topic)
                        for r in decode_records(data[pos : pos + header.size])
                    ]
                    records += len(batch["records"])
                except KafkaError as e:
                    batch["records_error"] = str(e)
            end = pos + header.size
            batches += 1
            advance(header.size)
            if as_json:
                doc["batches"].append(batch)
            else:
                _print_batch_text(out, batch)
    except KafkaError as e:
        doc["error"] = f"unreadable batch at position {end}: {e}"
    else:
        doc["trailing_bytes"] = len(data) - end
    advance(len(data) - end)
    if not as_json:
        if doc["error"]:
            out.line(f"error: {doc['error']}")
        elif doc["trailing_bytes"]:
            kind = (
                "a cut-off batch"
                if doc["trailing_bytes"] >= BATCH_HEADER_SIZE
                else "too short for a batch header"
            )
            out.line(
                f"{doc['trailing_bytes']} trailing byte(s) after the last whole batch "
                f"({kind}; recovery truncates them)"
            )
    doc["summary"] = [path.name, batches, records, invalid, doc["trailing_bytes"]]
    return doc


def _print_batch_text(out: Output, b: dict[str, Any]) -> None:
    out.line(
        f"baseOffset: {b['base_offset']} lastOffset: {b['last_offset']} count: {b['count']} "
        f"baseSequence: {b['base_sequence']} lastSequence: {b['last_sequence']} "
        f"producerId: {b['producer_id']} producerEpoch: {b['producer_epoch']} "
        f"partitionLeaderEpoch: {b['partition_leader_epoch']} "
        f"isTransactional: {_cell(b['is_transactional'])} isControl: {_cell(b['is_control'])} "
        f"position: {b['position']} {b['timestamp_type']}: {b['max_timestamp']} "
        f"size: {b['size']} compresscodec: {b['compression']} crc: {b['crc']} "
        f"isvalid: {_cell(b['crc_valid'])}"
    )
    if "records_error" in b:
        out.line(f"| records not decodable: {b['records_error']}")
    for r in b.get("records", ()):
        _print_record_text(out, r)


def _mapped(path: Path) -> Any:
    """The file's bytes, memory-mapped read-only (segments can be a GiB).

    The map is closed when the last view of it goes away, not explicitly: an explicit close
    fails while any slice is still referenced (from a traceback, say).
    """
    with open(path, "rb") as f:
        if os.fstat(f.fileno()).st_size == 0:
            return b""
        return memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))


if __name__ == "__main__":
    sys.exit(main())
