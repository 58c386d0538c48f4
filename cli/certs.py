"""`kmock certs DIR [--host NAME] [--days N]`: throwaway TLS certificates for tests."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.output import Output

__all__ = ["register", "run"]


def register(sub: Any) -> None:
    """Add `certs` to the `kmock` subparsers."""
    p = sub.add_parser(
        "certs",
        help="write a throwaway CA, server and client certificates",
        description="Write ca.pem (the truststore), server.pem (ssl.keystore.location: the "
        "server's chain and key, for localhost and 127.0.0.1), client.crt and client.key "
        "(principal User:CN=client,O=kmock), and client.pem (both: a client's "
        "ssl.keystore.location) into DIR. For tests: the CA key is not kept.",
    )
    p.add_argument("dir", type=Path)
    p.add_argument(
        "--host", action="append", default=[], help="another name for the server certificate"
    )
    p.add_argument("--days", type=int, default=365, help="validity in days (default 365)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    from broker.security.certs import write_certs

    paths = write_certs(args.dir, tuple(args.host), args.days)
    for name, path in paths.items():
        out.line(f"{name}\t{path}")
    return 0
