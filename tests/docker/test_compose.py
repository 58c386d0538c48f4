"""docker-compose.yml in a real engine: health check, a client on the host and one in a
container on the same broker, data and offsets across `restart` and `down`/`up`, SIGTERM
within the grace period, a non-root user, and the example client's `docker compose up`."""

from __future__ import annotations

import time

import pytest

from tests.docker import clients
from tests.docker.conftest import GRACE_S, Stack, docker, logs, wait_event

pytestmark = pytest.mark.docker


def test_host_and_container_clients_share_one_broker(stack):
    on_host = clients.describe(stack.bootstrap)
    in_container = stack.client("describe")
    assert in_container["cluster_id"] == on_host["cluster_id"]

    sent_from_host = clients.produce(stack.bootstrap, "shared", "host", 5)
    sent_from_container = stack.client("produce", "shared", "container", "5")
    assert len(sent_from_container) == 5

    assert stack.client("consume", "shared", "in-container", "host", "5") == sent_from_host
    got = clients.consume(stack.bootstrap, "shared", "on-host", "container", 5)
    assert got == sent_from_container


def test_two_listeners_each_client_told_its_own_address(images):
    stack = Stack()  # docker-compose.yml alone: PLAINTEXT kmock:29092, PLAINTEXT_HOST 127.0.0.1
    try:
        stack.up()
        assert clients.describe(stack.bootstrap)["brokers"] == [stack.bootstrap]
        assert stack.client("describe")["brokers"] == ["kmock:29092"]
        sent = stack.client("produce", "two-listeners", "container", "3")
        assert clients.consume(stack.bootstrap, "two-listeners", "g", "container", 3) == sent
    finally:
        stack.down()


def test_data_and_offsets_survive_restart_and_down_up(stack):
    cluster_id = clients.describe(stack.bootstrap)["cluster_id"]
    sent = clients.produce(stack.bootstrap, "kept", "kept", 6)
    assert clients.consume(stack.bootstrap, "kept", "keeper", "kept", 6) == sent
    committed = clients.committed(stack.bootstrap, "keeper")
    assert sum(committed.values()) == 6  # over the compose file's 3 partitions
    assert len(committed) == 3

    def same_as_before() -> None:
        assert clients.describe(stack.bootstrap)["cluster_id"] == cluster_id
        assert clients.committed(stack.bootstrap, "keeper") == committed
        assert clients.consume(stack.bootstrap, "kept", f"reader-{time.time()}", "kept", 6) == sent

    stack.restart()
    same_as_before()

    stack.compose("down")  # containers and network gone, the named volume kept
    assert docker("volume", "inspect", "--format", "{{.Name}}", stack.volume) == stack.volume
    stack.up()
    same_as_before()


def test_sigterm_stops_within_grace_period_with_logs_flushed(stack):
    sent = clients.produce(stack.bootstrap, "flushed", "flushed", 20)
    cid = stack.container()

    started = time.monotonic()
    stack.compose("stop", "kmock")  # SIGTERM, then SIGKILL after stop_grace_period
    stopped_in = time.monotonic() - started
    assert stopped_in < GRACE_S
    assert docker("inspect", "--format", "{{.State.ExitCode}}", cid) == "0"  # not 137 (KILL)
    lines = logs(cid)
    assert any("stopping signal=SIGTERM" in line for line in lines)
    assert lines[-1].endswith("kmock stopped")  # after every log was fsynced and closed

    since = time.time()
    stack.compose("start", "kmock")
    wait_event(cid, since, "health_status: healthy")
    restarted = logs(cid, since)
    # A clean stop leaves nothing to recover: no cut tail, no index rebuilt.
    assert not [line for line in restarted if "recovered" in line or "unclean" in line]
    assert clients.consume(stack.bootstrap, "flushed", "after-stop", "flushed", 20) == sent


def test_runs_as_a_non_root_user_owning_its_data(stack):
    cid = stack.container()
    assert docker("exec", cid, "id", "-u") == "10001"
    assert docker("exec", cid, "id", "-un") == "kmock"
    owners = docker(
        "exec", cid, "stat", "-c", "%U", "/var/lib/kmock", "/var/lib/kmock/meta.properties"
    )
    assert owners.split() == ["kmock", "kmock"]


def test_compose_up_runs_the_example_client(stack):
    # `docker compose up` of the README, on the stack whose broker is already up: the client
    # waits for the health check, then produces and reads back its records.
    try:
        out = stack.compose("up", "--no-build", "--exit-code-from", "example-client")
        assert "ok: every record came back" in out
    finally:
        stack.up()  # --exit-code-from stopped the broker too
