"""`kmock` commands against a live broker, `kmock serve` as a real process, and the pieces
behind them (settings precedence, log formats, the client's partitioner).

Admin commands run `cli.main.main` in a worker thread (`trio.to_thread.run_sync`) while
the broker (the `broker` fixture of tests/conftest.py) serves from the test's nursery;
`serve` runs as `python -m cli.main` so that it owns its signals.
"""

from __future__ import annotations

import io
import json
import logging
import signal
import socket
import subprocess
import sys
import time
from functools import partial

import pytest
import trio

from broker.config import SETTINGS, ConfigError
from broker.logging_setup import JsonFormatter, TextFormatter
from cli.main import build_parser, main
from cli.serving import serve_config
from client import KafkaClient, default_partition
from tests.integration.harness import KAFKA_PYTHON_POLL_MS
from tests.reliability.process import child_env

SCENARIO_S = 30


async def cli(*argv: str, stdin: str = "") -> tuple[int, str, str]:
    """Run `kmock argv...` in a worker thread; (exit code, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    code = await trio.to_thread.run_sync(
        partial(main, list(argv), stdin=io.StringIO(stdin), stdout=out, stderr=err),
        abandon_on_cancel=True,
    )
    return code, out.getvalue(), err.getvalue()


async def cli_json(*argv: str, stdin: str = "") -> object:
    code, out, err = await cli(*argv, "--output", "json", stdin=stdin)
    assert code == 0, err
    return json.loads(out)


def bs(b) -> tuple[str, str]:
    return ("--bootstrap-server", b.bootstrap_servers)


# --- topics ----------------------------------------------------------------------------------


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


# --- produce / consume -------------------------------------------------------------------------


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
    assert code == 1
    assert err == "kmock: line 2 has no key separator '='\n"


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


# --- groups and offsets ----------------------------------------------------------------------


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
                {"group_id": "readers", "protocol_type": "consumer", "state": "Stable"}
            ]

            described = await cli_json("groups", "describe", "readers", *bs(broker))
            assert described["state"] == "Stable"
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
                assert "inactive" in err
                assert "Stable" in err
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

        code, out, _ = await cli(
            "offsets",
            "reset",
            "readers",
            "--topic",
            "events:0",
            "--to-latest",
            "--execute",
            *bs(broker),
        )
        assert code == 0
        assert "Committed" in out
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


# --- dump-log ----------------------------------------------------------------------------------


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


# --- serve: settings -----------------------------------------------------------------------


def serve_args(*argv: str):
    return build_parser().parse_args(["serve", *argv])


def test_the_serve_only_parser_reads_serve_as_the_full_one_does(tmp_path):
    argv = ["serve", "x.properties", "--log-dirs", str(tmp_path), "--override", "a=b"]
    full = vars(build_parser().parse_args(argv))
    assert vars(build_parser(serve_only=True).parse_args(argv)) == full
    assert full["setting:log.dirs"] == str(tmp_path)


def test_version_goes_to_stdout():
    out, err = io.StringIO(), io.StringIO()
    assert main(["--version"], stdout=out, stderr=err) == 0
    assert out.getvalue().startswith("kmock ")
    assert err.getvalue() == ""


def test_serve_does_not_import_what_only_other_commands_and_metrics_need():
    # Start-up time: these are imported by the admin commands and by /metrics when used.
    code = (
        "import sys, cli.main, broker.server, broker.runtime;"
        "print(sorted({'client', 'rich', 'prometheus_client', 'pipeline.cli'}"
        " & set(sys.modules)))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=child_env(), check=True
    )
    assert run.stdout == "[]\n"


def test_every_setting_is_a_documented_flag():
    out = io.StringIO()
    assert main(["serve", "--help"], stdout=out) == 0
    help_text = " ".join(out.getvalue().split())
    for s in SETTINGS.values():
        flag = "--" + s.name.replace(".", "-")
        assert flag in help_text, flag
        assert " ".join(s.doc.split()) in help_text, s.name
    assert "Default: ./data (Kafka: /tmp/kafka-logs)" in help_text
    assert "--auto-create-topics-enable true|false" in help_text


def test_settings_precedence_defaults_file_env_flags_override(tmp_path):
    props = tmp_path / "server.properties"
    props.write_text("num.partitions=2\nlog.retention.hours=1\nmessage.max.bytes=1000\nnode.id=7\n")
    env = {
        "KAFKA_LOG_RETENTION_HOURS": "2",
        "KAFKA_MESSAGE_MAX_BYTES": "2000",
        "KAFKA_NODE_ID": "8",
    }
    args = serve_args(
        str(props), "--message-max-bytes", "3000", "--node-id", "9", "--override", "node.id=10"
    )
    config = serve_config(args, env)
    assert config["num.partitions"] == 2  # file
    assert config["log.retention.hours"] == 2  # env over file
    assert config["message.max.bytes"] == 3000  # flag over env
    assert config["node.id"] == 10  # --override over flag
    assert config["log.segment.bytes"] == SETTINGS["log.segment.bytes"].default
    assert config["auto.create.topics.enable"] is True
    config = serve_config(serve_args("--auto-create-topics-enable", "false"), {})
    assert config["auto.create.topics.enable"] is False


def test_unknown_environment_variables_are_ignored_with_a_warning(caplog):
    env = {
        "KAFKA_HOME": "/opt/kafka",
        "KAFKA_HEAP_OPTS": "-Xmx1G",
        "KAFKA_NUM_PARTITIONS": "4",
        "KAFKA_BROKER_ID": "3",
        "PATH": "/bin",
    }
    with caplog.at_level(logging.WARNING, logger="cli.serve"):
        config = serve_config(serve_args(), env)
    assert (config["num.partitions"], config["node.id"]) == (4, 3)
    assert sorted(r.getMessage() for r in caplog.records) == [
        "ignoring KAFKA_HEAP_OPTS: heap.opts is not a kmock setting",
        "ignoring KAFKA_HOME: home is not a kmock setting",
    ]


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["--num-partitions", "many"], {}, "num.partitions: 'many' is not a valid int"),
        (["--override", "no.such.setting=1"], {}, "unknown setting 'no.such.setting'"),
        (["--override", "oops"], {}, "--override 'oops' is not KEY=VALUE"),
        (["--listeners", "127.0.0.1:9092"], {}, "is not NAME://host:port"),
        (["--listeners", "SSL://127.0.0.1:9093"], {}, "only PLAINTEXT is supported"),
        ([], {"KAFKA_AUTO_CREATE_TOPICS_ENABLE": "maybe"}, "not a valid boolean"),
        (["/no/such/server.properties"], {}, "cannot read /no/such/server.properties"),
    ],
)
def test_bad_settings_are_config_errors(argv, env, message):
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(".", r"\.")):
        serve_config(serve_args(*argv), env)


# --- serve: the process ----------------------------------------------------------------------


async def _read_until(stream, text: str, seen: bytearray) -> str:
    while text.encode() not in seen:
        data = await stream.receive_some()
        if not data:
            raise AssertionError(f"process ended before {text!r}: {seen.decode()}")
        seen += data
    return seen.decode()


@pytest.mark.slow
async def test_serve_process_stops_gracefully_on_sigterm(tmp_path):
    argv = [
        sys.executable,
        "-m",
        "cli.main",
        "serve",
        "--listeners",
        "PLAINTEXT://127.0.0.1:0",
        "--log-dirs",
        str(tmp_path / "data"),
        "--admin-port",
        "0",
        "--log-format",
        "json",
    ]
    with trio.fail_after(SCENARIO_S):
        proc = await trio.lowlevel.open_process(
            argv, stderr=subprocess.PIPE, env=child_env(), cwd=str(tmp_path)
        )
        seen = bytearray()
        try:
            await _read_until(proc.stderr, "kmock listening on", seen)
            listening = next(
                json.loads(line)
                for line in seen.decode().splitlines()
                if "kmock listening on" in line
            )
            address = listening["message"].split()[3]
            client = KafkaClient(address, timeout_s=10)
            await trio.to_thread.run_sync(client.connect, abandon_on_cancel=True)
            assert client.api_versions[18] == range(0, 5)
            client.close()
            proc.send_signal(signal.SIGTERM)
            await _read_until(proc.stderr, "kmock stopped", seen)
            assert await proc.wait() == 0
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
    lines = [json.loads(line) for line in seen.decode().splitlines()]
    assert {"level", "logger", "message", "ts"} <= set(lines[0])
    stopping = next(line for line in lines if line["message"] == "stopping")
    assert stopping["signal"] == "SIGTERM"
    assert (tmp_path / "data" / "meta.properties").exists()


@pytest.mark.slow
def test_serve_exit_codes_for_bad_config_and_port_in_use(tmp_path):
    bad = subprocess.run(
        [sys.executable, "-m", "cli.main", "serve", "--listeners", "nope"],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=tmp_path,
        timeout=30,
    )
    assert bad.returncode == 2
    assert bad.stderr.splitlines()[-1] == (
        "kmock: listeners: listener 'nope' is not NAME://host:port"
    )
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        busy = subprocess.run(
            [
                sys.executable,
                "-m",
                "cli.main",
                "serve",
                "--listeners",
                f"PLAINTEXT://127.0.0.1:{port}",
                "--log-dirs",
                str(tmp_path / "d"),
            ],
            capture_output=True,
            text=True,
            env=child_env(),
            cwd=tmp_path,
            timeout=30,
        )
    assert busy.returncode == 1
    assert busy.stderr.splitlines()[-1].startswith("kmock: cannot start: address already in use")
    not_a_dir = tmp_path / "file"
    not_a_dir.write_text("")
    unwritable = subprocess.run(
        [
            sys.executable,
            "-m",
            "cli.main",
            "serve",
            "--log-dirs",
            str(not_a_dir),
            "--listeners",
            "PLAINTEXT://127.0.0.1:0",
        ],
        capture_output=True,
        text=True,
        env=child_env(),
        cwd=tmp_path,
        timeout=30,
    )
    assert unwritable.returncode == 1
    assert unwritable.stderr.splitlines()[-1].startswith("kmock: cannot start: [Errno 17]")


# --- logging ---------------------------------------------------------------------------------


def _record(**extra) -> logging.LogRecord:
    record = logging.LogRecord(
        "broker.connection",
        logging.INFO,
        __file__,
        1,
        "connection %d opened from %s",
        (3, "127.0.0.1"),
        None,
    )
    record.created = 1_700_000_000.123
    record.msecs = 123
    for k, v in extra.items():
        setattr(record, k, v)
    return record


def test_text_log_line_is_ts_level_logger_message_key_values():
    line = TextFormatter().format(_record(group_id="g 1", generation=4))
    assert line == (
        "2023-11-14T22:13:20.123Z INFO broker.connection connection 3 opened from "
        '127.0.0.1 group_id="g 1" generation=4'
    )


def test_json_log_line_carries_the_extras():
    assert json.loads(JsonFormatter().format(_record(group_id="g"))) == {
        "ts": "2023-11-14T22:13:20.123Z",
        "level": "INFO",
        "logger": "broker.connection",
        "message": "connection 3 opened from 127.0.0.1",
        "group_id": "g",
    }
