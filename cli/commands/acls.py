"""What `kmock acls` runs: DescribeAcls, CreateAcls and DeleteAcls through kmock's client."""

from __future__ import annotations

import argparse
import re

from broker.security.acls import AclOperation, AclPermissionType, PatternType, ResourceType
from cli.commands.admin import connect
from cli.output import Failed, Output
from protocol.errors import ErrorCode
from protocol.messages.create_acls import AclCreation, CreateAclsRequest
from protocol.messages.delete_acls import DeleteAclsFilter, DeleteAclsRequest
from protocol.messages.describe_acls import DescribeAclsRequest

__all__ = ["ACTIONS"]


def _failure(api: str, code: int, message: str | None) -> str:
    """ "DescribeAcls: CLUSTER_AUTHORIZATION_FAILED: <the broker's message>"."""
    name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
    return f"{api}: {name}: {message}" if message else f"{api}: {name}"


def _op(name: str) -> AclOperation:
    return AclOperation[re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper()]


def _resources(args: argparse.Namespace, default: PatternType) -> list[tuple[int, str | None, int]]:
    pattern = PatternType[(args.resource_pattern_type or default.name).upper()]
    out: list[tuple[int, str | None, int]] = []
    if args.topic:
        out.append((ResourceType.TOPIC, args.topic, pattern))
    if args.group:
        out.append((ResourceType.GROUP, args.group, pattern))
    if args.transactional_id:
        out.append((ResourceType.TRANSACTIONAL_ID, args.transactional_id, pattern))
    if args.cluster:
        out.append((ResourceType.CLUSTER, "kafka-cluster", PatternType.LITERAL))
    return out


def _entries(args: argparse.Namespace) -> list[tuple[str, str, int, int]]:
    if not args.operation:
        raise Failed("give at least one --operation")
    principals = [(p, args.allow_host, AclPermissionType.ALLOW) for p in args.allow_principal]
    principals += [(p, args.deny_host, AclPermissionType.DENY) for p in args.deny_principal]
    if not principals:
        raise Failed("give --allow-principal or --deny-principal")
    return [(p, h, _op(o), perm) for p, h, perm in principals for o in args.operation]


def _rows(resources: list) -> list[list[str]]:
    return [
        [
            ResourceType(r.resource_type).name,
            r.resource_name,
            PatternType(r.pattern_type).name,
            a.principal,
            a.host,
            AclOperation(a.operation).name,
            AclPermissionType(a.permission_type).name,
        ]
        for r in resources
        for a in r.acls
    ]


COLUMNS = ["resource_type", "name", "pattern", "principal", "host", "operation", "permission"]


def cmd_list(args: argparse.Namespace, out: Output) -> int:
    resources = _resources(args, PatternType.ANY) or [(ResourceType.ANY, None, PatternType.ANY)]
    rows: list[list[str]] = []
    with connect(args) as client:
        for rtype, name, pattern in resources:
            response = client.send(
                DescribeAclsRequest(
                    resource_type_filter=rtype,
                    resource_name_filter=name,
                    pattern_type_filter=pattern,
                    principal_filter=args.principal,
                    operation=AclOperation.ANY,
                    permission_type=AclPermissionType.ANY,
                )
            )
            if response.error_code:
                raise Failed(_failure("DescribeAcls", response.error_code, response.error_message))
            rows += _rows(response.resources)
    if args.output == "json":
        out.json([dict(zip(COLUMNS, row, strict=True)) for row in rows])
    else:
        out.table(COLUMNS, rows)
    return 0


def cmd_add(args: argparse.Namespace, out: Output) -> int:
    resources = _resources(args, PatternType.LITERAL)
    if not resources:
        raise Failed("name a resource: --topic, --group, --transactional-id or --cluster")
    creations = [
        AclCreation(
            resource_type=t,
            resource_name=n,
            resource_pattern_type=p,
            principal=principal,
            host=host,
            operation=op,
            permission_type=perm,
        )
        for t, n, p in resources
        for principal, host, op, perm in _entries(args)
    ]
    with connect(args) as client:
        response = client.send(CreateAclsRequest(creations=creations))
    failed = [r for r in response.results if r.error_code]
    for r in failed:
        out.error(_failure("CreateAcls", r.error_code, r.error_message))
    if not failed:
        out.line(f"added {len(creations)} ACL(s)")
    return 1 if failed else 0


def cmd_remove(args: argparse.Namespace, out: Output) -> int:
    resources = _resources(args, PatternType.LITERAL)
    if not resources:
        raise Failed("name a resource: --topic, --group, --transactional-id or --cluster")
    entries = (
        _entries(args)
        if args.operation
        else [(None, None, AclOperation.ANY, AclPermissionType.ANY)]
    )
    filters = [
        DeleteAclsFilter(
            resource_type_filter=t,
            resource_name_filter=n,
            pattern_type_filter=p,
            principal_filter=principal,
            host_filter=host,
            operation=op,
            permission_type=perm,
        )
        for t, n, p in resources
        for principal, host, op, perm in entries
    ]
    with connect(args) as client:
        response = client.send(DeleteAclsRequest(filters=filters))
    removed = 0
    for r in response.filter_results:
        if r.error_code:
            raise Failed(_failure("DeleteAcls", r.error_code, r.error_message))
        removed += len(r.matching_acls)
    out.line(f"removed {removed} ACL(s)")
    return 0


ACTIONS = {"list": cmd_list, "add": cmd_add, "remove": cmd_remove}
