"""What `kmock groups` does; its parser is `cli.groups`."""

from __future__ import annotations

import argparse

from cli.commands.admin import connect, describe_group, print_offset_rows
from cli.output import EXIT_OK, Output

__all__ = ["ACTIONS"]


def cmd_groups_list(args: argparse.Namespace, out: Output) -> int:
    with connect(args) as client:
        groups = sorted(client.list_groups(), key=lambda g: g.group_id)
    if args.output == "json":
        out.json(
            [
                {
                    "group_id": g.group_id,
                    "type": g.group_type or None,
                    "protocol_type": g.protocol_type,
                    "state": g.group_state or None,
                }
                for g in groups
            ]
        )
    else:
        out.table(
            ["GROUP", "TYPE", "PROTOCOL-TYPE", "STATE"],
            [
                [g.group_id, g.group_type or None, g.protocol_type, g.group_state or None]
                for g in groups
            ],
        )
    return EXIT_OK


def cmd_groups_describe(args: argparse.Namespace, out: Output) -> int:
    with connect(args) as client:
        group, members, rows = describe_group(client, args.group)
        listed = {g.group_id: g.group_type for g in client.list_groups()}
    group_type = listed.get(args.group) or None
    if args.output == "json":
        out.json(
            {
                "group_id": group.group_id,
                "type": group_type,
                "state": group.group_state,
                "protocol_type": group.protocol_type,
                "protocol": group.protocol_data,
                "members": members,
                "offsets": rows,
            }
        )
        return EXIT_OK
    out.line(
        f"Group: {group.group_id}  Type: {group_type or '-'}  State: {group.group_state}  "
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
    print_offset_rows(out, rows, title="Offsets")
    return EXIT_OK


def _format_assignment(assignment: dict[str, list[int]] | None) -> str | None:
    if assignment is None:
        return None
    return (
        " ".join(f"{t}:{','.join(map(str, ps))}" for t, ps in sorted(assignment.items()))
        or "(none)"
    )


ACTIONS = {
    "list": cmd_groups_list,
    "describe": cmd_groups_describe,
}
