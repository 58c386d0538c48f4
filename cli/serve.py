"""`kmock serve [server.properties] [--log-dirs DIR] [--override key=value] ...`: its flags.

Every setting of `broker.config.SETTINGS` becomes a flag (`log.dirs` -> `--log-dirs`).
This module only builds the parser, so that it stays light for every other command; what
`serve` runs (and imports: trio, the broker) is `cli.commands.serve`, loaded by `run`.
"""

from __future__ import annotations

import argparse
from typing import Any

from broker.config import SETTINGS, Setting
from cli.output import Output, cell

__all__ = ["register", "run"]


def _setting_flag(name: str) -> str:
    return "--" + name.replace(".", "-")


def _setting_help(s: Setting) -> str:
    default = "unset" if s.default is None else cell(s.default)
    text = f"{s.name}: {s.doc} Default: {default}"
    if s.kafka_default is not None and s.kafka_default != s.default:
        text += f" (Kafka: {cell(s.kafka_default)})"
    return (text + ".").replace("%", "%%")


_METAVARS = {"int": "N", "long": "N", "boolean": "true|false", "list": "LIST"}
# Shorter flags for kmock's own settings, beside the ones named after them
# (`kmock serve --clock virtual`).
_SHORT_FLAGS = {
    "kmock.create.topics": "--create-topics",
    "kmock.durability": "--durability",
    "kmock.clock": "--clock",
    "kmock.schema.registry.port": "--schema-registry-port",
    "kmock.brokers": "--brokers",
}


def register(sub: Any) -> None:
    """Add `serve` to the `kmock` subparsers."""
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
        "--add-scram",
        action="append",
        default=[],
        metavar="'SCRAM-SHA-256=[name=alice,password=secret]'",
        help="add a SCRAM user before serving, as kafka-storage format --add-scram does "
        "(repeatable; kept as salted keys in <log.dirs>/scram-credentials.json)",
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
        flags = [_setting_flag(s.name)]
        if s.name in _SHORT_FLAGS:
            flags.insert(0, _SHORT_FLAGS[s.name])
        group.add_argument(
            *flags,
            dest=f"setting:{s.name}",
            default=None,
            metavar="|".join(s.choices)
            if s.choices and s.type == "string"
            else _METAVARS.get(s.type, "VALUE"),
            help=_setting_help(s),
        )
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    """Run the broker until SIGINT or SIGTERM; loads the broker only now."""
    from cli.commands import serve

    return serve.run(args, out)
