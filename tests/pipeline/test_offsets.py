"""__consumer_offsets records into typed rows, without Spark."""

from __future__ import annotations

from pipeline import offsets
from protocol.consumer_offsets import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    encode_key,
    encode_value,
)
from protocol.records import ControlRecordType
from tests.pipeline.logdata import T0, commit, group_metadata, group_tombstone, offset_tombstone


def _row(key: bytes | None, value: bytes | None, **kw: object) -> dict:
    return offsets.decode_row(7, 42, T0, key, value, **kw)  # type: ignore[arg-type]


def test_offset_commit_becomes_a_typed_row() -> None:
    key, value = commit(
        "g1", "orders", 3, 1234, metadata="m", leader_epoch=5, commit_timestamp=T0 + 1
    )
    row = _row(key, value)
    assert row["record_type"] == "offset_commit"
    assert (row["partition"], row["offset"], row["timestamp"]) == (7, 42, T0 * 1000)
    assert (row["group"], row["tombstone"], row["key"]) == ("g1", False, key)
    assert (row["key_version"], row["value_version"]) == (1, 3)
    assert row["offset_commit"] == {
        "topic": "orders",
        "partition": 3,
        "offset": 1234,
        "leader_epoch": 5,
        "metadata": "m",
        "commit_timestamp": (T0 + 1) * 1000,
        "expire_timestamp": None,
    }
    assert row["group_metadata"] is None
    assert row["error"] is None


def test_offset_commit_value_v1_keeps_its_expire_timestamp() -> None:
    key, _ = commit("g", "t", 0, 1)
    from protocol.consumer_offsets import OffsetCommitValue

    value = encode_value(
        OffsetCommitValue(offset=9, metadata="", commit_timestamp=T0, expire_timestamp=T0 + 60_000),
        1,
    )
    row = _row(key, value)
    assert row["offset_commit"]["expire_timestamp"] == (T0 + 60_000) * 1000
    assert row["offset_commit"]["leader_epoch"] == -1


def test_offset_tombstone_keeps_the_key_and_nulls_the_value() -> None:
    row = _row(*offset_tombstone("g1", "orders", 3))
    assert (row["record_type"], row["tombstone"], row["value_version"]) == (
        "offset_commit",
        True,
        None,
    )
    assert row["offset_commit"] == {"topic": "orders", "partition": 3}


def test_group_metadata_decodes_consumer_subscriptions_and_assignments() -> None:
    key, value = group_metadata(
        "g1",
        4,
        [
            ("c1-aaa", ["orders", "audit"], {"orders": [0, 1]}),
            ("c2-bbb", ["orders"], {"orders": [2], "audit": [0]}),
        ],
        state_timestamp=T0 + 7,
    )
    row = _row(key, value)
    assert (row["record_type"], row["group"], row["error"]) == ("group_metadata", "g1", None)
    gm = row["group_metadata"]
    assert (gm["protocol_type"], gm["generation"], gm["protocol"], gm["leader"]) == (
        "consumer",
        4,
        "range",
        "c1-aaa",
    )
    assert gm["current_state_timestamp"] == (T0 + 7) * 1000
    first, second = gm["members"]
    assert (first["member_id"], first["client_id"], first["client_host"]) == (
        "c1-aaa",
        "c1",
        "/127.0.0.1",
    )
    assert (first["session_timeout"], first["rebalance_timeout"]) == (10_000, 300_000)
    assert first["consumer_subscription"]["topics"] == ["orders", "audit"]
    assert first["consumer_subscription"]["version"] == 1
    assert first["consumer_assignment"]["assigned_partitions"] == [
        {"topic": "orders", "partitions": [0, 1]}
    ]
    assert second["consumer_assignment"]["assigned_partitions"] == [
        {"topic": "orders", "partitions": [2]},
        {"topic": "audit", "partitions": [0]},
    ]
    assert isinstance(first["subscription"], bytes)


def test_group_metadata_of_another_protocol_type_keeps_the_bytes_undecoded() -> None:
    key, value = group_metadata(
        "connect", 1, [("w1-x", ["t"], {"t": [0]})], protocol_type="connect"
    )
    member = _row(key, value)["group_metadata"]["members"][0]
    assert member["consumer_subscription"] is None
    assert member["consumer_assignment"] is None
    assert member["assignment"]


def test_member_bytes_that_do_not_decode_are_reported_and_the_row_kept() -> None:
    member = MemberMetadata(
        member_id="m1",
        client_id="c",
        client_host="h",
        rebalance_timeout=1,
        session_timeout=2,
        subscription=b"\x00\x01\xff",
        assignment=b"",
    )
    value = encode_value(
        GroupMetadataValue(
            protocol_type="consumer",
            generation=1,
            protocol="range",
            leader="m1",
            current_state_timestamp=T0,
            members=[member],
        ),
        3,
    )
    row = _row(encode_key(GroupMetadataKey(group="g")), value)
    assert row["record_type"] == "group_metadata"
    assert row["error"].startswith("member m1: subscription:")
    assert row["group_metadata"]["members"][0]["consumer_assignment"] is None


def test_group_tombstone() -> None:
    row = _row(*group_tombstone("g1"))
    assert (row["record_type"], row["group"], row["tombstone"], row["group_metadata"]) == (
        "group_metadata",
        "g1",
        True,
        None,
    )


def test_unknown_key_version_and_garbage() -> None:
    assert _row(b"\x00\x0babc", b"\x00\x00")["record_type"] == "unknown"
    bad = _row(b"\x00\x01\x00", b"\x00\x03")
    assert bad["record_type"] == "corrupt"
    assert bad["error"]
    assert _row(None, b"x")["record_type"] == "corrupt"


def test_control_record_row() -> None:
    key = b"\x00\x00" + int(ControlRecordType.ABORT).to_bytes(2, "big")
    row = _row(
        key, b"\x00\x00\x00\x00\x00\x00", producer_id=9, is_transactional=True, is_control=True
    )
    assert (row["record_type"], row["control_type"], row["producer_id"]) == ("control", 0, 9)


def test_rows_fit_the_arrow_schema() -> None:
    rows = [
        _row(*commit("g1", "orders", 0, 5)),
        _row(*offset_tombstone("g1", "orders", 0)),
        _row(*group_metadata("g1", 1, [("c1-a", ["orders"], {"orders": [0]})])),
        _row(*group_tombstone("g1")),
        _row(b"\x00\x01\x00", b"x"),
    ]
    batch = offsets.to_record_batch(rows)
    assert batch.schema == offsets.SCHEMA
    assert batch.num_rows == 5
