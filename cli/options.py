"""The options of every command that talks to a broker (an argparse parent parser)."""

from __future__ import annotations

from cli.output import Parser

__all__ = ["DEFAULT_BOOTSTRAP", "client_options"]

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"


def client_options() -> Parser:
    """The options every command that talks to a broker takes (an argparse parent)."""
    common = Parser(add_help=False)
    common.add_argument(
        "--bootstrap-server",
        default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT",
        help=f"the broker to talk to (default {DEFAULT_BOOTSTRAP})",
    )
    common.add_argument(
        "--command-config",
        metavar="client.properties",
        help="a Kafka client properties file, as Kafka's tools take it: security.protocol, "
        "sasl.mechanism, sasl.jaas.config (PlainLoginModule or ScramLoginModule with "
        "username and password), ssl.truststore.location, ssl.keystore.location (PEM), "
        "ssl.endpoint.identification.algorithm",
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
