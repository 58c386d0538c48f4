"""`kmock dump-log`: segments decoded offline, bad CRCs and torn tails reported."""

from __future__ import annotations

import io
import json

import trio

from cli.main import main
from tests.cli.harness import SCENARIO_S, bs, cli, cli_json


async def test_dump_log_of_a_partition_and_of_consumer_offsets(broker, tmp_path):
    with trio.fail_after(SCENARIO_S):
        await cli_json(
            "produce", "dumped", "--key-separator", "=", *bs(broker), stdin="k1=hello\nk2=world\n"
        )
        await cli_json(
            "offsets",
            "reset",
            "dumper",
            "--topic",
            "dumped",
            "--to-offset",
            "1",
            "--execute",
            *bs(broker),
        )
        data = broker.data_dir
        dumped = await cli_json("dump-log", str(data / "dumped-0"))
        [segment] = dumped["files"]
        assert segment["error"] is None
        assert segment["trailing_bytes"] == 0
        [batch] = segment["batches"]
        assert (batch["base_offset"], batch["last_offset"], batch["count"], batch["crc_valid"]) == (
            0,
            1,
            2,
            True,
        )
        assert [(r["offset"], r["key"], r["value"]) for r in batch["records"]] == [
            (0, "k1", "hello"),
            (1, "k2", "world"),
        ]

        code, out, _ = await cli("dump-log", str(data / "dumped-0"))
        assert code == 0
        assert "baseOffset: 0 lastOffset: 1 count: 2" in out
        assert "isvalid: true" in out
        assert "key: k1 payload: hello" in out

        partition = next(
            p
            for p in data.glob("__consumer_offsets-*")
            if any(f.stat().st_size for f in p.glob("*.log"))
        )
        dumped = await cli_json("dump-log", str(partition))
        commits = [
            r
            for f in dumped["files"]
            for b in f["batches"]
            for r in b["records"]
            if r["key"]["type"] == "OffsetCommitKey"
        ]
        assert [
            (r["key"]["group"], r["key"]["topic"], r["key"]["partition"], r["value"]["offset"])
            for r in commits
        ] == [("dumper", "dumped", 0, 1)]
        code, out, _ = await cli("dump-log", str(partition))
        assert 'key: OffsetCommitKey group="dumper" topic="dumped" partition=0' in out
        assert "payload: OffsetCommitValue offset=1" in out


def test_dump_log_reports_bad_crc_and_torn_tail(tmp_path):
    from protocol.records import build_batch

    first = bytearray(build_batch([(b"k", b"v", (), 1_700_000_000_000)]))
    first[-1] ^= 0xFF  # a flipped bit in the last record: the CRC no longer matches
    second = build_batch([(None, b"x", (), 1_700_000_000_001)], base_offset=1)
    segment = tmp_path / "00000000000000000000.log"
    segment.write_bytes(bytes(first) + second + second[:30])
    out = io.StringIO()
    assert main(["dump-log", str(segment), "--output", "json"], stdout=out) == 0
    [doc] = json.loads(out.getvalue())["files"]
    assert [b["crc_valid"] for b in doc["batches"]] == [False, True]
    assert doc["trailing_bytes"] == 30

    out = io.StringIO()
    assert main(["dump-log", str(segment)], stdout=out) == 0
    assert "30 trailing byte(s) after the last whole batch" in out.getvalue()
    assert "isvalid: false" in out.getvalue()

    err = io.StringIO()
    assert main(["dump-log", str(tmp_path / "missing.log")], stderr=err) == 1
    assert "no such file" in err.getvalue()


async def test_dump_log_decodes_transaction_state_and_shows_markers(broker):
    from protocol.messages.end_txn import EndTxnRequest
    from tests.broker.handlers.test_transactions import TID, open_transaction, state, until
    from tests.wire import WireClient

    with trio.fail_after(SCENARIO_S):
        client = await WireClient.connect(broker)
        pid, epoch = await open_transaction(client)
        await client.call(
            EndTxnRequest(
                transactional_id=TID, producer_id=pid, producer_epoch=epoch, committed=True
            ),
            3,
        )
        await until(broker, lambda: state(broker) == "CompleteCommit")

        data = broker.data_dir
        dumped = await cli_json("dump-log", str(data / "t-0"))
        data_batch, marker = dumped["files"][0]["batches"]
        assert (data_batch["is_transactional"], data_batch["is_control"]) == (True, False)
        assert (marker["is_control"], marker["producer_id"]) == (True, pid)
        assert marker["records"][0]["end_txn_marker"] == {"type": "COMMIT", "coordinator_epoch": 0}
        code, out, _ = await cli("dump-log", str(data / "t-0"))
        assert code == 0
        assert "endTxnMarker: COMMIT coordinator_epoch=0" in out

        partition = next(
            p
            for p in data.glob("__transaction_state-*")
            if any(f.stat().st_size for f in p.glob("*.log"))
        )
        dumped = await cli_json("dump-log", str(partition))
        values = [
            (r["key"]["transactional_id"], r["value"]["state"])
            for b in dumped["files"][0]["batches"]
            for r in b["records"]
        ]
        assert values == [
            (TID, "Empty"),
            (TID, "Ongoing"),
            (TID, "PrepareCommit"),
            (TID, "CompleteCommit"),
        ]
        code, out, _ = await cli("dump-log", str(partition))
        assert code == 0
        assert f'key: TransactionLogKey transactional_id="{TID}"' in out
        assert 'state="CompleteCommit"' in out


async def test_dump_log_decodes_consumer_group_records(broker):
    """The KIP-848 records (ConsumerGroup*Key/Value) print with their fields: topic ids as
    UUIDs, partitions as lists, member state and epochs."""
    from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
    from tests.wire import WireClient

    with trio.fail_after(SCENARIO_S):
        await cli_json("topics", "create", "work", "--partitions", "2", *bs(broker))
        client = await WireClient.connect(broker)
        joined = await client.call(
            ConsumerGroupHeartbeatRequest(
                group_id="crew",
                member_id="c1",
                member_epoch=0,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=["work"],
                topic_partitions=[],
            ),
            1,
        )
        assert joined.error_code == 0
        topic_id = str(broker.topics.get("work").topic_id)
        partition = (
            broker.data_dir
            / f"__consumer_offsets-{broker.coordinator.coordinator.partition_for('crew')}"
        )
        dumped = await cli_json("dump-log", str(partition))
        records = {
            r["key"]["type"]: r for f in dumped["files"] for b in f["batches"] for r in b["records"]
        }
        assert records["ConsumerGroupMetadataKey"]["value"]["epoch"] == 1
        member = records["ConsumerGroupMemberMetadataKey"]
        assert member["key"]["member_id"] == "c1"
        assert member["value"]["subscribed_topic_names"] == ["work"]
        current = records["ConsumerGroupCurrentMemberAssignmentKey"]["value"]
        assert current["member_epoch"] == 1
        assert current["assigned_partitions"] == [{"topic_id": topic_id, "partitions": [0, 1]}]
        metadata = records["ConsumerGroupPartitionMetadataKey"]["value"]["topics"]
        assert [(t["topic_name"], t["num_partitions"]) for t in metadata] == [("work", 2)]

        code, out, _ = await cli("dump-log", str(partition))
        assert code == 0
        assert 'key: ConsumerGroupCurrentMemberAssignmentKey group_id="crew" member_id="c1"' in out
        assert f'assigned_partitions=[{{topic_id="{topic_id}" partitions=[0, 1]}}]' in out
