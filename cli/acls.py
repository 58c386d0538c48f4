"""`kmock acls list|add|remove`: the broker's ACLs (DescribeAcls, CreateAcls, DeleteAcls),
with kafka-acls' options."""

from __future__ import annotations

import argparse
from typing import Any

from cli.options import Parser, client_options
from cli.output import Output

__all__ = ["register", "run"]

OPERATIONS = (
    "All", "Read", "Write", "Create", "Delete", "Alter", "Describe", "ClusterAction",
    "DescribeConfigs", "AlterConfigs", "IdempotentWrite", "CreateTokens", "DescribeTokens",
    "TwoPhaseCommit",
)  # fmt: skip


def _resource_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--topic", help="a topic (or prefix with --resource-pattern-type prefixed)")
    p.add_argument("--group", help="a consumer group")
    p.add_argument("--transactional-id", help="a transactional id")
    p.add_argument("--cluster", action="store_true", help="the cluster resource")
    p.add_argument(
        "--resource-pattern-type",
        choices=("literal", "prefixed", "any", "match"),
        default=None,
        help="literal (default for add) or prefixed; list/remove also take any and match",
    )


def register(sub: Any) -> None:
    """Add `acls` to the `kmock` subparsers."""
    common = client_options()
    acls = sub.add_parser(
        "acls",
        help="list, add and remove ACLs",
        description="The ACLs of a broker with an authorizer (authorizer.class.name), as "
        "kafka-acls manages them. The request's principal must be allowed to ALTER (add, "
        "remove) or DESCRIBE (list) the cluster: authenticate as a super user (super.users) "
        "or a granted one with --command-config client.properties (security.protocol, "
        "sasl.mechanism, sasl.jaas.config, ssl.*); without it kmock's client is "
        "User:ANONYMOUS on a PLAINTEXT listener.",
    )
    asub = acls.add_subparsers(dest="action", metavar="ACTION", required=True, parser_class=Parser)
    for action, text in (
        ("list", "list the ACLs (all, or those of a resource or principal)"),
        ("add", "add ACLs: each --operation for each --allow-principal/--deny-principal"),
        ("remove", "remove the ACLs matching the options"),
    ):
        p = asub.add_parser(action, parents=[common], help=text)
        _resource_options(p)
        if action == "list":
            p.add_argument("--principal", help="only this principal's ACLs")
        else:
            p.add_argument("--allow-principal", action="append", default=[], metavar="PRINCIPAL")
            p.add_argument("--deny-principal", action="append", default=[], metavar="PRINCIPAL")
            p.add_argument("--operation", action="append", default=[], choices=OPERATIONS)
            p.add_argument("--allow-host", default="*")
            p.add_argument("--deny-host", default="*")
        p.set_defaults(func=run)


def run(args: argparse.Namespace, out: Output) -> int:
    from cli.commands import acls

    return acls.ACTIONS[args.action](args, out)
