"""The container pieces, without a Docker engine: the entry point script (run with bash and
sh, `kmock` replaced by a stub that prints what it got), the mapping of its environment to
settings through load_config, docker-compose.yml's structure and health check (run against
a live admin endpoint), the Dockerfile's essentials, and the compose demo client against a
live broker. tests/docker/ runs all of it in a real engine (`make docker-test`).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import trio
import yaml

from broker.broker import listener_setup
from broker.config import load_config
from broker.server import serve
from broker.startup_topics import startup_topics

ROOT = Path(__file__).resolve().parents[2]
ENTRYPOINT = ROOT / "docker" / "entrypoint.sh"
EXAMPLE_CLIENT = ROOT / "docker" / "client" / "example_client.py"
SCENARIO_S = 60

STUB = """#!/bin/sh
exec "{python}" -c '
import json, os, sys
print(json.dumps({{"args": sys.argv[1:],
                  "env": {{k: v for k, v in os.environ.items() if k.startswith("KAFKA_")}}}}))
' "$@"
"""


@pytest.fixture
def stub_path(tmp_path) -> str:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stub = bin_dir / "kmock"
    stub.write_text(STUB.format(python=sys.executable))
    stub.chmod(0o755)
    return f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin"


def run_entrypoint(path: str, *args: str, shell: str = "bash", **env: str) -> dict:
    base = {"PATH": path}
    done = subprocess.run(
        [shell, str(ENTRYPOINT), *args],
        env={**base, **env},
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return json.loads(done.stdout)


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_entrypoint_container_defaults(stub_path, shell):
    got = run_entrypoint(stub_path, "--num-partitions", "3", shell=shell)
    assert got["args"] == ["serve", "--num-partitions", "3"]
    assert got["env"] == {
        "KAFKA_LISTENERS": "PLAINTEXT://0.0.0.0:9092",
        "KAFKA_LOG_DIRS": "/var/lib/kmock",
        "KAFKA_ADMIN_PORT": "8080",
        "KAFKA_ADMIN_HOST": "0.0.0.0",
        "KAFKA_ADVERTISED_LISTENERS": "PLAINTEXT://localhost:9092",
    }


def test_entrypoint_keeps_what_the_user_set(stub_path):
    got = run_entrypoint(
        stub_path,
        "serve",
        "/etc/kmock/server.properties",
        KAFKA_LISTENERS="PLAINTEXT://0.0.0.0:19092",
        KAFKA_LOG_DIRS="/data",
        KAFKA_NUM_PARTITIONS="6",
    )
    assert got["args"] == ["serve", "/etc/kmock/server.properties"]
    assert got["env"]["KAFKA_LISTENERS"] == "PLAINTEXT://0.0.0.0:19092"
    assert got["env"]["KAFKA_LOG_DIRS"] == "/data"
    assert got["env"]["KAFKA_NUM_PARTITIONS"] == "6"
    # The advertised port follows the listener's.
    assert got["env"]["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://localhost:19092"

    got = run_entrypoint(stub_path, KAFKA_ADVERTISED_LISTENERS="PLAINTEXT://kmock:9092")
    assert got["env"]["KAFKA_ADVERTISED_LISTENERS"] == "PLAINTEXT://kmock:9092"


@pytest.mark.parametrize("shell", ["bash", "sh"])
def test_entrypoint_advertises_every_listener_on_localhost_by_default(stub_path, shell):
    got = run_entrypoint(
        stub_path,
        shell=shell,
        KAFKA_LISTENERS="PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092",
    )
    assert got["env"]["KAFKA_ADVERTISED_LISTENERS"] == (
        "PLAINTEXT://localhost:29092,PLAINTEXT_HOST://localhost:9092"
    )


def test_compose_environment_gives_one_address_per_network(stub_path):
    """docker-compose.yml's broker settings, through the entry point and kmock's own
    reading of them (compose's `${VAR:-default}` taken at its default): containers are told
    kmock:29092, the host 127.0.0.1:9092."""
    env = {
        k: re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", str(v))
        for k, v in compose()["services"]["kmock"]["environment"].items()
    }
    config = load_config(environ=run_entrypoint(stub_path, **env)["env"])
    setup = listener_setup(config)
    assert [(e.listener, e.host, e.port) for e in setup.listeners] == [
        ("PLAINTEXT", "0.0.0.0", 29092),
        ("PLAINTEXT_HOST", "0.0.0.0", 9092),
    ]
    assert {n: (e.host, e.port) for n, e in setup.advertised.items()} == {
        "PLAINTEXT": ("kmock", 29092),
        "PLAINTEXT_HOST": ("127.0.0.1", 9092),
    }
    assert [(t.name, t.num_partitions) for t in startup_topics(config)] == [("demo", 3)]


def test_entrypoint_runs_admin_commands_without_serve_defaults(stub_path):
    got = run_entrypoint(stub_path, "topics", "list", "--bootstrap-server", "kmock:9092")
    assert got == {"args": ["topics", "list", "--bootstrap-server", "kmock:9092"], "env": {}}


def test_entrypoint_environment_becomes_settings(stub_path):
    got = run_entrypoint(
        stub_path,
        KAFKA_NUM_PARTITIONS="3",
        KAFKA_AUTO_CREATE_TOPICS_ENABLE="false",
        KAFKA_GROUP_INITIAL_REBALANCE_DELAY_MS="0",
    )
    config = load_config(environ=got["env"])
    assert config["listeners"] == "PLAINTEXT://0.0.0.0:9092"
    assert config["advertised.listeners"] == "PLAINTEXT://localhost:9092"
    assert config["log.dirs"] == "/var/lib/kmock"
    assert (config["admin.port"], config["admin.host"]) == (8080, "0.0.0.0")
    assert config["num.partitions"] == 3
    assert config["auto.create.topics.enable"] is False
    assert config["group.initial.rebalance.delay.ms"] == 0


# --- docker-compose.yml and the Dockerfile ---------------------------------------------------


def compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_services_listeners_volume_and_health_check():
    c = compose()
    assert "name" not in c  # docker-compose 1.29 refuses a top-level name
    assert set(c["services"]) == {"kmock", "example-client"}
    broker = c["services"]["kmock"]
    assert broker["build"] == "."
    assert "kmock-data:/var/lib/kmock" in broker["volumes"]
    assert "kmock-data" in c["volumes"]
    assert set(broker["ports"]) == {
        "127.0.0.1:${KMOCK_HOST_PORT:-9092}:9092",
        "127.0.0.1:${KMOCK_ADMIN_PORT:-8080}:8080",
    }
    env = broker["environment"]
    assert env["KAFKA_LISTENERS"] == "PLAINTEXT://0.0.0.0:29092,PLAINTEXT_HOST://0.0.0.0:9092"
    assert (
        env["KAFKA_LISTENER_SECURITY_PROTOCOL_MAP"]
        == "PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT"
    )
    assert env["KAFKA_ADVERTISED_LISTENERS"] == (
        "PLAINTEXT://kmock:29092,PLAINTEXT_HOST://127.0.0.1:${KMOCK_HOST_PORT:-9092}"
    )
    assert "restart" not in broker  # a bad setting must not become a restart loop
    test = broker["healthcheck"]["test"]
    assert test[:3] == ["CMD", "python", "-c"]
    assert "http://127.0.0.1:8080/readyz" in test[3]
    client = c["services"]["example-client"]
    assert client["build"] == "docker/client"
    assert client["depends_on"] == {"kmock": {"condition": "service_healthy"}}
    assert client["environment"]["BOOTSTRAP_SERVERS"] == "kmock:29092"
    assert EXAMPLE_CLIENT.exists()


def test_dockerfile_essentials():
    text = (ROOT / "Dockerfile").read_text()
    lines = [
        line.strip() for line in text.splitlines() if line.strip() and not line.startswith("#")
    ]
    froms = [line for line in lines if line.startswith("FROM ")]
    assert all(line.split()[1] == "python:3.11-slim" for line in froms)
    assert "USER kmock" in lines
    assert "VOLUME /var/lib/kmock" in lines
    assert any(line.startswith("EXPOSE 9092") for line in lines)
    assert 'ENTRYPOINT ["/opt/kmock/docker/entrypoint.sh"]' in lines
    assert "COPY docker/entrypoint.sh /opt/kmock/docker/entrypoint.sh" in lines
    assert "pip install --no-index /wheels/*.whl" in text
    assert any(line.startswith("HEALTHCHECK ") for line in lines)
    assert os.access(ENTRYPOINT, os.X_OK)


async def test_compose_health_check_command_against_a_live_broker(nursery, tmp_path):
    config = load_config(
        overrides={
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path),
            "admin.port": 0,
        }
    )
    broker = await nursery.start(serve, config)
    code = compose()["services"]["kmock"]["healthcheck"]["test"][3].replace(
        "127.0.0.1:8080", "{}:{}".format(*broker.admin_address)
    )
    with trio.fail_after(SCENARIO_S):
        await broker.ready.wait()
        done = await trio.run_process([sys.executable, "-c", code], check=False)
    assert done.returncode == 0


@pytest.mark.integration
async def test_compose_example_client_against_a_live_broker(nursery, tmp_path):
    config = load_config(
        overrides={
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(tmp_path),
            "num.partitions": 3,
        }
    )
    broker = await nursery.start(serve, config)
    env = {**os.environ, "BOOTSTRAP_SERVERS": broker.bootstrap_servers, "COUNT": "5"}
    with trio.fail_after(SCENARIO_S):
        await broker.ready.wait()
        done = await trio.run_process(
            [sys.executable, str(EXAMPLE_CLIENT)],
            env=env,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
    assert done.returncode == 0, done.stderr.decode()
    assert done.stdout.decode().splitlines()[-1] == "ok: every record came back"
