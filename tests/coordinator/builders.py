"""Builders for coordinator tests: requests with sensible defaults, and groups in known states.

In the spirit of Kafka's GroupMetadataManagerTestContext: each helper is one client action
against a `GroupCoordinator`, with time passed as int literals. Tokens are unique per test
session; `reply(outcome, token)` finds the answer to one request.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from coordinator.config import CoordinatorConfig
from coordinator.coordinator import GroupCoordinator
from coordinator.outcome import Outcome, RequestContext
from coordinator.records import CoordinatorRecord, group_metadata_record
from protocol.consumer_protocol import ConsumerProtocolSubscription, encode_subscription
from protocol.errors import ErrorCode, KafkaError
from protocol.messages.delete_groups import DeleteGroupsRequest
from protocol.messages.heartbeat import HeartbeatRequest
from protocol.messages.join_group import JoinGroupRequest, JoinGroupRequestProtocol
from protocol.messages.leave_group import LeaveGroupRequest, MemberIdentity
from protocol.messages.offset_commit import (
    OffsetCommitRequest,
    OffsetCommitRequestPartition,
    OffsetCommitRequestTopic,
)
from protocol.messages.offset_fetch import (
    OffsetFetchRequest,
    OffsetFetchRequestGroup,
    OffsetFetchRequestTopic,
    OffsetFetchRequestTopics,
)
from protocol.messages.sync_group import SyncGroupRequest, SyncGroupRequestAssignment

GROUP = "g"
# Wall-clock ms at monotonic 0: tests pass now_ms and wall_ms = WALL + now_ms.
WALL = 1_700_000_000_000
SESSION_MS = 10_000
REBALANCE_MS = 30_000
LATEST = {"join": 9, "sync": 5, "heartbeat": 4, "leave": 5, "commit": 9, "fetch": 9}

_tokens = itertools.count(1)


def next_token() -> int:
    return next(_tokens)


def subscription(*topics: str) -> bytes:
    """ConsumerProtocolSubscription v0 bytes, as a "consumer" member sends them."""
    return encode_subscription(ConsumerProtocolSubscription(topics=list(topics)), 0)


DEFAULT_PROTOCOLS: tuple[tuple[str, bytes], ...] = (("range", subscription("t")),)


def coordinator(**config: Any) -> GroupCoordinator:
    return GroupCoordinator(CoordinatorConfig(**config))


def ctx(version: int, client_id: str = "client", client_host: str = "/127.0.0.1") -> RequestContext:
    return RequestContext(api_version=version, client_id=client_id, client_host=client_host)


def reply(outcome: Outcome, token: int) -> Any:
    """The response to `token` in the outcome, or None if it is parked."""
    found = [r.response for r in outcome.replies if r.token == token]
    assert len(found) <= 1, f"token {token} answered {len(found)} times"
    return found[0] if found else None


def tokens(outcome: Outcome) -> list[int]:
    return [r.token for r in outcome.replies]


def raised(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> ErrorCode:
    """The code of the KafkaError `fn` raises (a request refused as a whole)."""
    with pytest.raises(KafkaError) as e:
        fn(*args, **kwargs)
    return e.value.code


def reload(
    records: Iterable[CoordinatorRecord], now_ms: int = 0, **config: Any
) -> GroupCoordinator:
    """A new coordinator that replayed `records` (as bytes, like the broker) and loaded."""
    c = coordinator(**config)
    for record in records:
        c.replay(record.key_bytes(), record.value_bytes())
    c.finish_load(now_ms)
    return c


def as_record(c: GroupCoordinator, group_id: str = GROUP) -> CoordinatorRecord:
    """The GroupMetadata record of a group as it stands (with its current assignments)."""
    group = c.group(group_id)
    assignment = {m.member_id: m.assignment for m in group.members.values()}
    return group_metadata_record(group, assignment, WALL)


def join(
    c: GroupCoordinator,
    now_ms: int,
    member_id: str = "",
    *,
    group_id: str = GROUP,
    instance_id: str | None = None,
    protocols: tuple[tuple[str, bytes], ...] = DEFAULT_PROTOCOLS,
    protocol_type: str = "consumer",
    session_timeout_ms: int = SESSION_MS,
    rebalance_timeout_ms: int = REBALANCE_MS,
    version: int = LATEST["join"],
    client_id: str = "client",
) -> tuple[int, Outcome]:
    token = next(_tokens)
    request = JoinGroupRequest(
        group_id=group_id,
        session_timeout_ms=session_timeout_ms,
        rebalance_timeout_ms=rebalance_timeout_ms,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=protocol_type,
        protocols=[JoinGroupRequestProtocol(name=n, metadata=m) for n, m in protocols],
    )
    return token, c.join(ctx(version, client_id), request, token, now_ms)


def new_member_id(c: GroupCoordinator, now_ms: int, **kw: Any) -> str:
    """JoinGroup v4+ without an id: the MEMBER_ID_REQUIRED answer's member id."""
    token, outcome = join(c, now_ms, **kw)
    response = reply(outcome, token)
    assert response.error_code == ErrorCode.MEMBER_ID_REQUIRED
    return str(response.member_id)


def sync(
    c: GroupCoordinator,
    now_ms: int,
    member_id: str,
    generation_id: int,
    assignments: dict[str, bytes] | None = None,
    *,
    group_id: str = GROUP,
    instance_id: str | None = None,
    protocol_type: str | None = None,
    protocol_name: str | None = None,
    version: int = LATEST["sync"],
) -> tuple[int, Outcome]:
    token = next(_tokens)
    request = SyncGroupRequest(
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=instance_id,
        protocol_type=protocol_type,
        protocol_name=protocol_name,
        assignments=[
            SyncGroupRequestAssignment(member_id=m, assignment=a)
            for m, a in (assignments or {}).items()
        ],
    )
    return token, c.sync(ctx(version), request, token, now_ms)


def heartbeat(
    c: GroupCoordinator,
    now_ms: int,
    member_id: str,
    generation_id: int,
    *,
    group_id: str = GROUP,
    instance_id: str | None = None,
    version: int = LATEST["heartbeat"],
) -> Any:
    """The HeartbeatResponse (heartbeats never park)."""
    token = next(_tokens)
    request = HeartbeatRequest(
        group_id=group_id,
        generation_id=generation_id,
        member_id=member_id,
        group_instance_id=instance_id,
    )
    outcome = c.heartbeat(ctx(version), request, token, now_ms)
    assert not outcome.records
    return reply(outcome, token)


def leave(
    c: GroupCoordinator,
    now_ms: int,
    *members: tuple[str, str | None],
    group_id: str = GROUP,
    version: int = LATEST["leave"],
) -> tuple[int, Outcome]:
    """Members as (member_id, group_instance_id); v0-2 send the first member id only."""
    token = next(_tokens)
    if version >= 3:
        request = LeaveGroupRequest(
            group_id=group_id,
            members=[MemberIdentity(member_id=m, group_instance_id=i) for m, i in members],
        )
    else:
        request = LeaveGroupRequest(group_id=group_id, member_id=members[0][0])
    return token, c.leave(ctx(version), request, token, now_ms)


def commit(
    c: GroupCoordinator,
    now_ms: int,
    offsets: dict[tuple[str, int], int],
    *,
    member_id: str = "",
    generation_id: int = -1,
    group_id: str = GROUP,
    instance_id: str | None = None,
    metadata: str | None = "",
    leader_epoch: int = -1,
    retention_time_ms: int = -1,
    commit_timestamp: int = -1,
    version: int = LATEST["commit"],
) -> tuple[int, Outcome]:
    token = next(_tokens)
    by_topic: dict[str, list[OffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        by_topic.setdefault(topic, []).append(
            OffsetCommitRequestPartition(
                partition_index=partition,
                committed_offset=offset,
                committed_leader_epoch=leader_epoch,
                commit_timestamp=commit_timestamp,
                committed_metadata=metadata,
            )
        )
    request = OffsetCommitRequest(
        group_id=group_id,
        generation_id_or_member_epoch=generation_id,
        member_id=member_id,
        group_instance_id=instance_id,
        retention_time_ms=retention_time_ms,
        topics=[OffsetCommitRequestTopic(name=t, partitions=p) for t, p in by_topic.items()],
    )
    return token, c.commit_offsets(ctx(version), request, token, now_ms, WALL + now_ms)


def commit_errors(outcome: Outcome, token: int) -> dict[tuple[str, int], ErrorCode]:
    response = reply(outcome, token)
    return {
        (t.name, p.partition_index): ErrorCode(p.error_code)
        for t in response.topics
        for p in t.partitions
    }


def fetch(
    c: GroupCoordinator,
    partitions: dict[str, list[int]] | None,
    *,
    group_id: str = GROUP,
    require_stable: bool = False,
    version: int = 7,
) -> dict[tuple[str, int], tuple[int, str, ErrorCode]]:
    """OffsetFetch v1-7 for one group: (topic, partition) -> (offset, metadata, error)."""
    topics = None
    if partitions is not None:
        topics = [
            OffsetFetchRequestTopic(name=t, partition_indexes=p) for t, p in partitions.items()
        ]
    request = OffsetFetchRequest(group_id=group_id, topics=topics, require_stable=require_stable)
    response = c.fetch_offsets(ctx(version), request, 0)
    assert response.error_code == ErrorCode.NONE
    return {
        (t.name, p.partition_index): (p.committed_offset, p.metadata, ErrorCode(p.error_code))
        for t in response.topics
        for p in t.partitions
    }


def fetch_groups(
    c: GroupCoordinator,
    groups: dict[str, dict[str, list[int]] | None],
    *,
    require_stable: bool = False,
) -> dict[str, dict[tuple[str, int], tuple[int, str, ErrorCode]]]:
    """OffsetFetch v8+: many groups in one request."""
    request = OffsetFetchRequest(
        groups=[
            OffsetFetchRequestGroup(
                group_id=g,
                topics=None
                if parts is None
                else [
                    OffsetFetchRequestTopics(name=t, partition_indexes=p) for t, p in parts.items()
                ],
            )
            for g, parts in groups.items()
        ],
        require_stable=require_stable,
    )
    response = c.fetch_offsets(ctx(8), request, 0)
    result = {}
    for g in response.groups:
        assert g.error_code == ErrorCode.NONE
        result[g.group_id] = {
            (t.name, p.partition_index): (p.committed_offset, p.metadata, ErrorCode(p.error_code))
            for t in g.topics
            for p in t.partitions
        }
    return result


def delete_groups(c: GroupCoordinator, now_ms: int, *group_ids: str) -> tuple[int, Outcome]:
    token = next(_tokens)
    request = DeleteGroupsRequest(groups_names=list(group_ids))
    return token, c.delete_groups(ctx(2), request, token, now_ms)


def joined_group(
    c: GroupCoordinator,
    members: int,
    *,
    now_ms: int = 0,
    group_id: str = GROUP,
    static: bool = False,
    **join_kw: Any,
) -> tuple[list[str], Outcome]:
    """Members join a new group and the join phase completes (CompletingRebalance).

    Static members are "instance-<i>"; every member's client id is "client-<i>". Returns
    the member ids (the leader first) and the outcome that answered their joins.
    """
    parked = []
    for i in range(members):
        kw = {"group_id": group_id, "client_id": f"client-{i}", **join_kw}
        if static:
            token, outcome = join(c, now_ms, instance_id=f"instance-{i}", **kw)
        else:
            token, outcome = join(c, now_ms, new_member_id(c, now_ms, **kw), **kw)
        assert reply(outcome, token) is None, "the join is parked until the join phase ends"
        parked.append(token)
    done = c.expire(now_ms, WALL + now_ms)
    return [reply(done, token).member_id for token in parked], done


def stable_group(
    members: int = 2,
    *,
    c: GroupCoordinator | None = None,
    now_ms: int = 0,
    group_id: str = GROUP,
    static: bool = False,
    **join_kw: Any,
) -> tuple[GroupCoordinator, list[str]]:
    """A group of `members` at generation 1, Stable, each member assigned b"a-<member id>".

    The leader (ids[0]) synced first; the GroupMetadata record is durable.
    """
    c = c or coordinator()
    ids, _ = joined_group(c, members, now_ms=now_ms, group_id=group_id, static=static, **join_kw)
    generation = c.group(group_id).generation_id
    assignment = {m: f"a-{m}".encode() for m in ids}
    _, outcome = sync(c, now_ms, ids[0], generation, assignment, group_id=group_id)
    c.on_appended(outcome, now_ms)
    for m in ids[1:]:
        sync(c, now_ms, m, generation, group_id=group_id)
    return c, ids
