"""The image with `docker run`, as the README's Docker section runs it: its commands are
read from the README and run with only the host ports and the volume name changed, so
the section is what these tests run. Also: each settings source and its precedence, and
bad settings that stop the container with one line and exit code 2, without restarting."""

from __future__ import annotations

import re
import shlex
import time
import uuid
from pathlib import Path

import pytest
from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType

from tests.docker import clients
from tests.docker.conftest import IMAGE, ROOT, docker, free_port, logs, wait_event

pytestmark = pytest.mark.docker

WAIT_S = 60  # for a container with a bad setting to exit


def readme_docker_runs() -> list[str]:
    """The `docker run` commands of the README's Docker section, continuation lines joined."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text.split("### With Docker", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```sh\n(.*?)```", section, re.S)
    commands = "\n".join(blocks).replace("\\\n", " ")
    return [
        " ".join(line.split()) for line in commands.splitlines() if line.startswith("docker run")
    ]


def start_readme_run(names: list[str], command: str, **replace: str) -> tuple[str, int]:
    """Run one README `docker run` detached, on free host ports; (container, host port)."""
    name = f"kmocktest-{uuid.uuid4().hex[:8]}"
    names.append(name)
    port = free_port()
    text = command.replace("127.0.0.1:9092", f"127.0.0.1:{port}")
    text = text.replace("127.0.0.1:8080:8080", f"127.0.0.1:{free_port()}:8080")
    text = text.replace("kmock-data:", f"{name}-data:")
    for old, new in replace.items():
        text = text.replace(old, new)
    argv = shlex.split(text)
    assert argv[:2] == ["docker", "run"]
    since = time.time()
    docker(*argv[1:2], "--detach", "--name", name, *argv[2:])
    wait_event(name, since, "health_status: healthy")
    return name, port


def test_base_image_has_python_pip_and_venv(images):
    # What the Dockerfile needs of its base, python:3.11-slim or the stand-in CI makes for it.
    base = re.findall(r"^FROM\s+(\S+)", (ROOT / "Dockerfile").read_text(), re.M)[-1]
    script = "python -m venv /tmp/v && /tmp/v/bin/python -m pip --version && python --version"
    out = docker("run", "--rm", "--user", "nobody", base, "sh", "-c", script).splitlines()
    assert out[0].startswith("pip ")
    assert " from /tmp/v/" in out[0]  # the venv's own pip
    major, minor = map(int, out[1].split()[1].split(".")[:2])
    assert (major, minor) >= (3, 11)


def test_readme_docker_run_serves_the_host(container_names):
    (command,) = [c for c in readme_docker_runs() if "kmock-data" in c]
    name, port = start_readme_run(container_names, command)
    bootstrap = f"127.0.0.1:{port}"
    assert clients.describe(bootstrap)["brokers"] == [bootstrap]
    sent = clients.produce(bootstrap, "readme", "readme", 3)
    assert clients.consume(bootstrap, "readme", "g", "readme", 3) == sent
    assert docker("exec", name, "id", "-u") == "10001"


def broker_configs(bootstrap: str, *names: str) -> dict[str, str]:
    """name -> value, as DescribeConfigs reports them."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        resource = ConfigResource(ConfigResourceType.BROKER, "0", dict.fromkeys(names))
        (described,) = admin.describe_configs([resource], config_filter="all")["broker"].values()
    finally:
        admin.close()
    return {n: c["value"] for n, c in described.items()}


def test_properties_file_environment_and_flags_in_that_order(container_names, tmp_path: Path):
    properties = tmp_path / "server.properties"
    properties.write_text("num.partitions=7\nlog.retention.hours=24\nmessage.max.bytes=2000000\n")
    properties.chmod(0o644)
    (command,) = [c for c in readme_docker_runs() if "server.properties" in c]
    _, port = start_readme_run(container_names, command, **{"$PWD": str(tmp_path)})
    bootstrap = f"127.0.0.1:{port}"
    got = broker_configs(bootstrap, "num.partitions", "log.retention.hours", "message.max.bytes")
    assert got == {
        "message.max.bytes": "2000000",  # the file
        "num.partitions": "3",  # KAFKA_NUM_PARTITIONS over the file's 7
        "log.retention.hours": "1",  # --log-retention-hours over the file's 24
    }
    clients.produce(bootstrap, "auto-created", "x", 1)
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        (topic,) = admin.describe_topics(["auto-created"])
    finally:
        admin.close()
    assert len(topic["partitions"]) == 3


BAD_PROPERTIES = "/etc/kmock/bad.properties"
# source -> (docker run options, kmock arguments, what the line names)
BAD_SETTINGS = {
    "environment": (["-e", "KAFKA_NUM_PARTITIONS=many"], [], "num.partitions: 'many'"),
    "flag": ([], ["--num-partitions", "many"], "num.partitions: 'many'"),
    "file value": (["-v", "{props}:" + BAD_PROPERTIES], [BAD_PROPERTIES], "num.partitions: 'many'"),
    "file name": (["-v", "{unknown}:" + BAD_PROPERTIES], [BAD_PROPERTIES], "no.such.setting"),
}


@pytest.mark.parametrize("source", list(BAD_SETTINGS))
def test_bad_setting_stops_with_one_line_and_no_restart(container_names, tmp_path, source):
    (tmp_path / "props").write_text("num.partitions=many\n")
    (tmp_path / "unknown").write_text("no.such.setting=1\n")
    for f in tmp_path.iterdir():
        f.chmod(0o644)
    run_args, args, named = BAD_SETTINGS[source]
    run_args = [a.format(props=tmp_path / "props", unknown=tmp_path / "unknown") for a in run_args]
    name = f"kmocktest-{uuid.uuid4().hex[:8]}"
    container_names.append(name)
    # No restart policy, as in docker-compose.yml: the container stays stopped.
    docker("run", "--detach", "--name", name, *run_args, IMAGE, *args)
    assert docker("wait", name, timeout=WAIT_S) == "2"
    lines = logs(name)
    assert len(lines) == 1, lines
    assert lines[0].startswith("kmock: ")
    assert named in lines[0]
    assert docker("inspect", "--format", "{{.RestartCount}} {{.State.Status}}", name) == "0 exited"
