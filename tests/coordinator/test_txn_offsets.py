"""TxnOffsetCommit in the group coordinator: offsets pending until their transaction's
marker, invisible to OffsetFetch (UNSTABLE_OFFSET_COMMIT with require_stable), applied by
COMMIT, dropped by ABORT, checked against the group's members, failed with the write."""

from __future__ import annotations

from protocol.errors import ErrorCode
from protocol.messages.txn_offset_commit import (
    TxnOffsetCommitRequest,
    TxnOffsetCommitRequestPartition,
    TxnOffsetCommitRequestTopic,
    TxnOffsetCommitResponse,
)
from tests.coordinator.builders import (
    GROUP,
    WALL,
    coordinator,
    ctx,
    fetch,
    next_token,
    raised,
    reload,
    reply,
    stable_group,
)

E = ErrorCode
PID = 4000


def txn_commit(
    c,
    offsets: dict[tuple[str, int], int],
    *,
    producer_id: int = PID,
    member_id: str = "",
    generation_id: int = -1,
    version: int = 3,
    now_ms: int = 10,
    metadata: str = "",
):
    topics: dict[str, list[TxnOffsetCommitRequestPartition]] = {}
    for (topic, partition), offset in offsets.items():
        topics.setdefault(topic, []).append(
            TxnOffsetCommitRequestPartition(
                partition_index=partition, committed_offset=offset, committed_metadata=metadata
            )
        )
    request = TxnOffsetCommitRequest(
        transactional_id="tid",
        group_id=GROUP,
        producer_id=producer_id,
        producer_epoch=0,
        generation_id=generation_id,
        member_id=member_id,
        topics=[TxnOffsetCommitRequestTopic(name=t, partitions=p) for t, p in topics.items()],
    )
    token = next_token()
    return token, c.txn_commit_offsets(ctx(version), request, token, now_ms, WALL + now_ms)


def codes(response: TxnOffsetCommitResponse) -> dict[tuple[str, int], int]:
    return {
        (t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions
    }


def test_pending_offsets_are_invisible_until_the_commit_marker_applies_them() -> None:
    c = coordinator()
    token, outcome = txn_commit(c, {("t", 0): 5, ("t", 1): 9})
    assert codes(reply(outcome, token)) == {("t", 0): E.NONE, ("t", 1): E.NONE}
    assert [(r.key.topic, r.key.partition, r.value.offset) for r in outcome.records] == [
        ("t", 0, 5),
        ("t", 1, 9),
    ]
    c.on_appended(outcome, 11)
    assert fetch(c, {"t": [0, 1]}) == {("t", 0): (-1, "", E.NONE), ("t", 1): (-1, "", E.NONE)}
    assert fetch(c, {"t": [0, 2]}, require_stable=True) == {
        ("t", 0): (-1, "", E.UNSTABLE_OFFSET_COMMIT),
        ("t", 2): (-1, "", E.NONE),
    }
    c.complete_transaction(PID + 1, commit=True)  # another producer's marker: nothing
    assert fetch(c, {"t": [0]}, require_stable=True)[("t", 0)][2] == E.UNSTABLE_OFFSET_COMMIT
    c.complete_transaction(PID, commit=True)
    assert fetch(c, {"t": [0, 1]}, require_stable=True) == {
        ("t", 0): (5, "", E.NONE),
        ("t", 1): (9, "", E.NONE),
    }


def test_an_abort_marker_drops_the_pending_offsets_and_keeps_the_committed_ones() -> None:
    c = coordinator()
    _token, outcome = txn_commit(c, {("t", 0): 5})
    c.on_appended(outcome, 11)
    c.complete_transaction(PID, commit=True)
    _token, outcome = txn_commit(c, {("t", 0): 8}, now_ms=20)
    c.on_appended(outcome, 21)
    c.complete_transaction(PID, commit=False)
    assert fetch(c, {"t": [0]}, require_stable=True) == {("t", 0): (5, "", E.NONE)}


def test_a_failed_write_fails_every_partition_written_and_leaves_nothing_pending() -> None:
    c = coordinator()
    token, outcome = txn_commit(c, {("t", 0): 5})
    failed = c.on_append_failed(outcome, E.KAFKA_STORAGE_ERROR, 11)
    assert codes(reply(failed, token)) == {("t", 0): E.KAFKA_STORAGE_ERROR}
    assert fetch(c, {"t": [0]}, require_stable=True) == {("t", 0): (-1, "", E.NONE)}


def test_old_clients_without_a_member_commit_even_to_a_group_with_members() -> None:
    c, _ids = stable_group(2)
    token, outcome = txn_commit(c, {("t", 0): 3}, version=2)
    assert codes(reply(outcome, token)) == {("t", 0): E.NONE}


def test_members_are_checked_as_offset_commit_checks_them() -> None:
    c, ids = stable_group(2)
    token, outcome = txn_commit(c, {("t", 0): 3}, member_id=ids[1], generation_id=1)
    assert codes(reply(outcome, token)) == {("t", 0): E.NONE}
    assert raised(txn_commit, c, {("t", 0): 3}, member_id=ids[1], generation_id=7) == (
        E.ILLEGAL_GENERATION
    )
    assert raised(txn_commit, c, {("t", 0): 3}, member_id="who", generation_id=1) == (
        E.UNKNOWN_MEMBER_ID
    )
    fresh = coordinator()
    assert raised(txn_commit, fresh, {("t", 0): 3}, member_id="m", generation_id=1) == (
        E.ILLEGAL_GENERATION
    )


def test_metadata_too_large_is_refused_per_partition() -> None:
    c = coordinator(offset_metadata_max_bytes=4)
    token, outcome = txn_commit(c, {("t", 0): 3}, metadata="too long")
    assert codes(reply(outcome, token)) == {("t", 0): E.OFFSET_METADATA_TOO_LARGE}
    assert outcome.records == ()


def test_replayed_pending_offsets_keep_their_group_through_the_retention_check() -> None:
    c = reload([], now_ms=0)
    _token, outcome = txn_commit(c, {("t", 0): 5})
    (record,) = outcome.records
    again = reload([], now_ms=0)
    again.replay_txn_offset(PID, record.key_bytes(), record.value_bytes())
    expired = again.expire(10**12, WALL + 10**12)  # far past offsets.retention.minutes
    assert expired.dead_groups == ()
    assert fetch(again, {"t": [0]}, require_stable=True)[("t", 0)][2] == E.UNSTABLE_OFFSET_COMMIT
    again.complete_transaction(PID, commit=True)
    assert fetch(again, {"t": [0]}) == {("t", 0): (5, "", E.NONE)}
