"""What the commands that talk to a broker share: the connection, and the committed-offset
rows that `groups describe` and `offsets show` both print.

They talk to a live broker (`--bootstrap-server`, `cli.options`; secured as
`--command-config client.properties` says) through `client`,
kmock's own small Kafka client, and work against any Kafka broker that supports
the same API versions. Output is rich tables for people and `--output json` for scripts
(one JSON document; `consume` writes one JSON object per record and line).
"""

from __future__ import annotations

import argparse
import contextlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from cli.output import Failed, Output, UsageError
from client import LATEST, ClientSecurity, ConnectionFailed, KafkaClient, read_properties
from client.kafka import Unreachable
from protocol.consumer_protocol import decode_assignment, decode_subscription
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.consumer_group_describe import ConsumerGroupDescribeRequest
from protocol.messages.describe_groups import DescribedGroup
from protocol.primitives import DecodeError

__all__ = [
    "connect",
    "describe_group",
    "offset_rows",
    "print_offset_rows",
]


def client_security(path: str | None) -> ClientSecurity:
    """The security settings of `--command-config` (plain text without it).

    Raises:
      UsageError: the file cannot be read or a setting is wrong; the message names the
        file and the key, never a password.
    """
    if not path:
        return ClientSecurity()
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        why = e.strerror if isinstance(e, OSError) else "not UTF-8 text"
        raise UsageError(f"--command-config: cannot read {path}: {why}") from None
    try:
        return ClientSecurity.from_properties(read_properties(text), f"--command-config {path}")
    except ValueError as e:
        raise UsageError(str(e)) from None


@contextlib.contextmanager
def connect(args: argparse.Namespace) -> Iterator[KafkaClient]:
    """A connected client, authenticated as `--command-config` says; a broker that cannot
    be reached or goes away raises `Failed`, refused credentials a KafkaError
    (SASL_AUTHENTICATION_FAILED with the broker's message)."""
    client = KafkaClient(
        args.bootstrap_server,
        timeout_s=args.request_timeout_ms / 1000,
        security=client_security(getattr(args, "command_config", None)),
    )
    try:
        try:
            client.connect()
        except ValueError as e:  # a truststore or keystore that cannot be read (names it)
            raise UsageError(f"--command-config: {e}") from None
        yield client
    except ConnectionFailed as e:
        hint = ""
        if client.security.security_protocol == "PLAINTEXT" and not isinstance(e, Unreachable):
            hint = " (if the listener uses TLS or SASL, give --command-config client.properties)"
        raise Failed(f"{e}{hint}") from e
    finally:
        client.close()


def _log_end_offsets(
    client: KafkaClient, keys: Sequence[tuple[str, int]]
) -> dict[tuple[str, int], int]:
    """Log end offsets, leaving out partitions that no longer exist (a deleted topic)."""
    return client.list_offsets(keys, LATEST, raise_errors=False)


def _decode_consumer(
    member: Any, protocol_type: str
) -> tuple[list[str] | None, dict[str, list[int]] | None]:
    """(subscribed topics, assignment) of a member of a "consumer" group, else (None, None)."""
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


def _described_consumer_group(
    client: KafkaClient, group: Any
) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    members = []
    owners: dict[tuple[str, int], Any] = {}
    for m in group.members:
        assignment: dict[str, list[int]] = {}
        for t in m.assignment.topic_partitions:
            assignment[t.topic_name] = sorted(t.partitions)
            for p in t.partitions:
                owners[(t.topic_name, p)] = m
        members.append(
            {
                "member_id": m.member_id,
                "group_instance_id": m.instance_id,
                "client_id": m.client_id,
                "host": m.client_host,
                "member_epoch": m.member_epoch,
                "subscription": list(m.subscribed_topic_names),
                "assignment": assignment,
            }
        )
    described = DescribedGroup(
        error_code=group.error_code,
        group_id=group.group_id,
        group_state=group.group_state,
        protocol_type="consumer",
        protocol_data=group.assignor_name,
        members=[],
        authorized_operations=group.authorized_operations,
    )
    return described, members, offset_rows(client, group.group_id, owners)


def offset_rows(
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


def print_offset_rows(out: Output, rows: list[dict[str, Any]], title: str | None) -> None:
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


def describe_group(
    client: KafkaClient, group_id: str
) -> tuple[Any, list[dict[str, Any]], list[dict[str, Any]]]:
    """(DescribedGroup, members, offset rows) of a group that exists.

    DescribeGroups describes classic groups only (a consumer group is "Dead" to it, as in
    Kafka); a consumer group (KIP-848) is described by ConsumerGroupDescribe instead, and
    comes back as a DescribedGroup of protocol type "consumer" whose protocol is the
    server-side assignor.
    """
    group = client.describe_group(group_id)
    if group.group_state == "Dead" and ConsumerGroupDescribeRequest.API_KEY in client.api_versions:
        response = client.send(
            ConsumerGroupDescribeRequest(group_ids=[group_id], include_authorized_operations=False)
        )
        consumer_group = response.groups[0]
        if consumer_group.error_code == ErrorCode.NONE:
            return _described_consumer_group(client, consumer_group)
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
    rows = offset_rows(client, group_id, owners)
    if group.group_state == "Dead" and not members and not rows:
        raise _missing_group(group_id)
    return group, members, rows
