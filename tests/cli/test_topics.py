"""`kmock topics ...` against a live broker, and the exit codes of failed commands."""

from __future__ import annotations

import socket

import trio

from tests.cli.harness import SCENARIO_S, bs, cli, cli_json


async def test_topics_create_list_describe_delete(broker):
    with trio.fail_after(SCENARIO_S):
        code, out, err = await cli(
            "topics",
            "create",
            "orders",
            "--partitions",
            "3",
            "--config",
            "retention.ms=60000",
            *bs(broker),
        )
        assert (code, out, err) == (0, "Created topic orders.\n", "")

        code, _, err = await cli("topics", "create", "orders", *bs(broker))
        assert code == 1
        assert "TOPIC_ALREADY_EXISTS" in err
        assert (await cli("topics", "create", "orders", "--if-not-exists", *bs(broker)))[0] == 0

        listed = await cli_json("topics", "list", "--exclude-internal", *bs(broker))
        assert [(t["name"], t["partitions"], t["internal"]) for t in listed] == [
            ("orders", 3, False)
        ]
        code, out, _ = await cli("topics", "list", *bs(broker))
        assert code == 0
        assert "orders" in out
        assert "__consumer_offsets" not in out  # made by the first group lookup, as in Kafka

        described = await cli_json("topics", "describe", "orders", *bs(broker))
        assert [
            (p["partition"], p["leader"], p["log_start_offset"], p["log_end_offset"])
            for p in described["partitions"]
        ] == [(0, 0, 0, 0), (1, 0, 0, 0), (2, 0, 0, 0)]
        configs = {c["name"]: c for c in described["configs"]}
        assert configs["retention.ms"]["value"] == "60000"
        assert configs["retention.ms"]["source"] == "topic"
        code, out, _ = await cli("topics", "describe", "orders", *bs(broker))
        assert "PartitionCount: 3" in out
        assert "retention.ms" in out

        code, out, _ = await cli("topics", "delete", "orders", *bs(broker))
        assert (code, out) == (0, "Deleted topic orders.\n")
        assert await cli_json("topics", "list", "--exclude-internal", *bs(broker)) == []
        code, _, err = await cli("topics", "describe", "orders", *bs(broker))
        assert code == 1
        assert "UNKNOWN_TOPIC_OR_PARTITION" in err
        assert (await cli("topics", "delete", "orders", "--if-exists", *bs(broker)))[0] == 0


async def test_topic_create_with_bad_config_is_a_kafka_error(broker):
    with trio.fail_after(SCENARIO_S):
        code, out, err = await cli(
            "topics", "create", "t", "--config", "retention.ms=soon", *bs(broker)
        )
    assert (code, out) == (1, "")
    assert err.startswith("kmock: INVALID_CONFIG")


async def test_connection_failure_exits_1_with_one_line(tmp_path):
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with trio.fail_after(SCENARIO_S):
        code, out, err = await cli("topics", "list", "--bootstrap-server", f"127.0.0.1:{port}")
    assert (code, out) == (1, "")
    assert err.startswith(f"kmock: cannot connect to 127.0.0.1:{port}")
    assert err.count("\n") == 1


async def test_usage_errors_exit_2(broker):
    with trio.fail_after(SCENARIO_S):
        code, _, err = await cli("topics", "frobnicate")
        assert code == 2
        assert "invalid choice" in err
        code, _, err = await cli("consume", "t", "--offset", "3", *bs(broker))
        assert (code, err) == (2, "kmock: --offset needs --partition\n")
        code, out, _ = await cli("--help")
        assert code == 0
        assert "dump-log" in out
