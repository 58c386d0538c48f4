"""`kmock serve`: settings from every source, the parser, the process (signals, exit codes) and
its log formats. `serve` runs as `python -m cli.main` so that it owns its signals."""

from __future__ import annotations

import io
import json
import logging
import resource
import signal
import socket
import subprocess
import sys

import pytest
import trio

from broker.config import SETTINGS, ConfigError
from broker.logging_setup import JsonFormatter, TextFormatter
from cli.commands.serve import serve_config
from cli.main import build_parser, main
from client import KafkaClient
from tests.cli.harness import SCENARIO_S
from tests.reliability.process import child_env, run_python

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


def test_version_is_the_installed_distributions():
    from importlib.metadata import version

    from cli.output import kmock_version

    assert kmock_version() == version("kmock")


def test_serve_does_not_import_what_only_other_commands_and_metrics_need():
    # Start-up time: these are imported by the admin commands, by /metrics, by an API's
    # first request (broker.routes), by the first TLS or SASL connection and by an authorizer
    # (broker.security.enforce, authz), when used.
    code = (
        "import sys, cli.main, broker.server, broker.runtime;"
        "cli.output.kmock_version();"
        "print(sorted({'client', 'rich', 'prometheus_client', 'pipeline.cli',"
        " 'importlib.metadata', 'broker.handlers.produce', 'broker.handlers.create_acls',"
        " 'broker.security.gate', 'broker.security.authenticator', 'broker.security.scram',"
        " 'cramjam', 'broker.security.apis', 'broker.security.checks', 'broker.security.acls'}"
        " & set(sys.modules)))"
    )
    assert run_python(code) == "[]\n"


def test_serve_imports_with_the_collector_off_and_runs_with_it_on(tmp_path):
    # Start-up time (cli.main): no collector pass during the imports; the broker then runs
    # with the collector on and the imported objects frozen. trio.run is replaced by a probe.
    code = (
        "import gc, sys, trio, cli.main;"
        "seen = []; passes = lambda: gc.get_stats()[0]['collections']; before = passes();"
        "trio.run = lambda *a: seen.append("
        " (gc.isenabled(), gc.get_freeze_count() > 10_000, passes() - before <= 1));"
        "code = cli.main.main(['serve', '--log-dirs', sys.argv[1],"
        " '--listeners', 'PLAINTEXT://127.0.0.1:0']);"
        "bad = cli.main.main(['serve', '--listeners', 'nope']);"
        "print(code, seen, bad, gc.isenabled())"
    )
    assert run_python(code, str(tmp_path)) == "0 [(True, True, True)] 2 True\n"


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


def test_kmock_flags_named_for_users():
    config = serve_config(
        serve_args("--durability", "strict", "--create-topics", "orders:3,events:1"), {}
    )
    assert config["kmock.durability"] == "strict"
    assert config["kmock.create.topics"] == "orders:3,events:1"
    env = {
        "KAFKA_CREATE_TOPICS": "a:1",
        "KAFKA_LISTENERS": "PLAINTEXT://127.0.0.1:29092,PLAINTEXT_HOST://127.0.0.1:9092",
        "KAFKA_LISTENER_SECURITY_PROTOCOL_MAP": "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT",
        "KAFKA_OPTS": "-Xmx1G",  # the image's JVM variables are not settings, nor warned about
    }
    config = serve_config(serve_args(), env)
    assert config["kmock.create.topics"] == "a:1"
    assert config["listener.security.protocol.map"].endswith("PLAINTEXT_HOST:PLAINTEXT")


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
        (
            ["--listeners", "127.0.0.1:9092"],
            {},
            "Unable to parse 127.0.0.1:9092 to a broker endpoint",
        ),
        (
            ["--listeners", "SSL://127.0.0.1:9093"],
            {},
            "listener SSL uses TLS: set ssl.keystore.location",
        ),
        ([], {"KAFKA_AUTO_CREATE_TOPICS_ENABLE": "maybe"}, "not a valid boolean"),
        (["--create-topics", "orders:x"], {}, "kmock.create.topics: 'orders:x': partitions"),
        (["--durability", "sometimes"], {}, "kmock.durability: 'sometimes' is not one of"),
        ([], {"KAFKA_CREATE_TOPICS": "orders"}, "kmock.create.topics: 'orders' is not name"),
        (
            ["--listeners", "PLAINTEXT://:9092,PLAINTEXT_HOST://:9093"],
            {},
            "No security protocol defined for listener PLAINTEXT_HOST",
        ),
        (["/no/such/server.properties"], {}, "cannot read /no/such/server.properties"),
        (
            ["--override", "group.consumer.assignors=sticky"],
            {},
            "group.consumer.assignors: ",
        ),
        (
            [],
            {"KAFKA_GROUP_CONSUMER_MIGRATION_POLICY": "sideways"},
            "group.consumer.migration.policy: 'sideways' is not one of",
        ),
        # Kafka's ConfigDef bounds (atLeast) and INT range, checked at start as Kafka does
        (
            ["--override", "fetch.max.bytes=10"],
            {},
            "Invalid value 10 for configuration fetch.max.bytes: Value must be at least 1024",
        ),
        (
            [],
            {"KAFKA_NUM_PARTITIONS": "0"},
            "Invalid value 0 for configuration num.partitions: Value must be at least 1",
        ),
        (
            ["--override", "offsets.topic.num.partitions=-3"],
            {},
            "offsets.topic.num.partitions: Value must be at least 1",
        ),
        (["--num-partitions", "2147483648"], {}, "num.partitions: 2147483648 is not a valid int"),
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
    # Started with a soft limit on descriptors below the hard one: serve raises it (as the
    # JVM that runs Kafka does).
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    low = min(soft, hard // 2) if hard != resource.RLIM_INFINITY else min(soft, 1024)

    def lower_soft_limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (low, hard))

    with trio.fail_after(SCENARIO_S):
        proc = await trio.lowlevel.open_process(
            argv,
            stderr=subprocess.PIPE,
            env=child_env(),
            cwd=str(tmp_path),
            preexec_fn=lower_soft_limit,
        )
        seen = bytearray()
        try:
            await _read_until(proc.stderr, "kmock listening on", seen)
            limits = await trio.Path(f"/proc/{proc.pid}/limits").read_text()
            files = next(line for line in limits.splitlines() if line.startswith("Max open files"))
            assert files.split()[3:5] == [str(hard), str(hard)] or hard == resource.RLIM_INFINITY
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
        "kmock: listeners: Error creating broker listeners from 'nope': Unable to parse nope "
        "to a broker endpoint (expected NAME://host:port)"
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
