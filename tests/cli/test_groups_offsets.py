"""`kmock groups ...` and `kmock offsets ...` against a live broker with real consumers."""

from __future__ import annotations

import time

import pytest
import trio

from tests.cli.harness import SCENARIO_S, bs, cli, cli_json
from tests.integration.harness import KAFKA_PYTHON_POLL_MS


class ActiveConsumer:
    """A kafka-python consumer in group `group_id`, kept a member until close()."""

    def __init__(self, bootstrap: str, topic: str, group_id: str) -> None:
        from kafka import KafkaConsumer

        self.consumer = KafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            group_id=group_id,
            client_id="lag-test",
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )

    def read_and_commit(self, n: int) -> None:
        from kafka import OffsetAndMetadata, TopicPartition

        got = []
        deadline = time.monotonic() + SCENARIO_S
        while len(got) < n:
            assert time.monotonic() < deadline, f"read {len(got)} of {n} records"
            for records in self.consumer.poll(
                timeout_ms=KAFKA_PYTHON_POLL_MS, max_records=n - len(got)
            ).values():
                got.extend(records)
        last = got[-1]
        self.consumer.commit(
            {TopicPartition(last.topic, last.partition): OffsetAndMetadata(last.offset + 1, "", -1)}
        )

    def close(self) -> None:
        self.consumer.close()


@pytest.mark.integration
async def test_groups_and_offsets_with_a_live_consumer(broker):
    with trio.fail_after(SCENARIO_S):
        await cli_json("topics", "create", "events", "--partitions", "1", *bs(broker))
        await cli_json(
            "produce", "events", *bs(broker), stdin="".join(f"e{i}\n" for i in range(10))
        )
        member = await trio.to_thread.run_sync(
            ActiveConsumer, broker.bootstrap_servers, "events", "readers", abandon_on_cancel=True
        )
        try:
            await trio.to_thread.run_sync(member.read_and_commit, 4, abandon_on_cancel=True)

            groups = await cli_json("groups", "list", *bs(broker))
            assert groups == [
                {
                    "group_id": "readers",
                    "type": "classic",
                    "protocol_type": "consumer",
                    "state": "Stable",
                }
            ]

            described = await cli_json("groups", "describe", "readers", *bs(broker))
            assert (described["state"], described["type"]) == ("Stable", "classic")
            [m] = described["members"]
            assert m["client_id"] == "lag-test"
            assert m["host"].lstrip("/") == "127.0.0.1"
            assert m["subscription"] == ["events"]
            assert m["assignment"] == {"events": [0]}
            [row] = described["offsets"]
            assert (
                row["topic"],
                row["partition"],
                row["committed_offset"],
                row["log_end_offset"],
                row["lag"],
                row["member_id"],
            ) == ("events", 0, 4, 10, 6, m["member_id"])
            code, out, _ = await cli("groups", "describe", "readers", *bs(broker))
            assert code == 0
            assert "events:0" in out
            assert "State: Stable" in out

            # A reset while the group has a member is refused, dry run or not.
            for mode in ((), ("--execute",)):
                code, out, err = await cli(
                    "offsets",
                    "reset",
                    "readers",
                    "--topic",
                    "events",
                    "--to-earliest",
                    *mode,
                    *bs(broker),
                )
                assert (code, out) == (3, "")
                assert err.startswith(
                    "kmock: Assignments can only be reset if the group 'readers' is "
                    "inactive, but the current state is Stable."
                )
        finally:
            await trio.to_thread.run_sync(member.close, abandon_on_cancel=True)

        shown = await cli_json("offsets", "show", "readers", *bs(broker))
        assert shown["state"] == "Empty"
        assert [(r["committed_offset"], r["lag"], r["member_id"]) for r in shown["offsets"]] == [
            (4, 6, None)
        ]

        plan = await cli_json(
            "offsets", "reset", "readers", "--topic", "events", "--to-offset", "7", *bs(broker)
        )
        assert plan == {
            "group_id": "readers",
            "executed": False,
            "plan": [{"topic": "events", "partition": 0, "current_offset": 4, "new_offset": 7}],
        }
        shown = await cli_json("offsets", "show", "readers", *bs(broker))
        assert shown["offsets"][0]["committed_offset"] == 4  # a dry run commits nothing

        code, out, err = await cli(
            "offsets",
            "reset",
            "readers",
            "--topic",
            "events:0",
            "--to-latest",
            "--execute",
            *bs(broker),
        )
        # Kafka's table (GroupOffsetsResetter.printOffsetsToReset), blank first line included.
        assert (code, err) == (0, "")
        assert out == (
            "\nGROUP           TOPIC           PARTITION  NEW-OFFSET\n"
            "readers         events          0          10\n"
        )
        shown = await cli_json("offsets", "show", "readers", *bs(broker))
        assert [(r["committed_offset"], r["lag"]) for r in shown["offsets"]] == [(10, 0)]

        plan = await cli_json(
            "offsets",
            "reset",
            "readers",
            "--all-topics",
            "--to-offset",
            "99",
            "--execute",
            *bs(broker),
        )
        assert plan["plan"][0]["new_offset"] == 10  # clamped to the log end
        plan = await cli_json(
            "offsets", "reset", "readers", "--all-topics", "--to-earliest", "--execute", *bs(broker)
        )
        assert plan["plan"][0]["new_offset"] == 0


async def test_reset_to_datetime(broker):
    with trio.fail_after(SCENARIO_S):
        await cli_json("produce", "timed", *bs(broker), stdin="a\nb\n")
        # Before every record: the first offset; after every record: the log end.
        plan = await cli_json(
            "offsets",
            "reset",
            "g",
            "--topic",
            "timed",
            "--to-datetime",
            "2000-01-01T00:00:00Z",
            "--execute",
            *bs(broker),
        )
        assert plan["plan"][0]["new_offset"] == 0
        plan = await cli_json(
            "offsets",
            "reset",
            "g",
            "--topic",
            "timed",
            "--to-datetime",
            "2999-01-01T00:00:00+00:00",
            *bs(broker),
        )
        assert plan["plan"][0] == {
            "topic": "timed",
            "partition": 0,
            "current_offset": 0,
            "new_offset": 2,
        }
        code, _, err = await cli(
            "offsets", "reset", "g", "--topic", "timed", "--to-datetime", "yesterday", *bs(broker)
        )
        assert code == 2
        assert "ISO 8601" in err


async def test_describe_unknown_group_fails(broker):
    with trio.fail_after(SCENARIO_S):
        code, out, err = await cli("groups", "describe", "nobody", *bs(broker))
    assert (code, out) == (1, "")
    assert "does not exist" in err


async def test_groups_show_a_consumer_protocol_group(broker):
    """A KIP-848 group (joined with ConsumerGroupHeartbeat, committed with its member
    epoch) is listed with type consumer and described through ConsumerGroupDescribe."""
    from protocol.messages.consumer_group_heartbeat import ConsumerGroupHeartbeatRequest
    from protocol.messages.offset_commit import (
        OffsetCommitRequest,
        OffsetCommitRequestPartition,
        OffsetCommitRequestTopic,
    )
    from tests.wire import WireClient

    with trio.fail_after(SCENARIO_S):
        await cli_json("topics", "create", "jobs", "--partitions", "2", *bs(broker))
        await cli_json("produce", "jobs", *bs(broker), stdin="".join(f"j{i}\n" for i in range(4)))
        client = await WireClient.connect(broker)
        joined = await client.call(
            ConsumerGroupHeartbeatRequest(
                group_id="workers",
                member_id="w1",
                member_epoch=0,
                rebalance_timeout_ms=30_000,
                subscribed_topic_names=["jobs"],
                topic_partitions=[],
            ),
            1,
        )
        assert joined.error_code == 0
        committed = await client.call(
            OffsetCommitRequest(
                group_id="workers",
                generation_id_or_member_epoch=joined.member_epoch,
                member_id="w1",
                topics=[
                    OffsetCommitRequestTopic(
                        name="jobs",
                        partitions=[
                            OffsetCommitRequestPartition(partition_index=0, committed_offset=1)
                        ],
                    )
                ],
            ),
            9,
        )
        assert committed.topics[0].partitions[0].error_code == 0

        groups = await cli_json("groups", "list", *bs(broker))
        assert groups == [
            {
                "group_id": "workers",
                "type": "consumer",
                "protocol_type": "consumer",
                "state": "Stable",
            }
        ]
        described = await cli_json("groups", "describe", "workers", *bs(broker))
        assert (described["type"], described["state"], described["protocol"]) == (
            "consumer",
            "Stable",
            "uniform",
        )
        [m] = described["members"]
        assert (m["member_id"], m["member_epoch"], m["subscription"]) == ("w1", 1, ["jobs"])
        assert m["assignment"] == {"jobs": [0, 1]}
        rows = [
            (r["partition"], r["committed_offset"], r["member_id"]) for r in described["offsets"]
        ]
        assert rows == [(0, 1, "w1"), (1, None, "w1")]
        code, out, _ = await cli("groups", "describe", "workers", *bs(broker))
        assert code == 0
        assert "Type: consumer" in out
        assert "jobs:0,1" in out
