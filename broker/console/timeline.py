"""A group's history, read back from its own partition of __consumer_offsets
(GET /v1/groups/{id}/timeline).

Every generation the coordinator completed is in that log: a classic group's GroupMetadata
record carries the generation, protocol, leader, and each member with its client id, host,
timeouts and assignment (Kafka's GroupMetadataManager writes one when a rebalance completes,
when the group empties, and when a static member is replaced); a KIP-848 consumer group's
ConsumerGroupMetadata records carry its epochs, its ConsumerGroupMemberMetadata records its
members (a tombstone when one leaves), and its target-assignment records the assignment of
each epoch. Offset commits are OffsetCommit records with their commit timestamps. The log is
compacted, so history older than the last cleaning keeps only the latest record of each key
(the GroupMetadata of the last generation, the last commit of each partition).

Who joined and who left follows from the members of consecutive generations. Why one left
is not in the log; it comes from the request journal when the journal still holds that time
(`journal_since_ms`): a LeaveGroup (with its reason, from v5) or a ConsumerGroupHeartbeat
with member epoch -1/-2 is "left"; a member that sent neither was removed by the coordinator
when its session timed out or it did not rejoin within the rebalance timeout, and the answer
gives its last request in the journal. When the journal does not reach back, it says so.

The partition is read one slice (MAX_READ_BYTES) at a time, each read and decoded in a worker
thread, and at most MAX_SCAN_BYTES in all; `truncated` says when the log holds more.
"""

from __future__ import annotations

from typing import Any

import trio

from broker.console.groups import decoded_assignment
from broker.console.params import ConsoleError, check_params, int_param, ready_coordinator
from protocol.consumer_offsets import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    GroupMetadataKey,
    OffsetCommitKey,
    UnknownRecordKey,
    decode_record,
)
from protocol.primitives import DecodeError
from protocol.records import decode_records, iter_batches

__all__ = ["group_timeline"]

MAX_READ_BYTES = 1 << 20
MAX_SCAN_BYTES = 256 << 20
_GROUP_APIS = (
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "ConsumerGroupHeartbeat",
)
DEFAULT_COMMITS = 1000  # the latest commits answered unless ?commits= says otherwise


async def group_timeline(
    broker: Any, method: str, args: list[str], params: dict[str, str], body: bytes
) -> dict[str, Any]:
    check_params(params, {"commits"})
    coordinator = ready_coordinator(broker)
    group_id = args[0]
    max_commits = int_param(params, "commits", DEFAULT_COMMITS)
    topic = broker.topics.get("__consumer_offsets")
    records: list[tuple[int, int, Any, Any]] = []
    truncated = False
    log_start = None
    if topic is not None:
        plog = topic.partitions[coordinator.partition_for(group_id)].log
        records, truncated = await _scan(plog, group_id)
        log_start = plog.log_start_offset
    group_type = coordinator.group_type(group_id)
    if group_type is None and not records:
        raise ConsoleError(404, "group", f"group {group_id!r} does not exist", "GROUP_ID_NOT_FOUND")
    generations, commits = _history(broker, records)
    _explain(broker, group_id, generations)
    return {
        "group_id": group_id,
        "type": group_type or ("consumer" if _is_consumer(records) else "classic"),
        "exists": group_type is not None,
        "source": f"__consumer_offsets partition {coordinator.partition_for(group_id)}",
        "log_start_offset": log_start,
        "truncated": truncated,
        "journal_since_ms": _journal_since(broker),
        "generations": generations,
        "commits_total": len(commits),
        "commits": commits[-max_commits:] if max_commits else [],
    }


async def _scan(plog: Any, group_id: str) -> tuple[list[tuple[int, int, Any, Any]], bool]:
    """(log offset, timestamp, key, value) of every record of the group, oldest first, and
    whether the scan stopped at MAX_SCAN_BYTES."""
    out: list[tuple[int, int, Any, Any]] = []
    position, scanned = plog.log_start_offset, 0
    while position < plog.high_watermark:
        if scanned >= MAX_SCAN_BYTES:
            return out, True
        found = plog.read(position, MAX_READ_BYTES, max_offset=plog.high_watermark)
        if found.size == 0:
            break
        scanned += found.size
        more, after = await trio.to_thread.run_sync(_decode_slice, found, position, group_id)
        out += more
        if after <= position:
            break
        position = after
    return out, False


def _decode_slice(found: Any, position: int, group_id: str) -> tuple[list[Any], int]:
    data = found.read_bytes()
    out = []
    for pos, header in iter_batches(data):
        if not header.is_control:
            for r in decode_records(memoryview(data)[pos : pos + header.size]):
                if r.offset < position or r.key is None:
                    continue
                try:
                    key, value = decode_record(r.key, r.value)
                except DecodeError:
                    continue  # not ours to judge here; replay reports such records
                if isinstance(key, UnknownRecordKey):
                    continue
                owner = key.group if isinstance(key, OffsetCommitKey | GroupMetadataKey) else None
                if owner is None:
                    owner = getattr(key, "group_id", None)
                if owner == group_id:
                    out.append((r.offset, r.timestamp, key, value))
        position = max(position, header.next_offset)
    return out, position


def _is_consumer(records: list[tuple[int, int, Any, Any]]) -> bool:
    return any(isinstance(k, ConsumerGroupMetadataKey) for _, _, k, _ in records)


def _history(
    broker: Any, records: list[tuple[int, int, Any, Any]]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(generations, commits) from the group's records, in log order."""
    generations: list[dict[str, Any]] = []
    commits: list[dict[str, Any]] = []
    # KIP-848 state as the records build it: members, target assignments.
    members: dict[str, dict[str, Any]] = {}
    targets: dict[str, dict[str, list[int]]] = {}

    def topic_name(topic_id: Any) -> str:
        return broker.topic_name(topic_id) or str(topic_id)

    def current() -> int | None:
        return generations[-1]["generation"] if generations else None

    for offset, timestamp, key, value in records:
        if isinstance(key, OffsetCommitKey):
            commit = {
                "log_offset": offset,
                "time_ms": timestamp if value is None else value.commit_timestamp,
                "topic": key.topic,
                "partition": key.partition,
                "offset": None if value is None else value.offset,
                "generation": current(),
            }
            if value is None:
                commit["deleted"] = True
            commits.append(commit)
        elif isinstance(key, GroupMetadataKey):
            if value is None:
                generations.append(_generation(offset, timestamp, None, "group deleted"))
                continue
            entry = _generation(offset, timestamp, value.generation, None)
            entry.update(
                protocol_type=value.protocol_type,
                protocol=value.protocol,
                leader=value.leader,
                members=[
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "session_timeout_ms": m.session_timeout,
                        "rebalance_timeout_ms": m.rebalance_timeout,
                        "assignment": decoded_assignment(m.assignment)
                        if value.protocol_type == "consumer"
                        else {},
                    }
                    for m in value.members
                ],
            )
            if generations and generations[-1]["generation"] == value.generation:
                entry["joined"] = generations[-1]["joined"]
                generations[-1] = entry  # the same generation written again (static member)
            else:
                generations.append(entry)
        elif isinstance(key, ConsumerGroupMemberMetadataKey):
            if value is None:
                members.pop(key.member_id, None)
            else:
                members[key.member_id] = {
                    "member_id": key.member_id,
                    "group_instance_id": value.instance_id,
                    "client_id": value.client_id,
                    "client_host": value.client_host,
                    "rebalance_timeout_ms": value.rebalance_timeout_ms,
                    "subscription": list(value.subscribed_topic_names),
                    "assignment": {},
                }
        elif isinstance(key, ConsumerGroupMetadataKey):
            if value is None:
                generations.append(_generation(offset, timestamp, None, "group deleted"))
                continue
            entry = _generation(offset, timestamp, value.epoch, None)
            entry.update(protocol_type="consumer", protocol=None, leader=None, members=[])
            entry["members"] = [dict(m) for m in members.values()]
            generations.append(entry)
        elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
            targets[key.member_id] = (
                {}
                if value is None
                else {topic_name(t.topic_id): sorted(t.partitions) for t in value.topic_partitions}
            )
        elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey) and value is not None:
            # The assignment of an epoch: the members of that epoch end up with it.
            for entry in reversed(generations):
                if entry["generation"] == value.assignment_epoch:
                    for m in entry["members"]:
                        m["assignment"] = targets.get(m["member_id"], {})
                    break
        elif isinstance(key, ConsumerGroupCurrentMemberAssignmentKey):
            pass  # each member's reconciliation progress: the target assignment says more
    _moves(generations)
    return generations, commits


def _generation(
    offset: int, timestamp: int, generation: int | None, event: str | None
) -> dict[str, Any]:
    return {
        "generation": generation,
        "log_offset": offset,
        "time_ms": timestamp,
        "event": event,
        "protocol_type": None,
        "protocol": None,
        "leader": None,
        "members": [],
        "joined": [],
        "left": [],
    }


def _moves(generations: list[dict[str, Any]]) -> None:
    """Fill each generation's `joined` (member ids new in it) and `left` (members of the one
    before that are not in it)."""
    previous: dict[str, dict[str, Any]] = {}
    for entry in generations:
        now = {m["member_id"]: m for m in entry["members"]}
        entry["joined"] = [m for m in now if m not in previous]
        entry["left"] = [
            {
                "member_id": m,
                "client_id": previous[m].get("client_id"),
                "group_instance_id": previous[m].get("group_instance_id"),
            }
            for m in previous
            if m not in now
        ]
        previous = now


def _journal_since(broker: Any) -> int | None:
    """The time of the oldest request the journal still holds (None: off or empty)."""
    journal = broker.journal
    if journal is None:
        return None
    first = journal.entries(limit=1)
    return first[0]["time_ms"] if first else None


def _explain(broker: Any, group_id: str, generations: list[dict[str, Any]]) -> None:
    """Give each member that left its reason, from the journal where it reaches back."""
    journal = broker.journal
    entries: list[dict[str, Any]] = []
    if journal is not None:
        # Only the group's own APIs: the ring's Fetch and Metadata requests are most of it,
        # and summarising every entry would cost the event loop for nothing.
        for api in _GROUP_APIS:
            entries += journal.entries(api=api, group_id=group_id)
    since = _journal_since(broker)
    before: int | None = None  # when the previous generation was written
    for entry in generations:
        for gone in entry["left"]:
            gone.update(_why(entries, gone["member_id"], before, entry["time_ms"], since))
        before = entry["time_ms"]


def _why(
    entries: list[dict[str, Any]], member_id: str, after: int | None, until: int, since: int | None
) -> dict[str, Any]:
    mine = [
        e
        for e in entries
        if _names_member(e["request"], member_id) and (after is None or e["time_ms"] >= after - 1)
    ]
    for e in sorted(mine, key=lambda e: e["seq"]):
        req = e["request"]
        if e["api"] == "LeaveGroup":
            reasons = [
                m.get("reason") for m in req.get("members", ()) if m.get("member_id") == member_id
            ]
            reason = next((r for r in reasons if r), None)
            return {
                "how": "left",
                "why": "LeaveGroup" + (f": {reason}" if reason else ""),
                "seq": e["seq"],
                "time_ms": e["time_ms"],
            }
        if e["api"] == "ConsumerGroupHeartbeat" and req.get("member_epoch") in (-1, -2):
            return {
                "how": "left",
                "why": f"ConsumerGroupHeartbeat with member_epoch {req['member_epoch']} (leave)",
                "seq": e["seq"],
                "time_ms": e["time_ms"],
            }
    if since is None or (after is not None and since > after):
        return {
            "how": "unknown",
            "why": "the request journal does not reach back to this generation "
            "(kmock.journal.size): the log shows only that the member was not in the next one",
        }
    last = max(mine, key=lambda e: e["seq"]) if mine else None
    why = (
        "removed by the coordinator without a LeaveGroup: its session timed out "
        "(no heartbeat within session.timeout.ms) or it did not rejoin within the "
        "rebalance timeout"
    )
    if last is not None:
        why += f"; its last request was {last['api']} (seq {last['seq']})"
    return {
        "how": "timed out",
        "why": why,
        "last_seen_ms": None if last is None else last["time_ms"],
    }


def _names_member(request: dict[str, Any], member_id: str) -> bool:
    if request.get("member_id") == member_id:
        return True
    return any(m.get("member_id") == member_id for m in request.get("members", ()))
