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

        [described] = await cli_json("topics", "describe", "orders", *bs(broker))
        assert [
            (p["partition"], p["leader"], p["log_start_offset"], p["log_end_offset"])
            for p in described["partitions"]
        ] == [(0, 0, 0, 0), (1, 0, 0, 0), (2, 0, 0, 0)]
        configs = {c["name"]: c for c in described["configs"]}
        assert configs["retention.ms"]["value"] == "60000"
        assert configs["retention.ms"]["source"] == "topic"
        code, out, _ = await cli("topics", "describe", "orders", *bs(broker))
        assert "PartitionCount: 3" in out
        assert out.splitlines()[0].endswith("Configs: retention.ms=60000")

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


async def test_several_topics_per_command(broker):
    with trio.fail_after(SCENARIO_S):
        code, out, err = await cli(
            "topics",
            "create",
            "a",
            "b",
            "--partitions",
            "2",
            "--config",
            "cleanup.policy=compact",
            "--config",
            "retention.ms=1000",
            *bs(broker),
        )
        assert (code, out, err) == (0, "Created topic a.\nCreated topic b.\n", "")

        # --if-not-exists skips the ones that exist; --dry-run validates and creates nothing.
        rows = await cli_json(
            "topics", "create", "a", "c", "--if-not-exists", "--dry-run", *bs(broker)
        )
        assert [(r["name"], r["created"], r["exists"], r["dry_run"]) for r in rows] == [
            ("a", False, True, True),
            ("c", False, False, True),
        ]
        listed = await cli_json("topics", "list", "--exclude-internal", *bs(broker))
        assert [t["name"] for t in listed] == ["a", "b"]
        code, out, _ = await cli("topics", "create", "a", "c", "--if-not-exists", *bs(broker))
        assert (code, out) == (0, "Topic a already exists.\nCreated topic c.\n")

        described = await cli_json("topics", "describe", "a", "b", *bs(broker))
        assert [d["name"] for d in described] == ["a", "b"]
        for d in described:
            assert len(d["partitions"]) == 2
            set_here = {c["name"]: c["value"] for c in d["configs"] if c["source"] == "topic"}
            assert set_here == {"cleanup.policy": "compact", "retention.ms": "1000"}
        code, out, _ = await cli("topics", "describe", "b", "--all-configs", *bs(broker))
        assert out.splitlines()[0].endswith("Configs: cleanup.policy=compact,retention.ms=1000")
        assert "segment.bytes" in out  # a default, in the full table
        every = await cli_json("topics", "describe", "--exclude-internal", *bs(broker))
        assert [d["name"] for d in every] == ["a", "b", "c"]

        code, out, _ = await cli("topics", "delete", "a", "b", "--dry-run", *bs(broker))
        assert (code, out) == (
            0,
            "Topic a would be deleted (dry run: nothing changed).\n"
            "Topic b would be deleted (dry run: nothing changed).\n",
        )
        rows = await cli_json("topics", "delete", "a", "zz", "--if-exists", *bs(broker))
        assert rows == [
            {"name": "a", "deleted": True, "exists": True},
            {"name": "zz", "deleted": False, "exists": False},
        ]
        listed = await cli_json("topics", "list", "--exclude-internal", *bs(broker))
        assert [t["name"] for t in listed] == ["b", "c"]


async def test_bad_input_names_the_topic_and_changes_nothing(broker):
    with trio.fail_after(SCENARIO_S):
        await cli_json("topics", "create", "kept", *bs(broker))
        cases = [
            (
                ("create", "new1", "new2", "--config", "retention.ms=soon"),
                1,
                "kmock: cannot create 'new1': INVALID_CONFIG",
            ),
            (("create", "new1", "kept"), 1, "'kept': TOPIC_ALREADY_EXISTS"),
            (("create", "new1", "bad/name"), 1, "'bad/name': INVALID_TOPIC_EXCEPTION"),
            (("create", "new1", "--config", "retention.ms"), 2, "--config 'retention.ms'"),
            (("create", "new1", "new1"), 2, "kmock: topic 'new1' is named twice\n"),
            (
                ("delete", "kept", "gone"),
                1,
                "kmock: cannot delete 'gone': UNKNOWN_TOPIC_OR_PARTITION (it does not exist); "
                "none of the 2 topics was changed\n",
            ),
            (("describe", "kept", "gone"), 1, "topic 'gone' does not exist"),
        ]
        for argv, want_code, want in cases:
            code, out, err = await cli("topics", *argv, *bs(broker))
            assert (code, out) == (want_code, ""), (argv, err)
            assert want in err, (argv, err)
            assert err.count("\n") == 1, (argv, err)
        listed = await cli_json("topics", "list", "--exclude-internal", *bs(broker))
        assert [t["name"] for t in listed] == ["kept"]
