"""`kmock produce` and `kmock consume` against a live broker, and with kafka-python."""

from __future__ import annotations

import io
import json
from functools import partial

import pytest
import trio

from cli.main import main
from client import default_partition
from tests.cli.harness import SCENARIO_S, bs, cli, cli_json


async def test_produce_then_consume_with_keys_and_partitions(broker):
    lines = "".join(f"key-{i}:value {i}\n" for i in range(20))
    with trio.fail_after(SCENARIO_S):
        assert (await cli("topics", "create", "keyed", "--partitions", "3", *bs(broker)))[0] == 0
        produced = await cli_json(
            "produce",
            "keyed",
            "--key-separator",
            ":",
            "--batch-size",
            "4",
            "--compression",
            "gzip",
            *bs(broker),
            stdin=lines,
        )
        assert produced["records"] == 20
        code, out, err = await cli(
            "consume",
            "keyed",
            "--from-beginning",
            "--max-messages",
            "20",
            "--output",
            "json",
            *bs(broker),
        )
    assert code == 0, err
    assert err == "Processed a total of 20 messages\n"
    records = [json.loads(line) for line in out.splitlines()]
    assert sorted(r["value"] for r in records) == sorted(f"value {i}" for i in range(20))
    for r in records:  # Kafka's default partitioner: a key always lands on the same partition
        assert r["partition"] == default_partition(r["key"].encode(), 3)
    per_partition = {}
    for r in records:
        per_partition.setdefault(r["partition"], []).append(r["offset"])
    assert all(offsets == list(range(len(offsets))) for offsets in per_partition.values())


async def test_consume_from_partition_offset_and_text_fields(broker):
    with trio.fail_after(SCENARIO_S):
        await cli_json("produce", "plain", "--partition", "0", *bs(broker), stdin="a\nb\nc\nd\n")
        code, out, err = await cli(
            "consume",
            "plain",
            "--partition",
            "0",
            "--offset",
            "2",
            "--print-offset",
            "--print-partition",
            "--timeout-ms",
            "300",
            *bs(broker),
        )
    assert code == 0, err
    assert out == "Partition:0\tOffset:2\tc\nPartition:0\tOffset:3\td\n"
    assert err == "Processed a total of 2 messages\n"


async def test_consume_from_latest_with_idle_timeout_sees_nothing_old(broker):
    with trio.fail_after(SCENARIO_S):
        await cli_json("produce", "old", *bs(broker), stdin="x\n")
        code, out, err = await cli("consume", "old", "--timeout-ms", "200", *bs(broker))
    assert (code, out, err) == (0, "", "Processed a total of 0 messages\n")


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_progress_bars_on_a_terminal_leave_stdout_alone(broker):
    lines = "".join(f"{i}\n" for i in range(300))
    with trio.fail_after(SCENARIO_S):
        out, err = io.StringIO(), Terminal()
        code = await trio.to_thread.run_sync(
            partial(
                main,
                ["produce", "bars", "--batch-size", "50", *bs(broker)],
                stdin=io.StringIO(lines),
                stdout=out,
                stderr=err,
            ),
            abandon_on_cancel=True,
        )
        assert (code, out.getvalue()) == (0, "Produced 300 record(s) to bars (0: 0-299)\n")
        out, err = io.StringIO(), Terminal()
        code = await trio.to_thread.run_sync(
            partial(
                main,
                ["consume", "bars", "--from-beginning", "--max-messages", "300", *bs(broker)],
                stdout=out,
                stderr=err,
            ),
            abandon_on_cancel=True,
        )
    assert code == 0
    assert out.getvalue().splitlines() == [str(i) for i in range(300)]


async def test_produce_line_without_separator_fails(broker):
    with trio.fail_after(SCENARIO_S):
        code, _, err = await cli(
            "produce", "t", "--key-separator", "=", *bs(broker), stdin="a=1\nno separator\n"
        )
    assert code == 2
    assert err == "kmock: stdin line 2: no key separator '='\n"


@pytest.mark.integration
async def test_records_cross_between_cli_and_kafka_python(broker):
    """kafka-python reads what `kmock produce` wrote, and `kmock consume` what it wrote."""
    from kafka import KafkaConsumer, KafkaProducer

    def kafka_python_round_trip() -> list[bytes]:
        producer = KafkaProducer(
            bootstrap_servers=broker.bootstrap_servers, compression_type="gzip"
        )
        for i in range(5):
            producer.send("from-kp", key=b"k", value=f"kp {i}".encode())
        producer.flush()
        producer.close()
        consumer = KafkaConsumer(
            "from-cli",
            bootstrap_servers=broker.bootstrap_servers,
            auto_offset_reset="earliest",
            consumer_timeout_ms=10_000,
        )
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == 3:
                break
        consumer.close()
        return values

    with trio.fail_after(SCENARIO_S):
        await cli_json(
            "produce", "from-cli", "--compression", "lz4", *bs(broker), stdin="one\ntwo\nthree\n"
        )
        assert await trio.to_thread.run_sync(kafka_python_round_trip, abandon_on_cancel=True) == [
            b"one",
            b"two",
            b"three",
        ]
        code, out, _ = await cli(
            "consume",
            "from-kp",
            "--from-beginning",
            "--max-messages",
            "5",
            "--print-key",
            *bs(broker),
        )
    assert code == 0
    assert out.splitlines() == [f"k\tkp {i}" for i in range(5)]
