"""Builders for the pipeline tests: segment files and __consumer_offsets records, in kmock's layout.

Batches come from protocol.records.build_batch and records from protocol.consumer_offsets'
encoders, so the pipeline is tested against the project's own writers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from protocol.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    encode_key,
    encode_value,
)
from protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
    TopicPartition,
    encode_assignment,
    encode_subscription,
)
from protocol.records import ControlRecordType, build_batch, build_control_batch

T0 = 1_700_000_000_000  # a fixed wall clock (ms) for record timestamps


def batch(
    base_offset: int,
    items: Sequence[tuple[bytes | None, bytes | None]],
    *,
    timestamp: int = T0,
    **kwargs: object,
) -> bytes:
    """A v2 batch of (key, value) records, timestamps timestamp + i ms."""
    records = [(k, v, (), timestamp + i) for i, (k, v) in enumerate(items)]
    return build_batch(records, base_offset=base_offset, **kwargs)  # type: ignore[arg-type]


def values(base_offset: int, count: int, **kwargs: object) -> bytes:
    """A batch of `count` records keyed k<offset> with values v<offset>."""
    return batch(
        base_offset,
        [(b"k%d" % o, b"v%d" % o) for o in range(base_offset, base_offset + count)],
        **kwargs,
    )


def write_segment(
    root: Path, topic: str, partition: int, base_offset: int, batches: Sequence[bytes]
) -> Path:
    """Write batches back to back as <root>/<topic>-<partition>/<20-digit base>.log."""
    directory = root / f"{topic}-{partition}"
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{base_offset:020d}.log"
    path.write_bytes(b"".join(batches))
    return path


def commit(
    group: str,
    topic: str,
    partition: int,
    offset: int,
    *,
    commit_timestamp: int = T0,
    metadata: str = "",
    leader_epoch: int = -1,
    key_version: int = 1,
    value_version: int = 3,
) -> tuple[bytes, bytes]:
    """An OffsetCommit record's (key, value)."""
    key = encode_key(OffsetCommitKey(group=group, topic=topic, partition=partition))
    if key_version == 0:
        key = b"\x00\x00" + key[2:]
    value = encode_value(
        OffsetCommitValue(
            offset=offset,
            leader_epoch=leader_epoch,
            metadata=metadata,
            commit_timestamp=commit_timestamp,
        ),
        value_version,
    )
    return key, value


def offset_tombstone(group: str, topic: str, partition: int) -> tuple[bytes, None]:
    return encode_key(OffsetCommitKey(group=group, topic=topic, partition=partition)), None


def group_metadata(
    group: str,
    generation: int,
    members: Sequence[tuple[str, Sequence[str], dict[str, list[int]]]],
    *,
    protocol_type: str = "consumer",
    protocol: str | None = "range",
    state_timestamp: int = T0,
    value_version: int = 3,
) -> tuple[bytes, bytes]:
    """A GroupMetadata record's (key, value); members are (member_id, topics, assignment).

    Each member's client id is its member id up to the first '-', its host /127.0.0.1.
    """
    metas = [
        MemberMetadata(
            member_id=member_id,
            client_id=member_id.split("-")[0],
            client_host="/127.0.0.1",
            rebalance_timeout=300_000,
            session_timeout=10_000,
            subscription=encode_subscription(
                ConsumerProtocolSubscription(topics=list(topics), owned_partitions=[]), 1
            ),
            assignment=encode_assignment(
                ConsumerProtocolAssignment(
                    assigned_partitions=[
                        TopicPartition(topic=t, partitions=p) for t, p in assignment.items()
                    ]
                ),
                1,
            ),
        )
        for member_id, topics, assignment in members
    ]
    value = GroupMetadataValue(
        protocol_type=protocol_type,
        generation=generation,
        protocol=protocol if members else None,
        leader=members[0][0] if members else None,
        current_state_timestamp=state_timestamp,
        members=metas,
    )
    return encode_key(GroupMetadataKey(group=group)), encode_value(value, value_version)


def group_tombstone(group: str) -> tuple[bytes, None]:
    return encode_key(GroupMetadataKey(group=group)), None


def marker(kind: ControlRecordType, producer_id: int, offset: int) -> bytes:
    return build_control_batch(
        kind,
        producer_id=producer_id,
        producer_epoch=0,
        coordinator_epoch=0,
        timestamp=T0,
        base_offset=offset,
    )


def txn(offset: int, producer_id: int, record: tuple[bytes, bytes]) -> bytes:
    return batch(
        offset,
        [record],
        producer_id=producer_id,
        producer_epoch=0,
        base_sequence=0,
        is_transactional=True,
    )


def group_log(root: Path) -> Path:
    """orders-0 ends at 80 (two segments), orders-1 at 20, audit-0 at 5.

    __consumer_offsets-0 holds group g1's life: generation 1 with c1, generation 2 when c2
    joins, generation 3 when c1 leaves, with commits between; an audit commit later
    deleted. __consumer_offsets-1 holds g2's commits (one for a topic not on disk, one
    transaction aborted, one committed, one never finished) and g3, created then deleted.
    """
    write_segment(root, "orders", 0, 0, [values(0, 50)])
    write_segment(root, "orders", 0, 50, [values(50, 30)])
    write_segment(root, "orders", 1, 0, [values(0, 20)])
    write_segment(root, "audit", 0, 0, [values(0, 5)])
    g1 = [
        group_metadata("g1", 1, [("c1-a", ["orders"], {"orders": [0, 1]})], state_timestamp=T0),
        commit("g1", "orders", 0, 10),
        commit("g1", "orders", 1, 5),
        group_metadata(
            "g1",
            2,
            [("c1-a", ["orders"], {"orders": [0]}), ("c2-b", ["orders"], {"orders": [1]})],
            state_timestamp=T0 + 1000,
        ),
        commit("g1", "orders", 0, 40),
        commit("g1", "orders", 1, 20, metadata="last"),
        commit("g1", "audit", 0, 3),
        offset_tombstone("g1", "audit", 0),
        group_metadata(
            "g1", 3, [("c2-b", ["orders"], {"orders": [0, 1]})], state_timestamp=T0 + 2000
        ),
    ]
    write_segment(root, "__consumer_offsets", 0, 0, [batch(0, g1[:3]), batch(3, g1[3:])])
    write_segment(
        root,
        "__consumer_offsets",
        0,
        9,
        [batch(9, [commit("g1", "orders", 0, 60, commit_timestamp=T0 + 5)])],
    )
    write_segment(
        root,
        "__consumer_offsets",
        1,
        0,
        [
            batch(0, [commit("g2", "orders", 0, 80), commit("g2", "ghost", 0, 7)]),
            batch(
                2,
                [
                    group_metadata("g3", 1, [("c9-z", ["audit"], {"audit": [0]})]),
                    group_tombstone("g3"),
                ],
            ),
            txn(4, 77, commit("g2", "orders", 1, 15)),
            marker(ControlRecordType.ABORT, 77, 5),
            txn(6, 78, commit("g2", "orders", 1, 12)),
            marker(ControlRecordType.COMMIT, 78, 7),
            txn(8, 79, commit("g2", "audit", 0, 1)),
        ],
    )
    return root
