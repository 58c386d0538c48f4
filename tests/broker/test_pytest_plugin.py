"""The `kmock` pytest plugin: a user's suite run through pytester, and KmockBroker itself."""

from __future__ import annotations

import importlib.metadata
import os
import socket
from pathlib import Path

import pytest

from broker.pytest_plugin import KmockBroker
from client import KafkaClient

pytest_plugins = ["pytester"]

SAMPLE = Path(__file__).parent / "plugin_sample" / "sample_kafka_suite.py"
ROOT = Path(__file__).resolve().parents[2]


def plugin_args() -> list[str]:
    """Load the plugin by module name unless kmock is installed (then its entry point does)."""
    installed = any(
        ep.name == "kmock" and ep.value == "broker.pytest_plugin"
        for ep in importlib.metadata.entry_points(group="pytest11")
    )
    return [] if installed else ["-p", "broker.pytest_plugin"]


@pytest.fixture
def user_suite(pytester, monkeypatch):
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join([str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])])
    )
    pytester.makepyfile(test_sample=SAMPLE.read_text())
    return pytester


@pytest.mark.integration
@pytest.mark.slow
def test_a_users_suite_with_kafka_python(user_suite):
    user_suite.makeini("[pytest]\nkmock_config =\n    num.partitions=2\n")
    result = user_suite.runpytest_subprocess(*plugin_args(), "-p", "no:cacheprovider", timeout=120)
    result.assert_outcomes(passed=10)


def test_unknown_setting_fails_the_run_at_once(pytester):
    pytester.makepyfile(test_nothing="def test_nothing():\n    pass\n")
    result = pytester.runpytest_inprocess(*plugin_args(), "--kmock-config", "num.partition=2")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--kmock-config: unknown kmock setting 'num.partition'*"])


def test_restart_keeps_port_and_data(tmp_path):
    broker = KmockBroker(tmp_path, {"offsets.topic.num.partitions": 1})
    broker.start()
    try:
        port = broker.port
        assert broker.bootstrap_servers == f"127.0.0.1:{port}"
        with KafkaClient(broker.bootstrap_servers, timeout_s=10) as client:
            client.create_topic("kept", num_partitions=2)
        broker.restart()
        assert broker.port == port
        assert broker.config["listeners"] == f"PLAINTEXT://127.0.0.1:{port}"
        with KafkaClient(broker.bootstrap_servers, timeout_s=10) as client:
            assert client.partition_count("kept") == 2
    finally:
        broker.stop()
    assert not broker.running
    broker.stop()  # stopping twice is harmless


def test_start_failure_is_raised_in_the_test(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = KmockBroker(tmp_path, {"listeners": f"PLAINTEXT://127.0.0.1:{port}"})
        with pytest.raises(OSError, match="Address already in use"):
            broker.start()
    assert not broker.running


SCHEMA_REGISTRY_SUITE = """
import json
import urllib.request

import pytest


def post(url, body):
    req = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read())


@pytest.mark.kmock_config(schema_registry=True)
def test_registry(kmock):
    url = kmock.schema_registry_url
    assert post(url + "/subjects/s/versions", {"schema": '"string"'}) == {"id": 1}
    kmock.restart()
    assert kmock.schema_registry_url == url
    with urllib.request.urlopen(url + "/subjects/s/versions", timeout=10) as r:
        assert json.loads(r.read()) == [1]


def test_no_registry_unless_asked(kmock):
    with pytest.raises(RuntimeError, match="schema_registry=True"):
        kmock.schema_registry_url
"""


def test_schema_registry_option_of_the_fixture(pytester):
    pytester.makepyfile(test_registry=SCHEMA_REGISTRY_SUITE)
    result = pytester.runpytest_inprocess(*plugin_args(), "-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_a_taken_schema_registry_port_names_the_setting(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        broker = KmockBroker(tmp_path, {"kmock.schema.registry.port": port})
        with pytest.raises(OSError, match=f"kmock.schema.registry.port 127.0.0.1:{port}: "):
            broker.start()
    assert not broker.running
