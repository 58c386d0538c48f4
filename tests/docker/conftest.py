"""The image and docker-compose.yml in a real Docker engine (`make docker-test`).

These tests run only when selected with `-m docker` (make docker-test, docker/ci.sh, which
also provides the engine and the base image); a plain `pytest` deselects them, so `make
test` does not run them twice or need an engine.

Every wait is on an event with a deadline: `docker events` for health and exits,
`docker wait` for a stop. Each stack is a compose project of its own with its own host
ports, removed with its volumes at the end.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
IMAGE = "kmock:latest"
CLIENT_IMAGE = "kmock-example-client:latest"
CLIENTS_SCRIPT = Path(__file__).with_name("clients.py")
STEP_S = 120  # deadline of one docker or compose command (a build takes about 60 s)
HEALTHY_S = 60  # from `up` or `restart` to the health check passing
GRACE_S = 30  # docker-compose.yml's stop_grace_period


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if "docker" in (config.option.markexpr or ""):
        return
    deselected = [item for item in items if item.get_closest_marker("docker")]
    if deselected:
        items[:] = [item for item in items if not item.get_closest_marker("docker")]
        config.hook.pytest_deselected(items=deselected)


def run(*cmd: str, timeout: float = STEP_S, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, check=False)
    if check and done.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
        )
    return done


def docker(*args: str, timeout: float = STEP_S, check: bool = True) -> str:
    return run("docker", *args, timeout=timeout, check=check).stdout.strip()


def compose_command() -> list[str]:
    """KMOCK_COMPOSE if set ("docker compose"), else Debian's docker-compose (v1), else v2."""
    if os.environ.get("KMOCK_COMPOSE"):
        return os.environ["KMOCK_COMPOSE"].split()
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return ["docker", "compose"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def logs(container: str, since: float | None = None) -> list[str]:
    """The container's output lines (kmock logs to stderr), all or those after `since`."""
    after = ["--since", f"{since:.6f}"] if since is not None else []
    done = run("docker", "logs", *after, container, check=False)
    return (done.stdout + done.stderr).splitlines()


def wait_event(container: str, since: float, want: str, timeout: float = HEALTHY_S) -> None:
    """Wait for the container's `want` event ("health_status: healthy", "die") after its
    first `start` since `since`; a `die` on the way fails with the container's logs."""
    proc = subprocess.Popen(
        [
            "docker", "events", "--since", f"{since:.6f}", "--format", "{{.Action}}",
            "--filter", f"container={container}", "--filter", "event=start",
            "--filter", "event=die", "--filter", "event=health_status",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    # A thread reads the lines: events that happened before the reader started (`--since`)
    # come in one burst, which a select() on the pipe would see as one.
    lines: queue.Queue[str] = queue.Queue()
    reader = threading.Thread(
        target=lambda: [lines.put(x.strip()) for x in proc.stdout], daemon=True
    )
    reader.start()
    deadline = time.monotonic() + timeout
    started = False
    try:
        while (left := deadline - time.monotonic()) > 0:
            try:
                action = lines.get(timeout=left)
            except queue.Empty:
                break
            if action == "start":
                started = True
            elif started and action == want:
                return
            elif started and action == "die":
                tail = "\n".join(logs(container)[-10:])
                raise AssertionError(f"container {container} exited:\n{tail}")
    finally:
        proc.kill()
        proc.wait()
    raise AssertionError(f"no {want!r} from {container} in {timeout} s (started: {started})")


class Stack:
    """One compose project of docker-compose.yml (plus override files)."""

    def __init__(self, *overrides: Path) -> None:
        self.project = f"kmocktest{uuid.uuid4().hex[:8]}"
        self.host_port = free_port()
        self.admin_port = free_port()
        self.files = [ROOT / "docker-compose.yml", *overrides]
        self.env = {
            **os.environ,
            "KMOCK_HOST_PORT": str(self.host_port),
            "KMOCK_ADMIN_PORT": str(self.admin_port),
        }

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.host_port}"

    @property
    def volume(self) -> str:
        return f"{self.project}_kmock-data"

    def compose(self, *args: str, timeout: float = STEP_S, check: bool = True) -> str:
        cmd = [*compose_command(), "--project-name", self.project]
        for f in self.files:
            cmd += ["--file", str(f)]
        done = subprocess.run(
            [*cmd, *args],
            cwd=ROOT,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
        if check and done.returncode != 0:
            raise AssertionError(
                f"compose {' '.join(args)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}"
            )
        return done.stdout.strip()

    def container(self, service: str = "kmock") -> str:
        return self.compose("ps", "--quiet", service)

    def up(self) -> str:
        """Start the broker and wait for its health check; its container id."""
        since = time.time()
        self.compose("up", "--detach", "--no-build", "kmock")
        cid = self.container()
        wait_event(cid, since, "health_status: healthy")
        return cid

    def restart(self) -> None:
        since = time.time()
        self.compose("restart", "kmock")
        wait_event(self.container(), since, "health_status: healthy")

    def client(self, *args: str) -> dict | list:
        """clients.py in a new example-client container, at the address compose gives it."""
        out = self.compose(
            "run", "--rm", "--no-deps",
            "--volume", f"{CLIENTS_SCRIPT}:/app/clients.py:ro",
            "example-client", "python", "/app/clients.py", self.client_bootstrap, *args,
        )  # fmt: skip
        return json.loads(out.splitlines()[-1])

    @property
    def client_bootstrap(self) -> str:
        return "kmock:29092"  # the compose file's PLAINTEXT listener, for containers

    def down(self) -> None:
        self.compose("down", "--volumes", "--remove-orphans", check=False)


@pytest.fixture(scope="session")
def images() -> None:
    """kmock:latest and the example client, built as `docker compose build` builds them."""
    Stack().compose("build", timeout=2 * STEP_S + 60)


@pytest.fixture(scope="module")
def stack(images: None) -> Iterator[Stack]:
    """The compose file as the README runs it, broker started and healthy. One per module,
    to save the engine's time: each test uses its own topics and groups, and leaves the
    broker healthy."""
    s = Stack()
    try:
        s.up()
        yield s
    finally:
        s.down()


@pytest.fixture
def container_names(images: None) -> Iterator[list[str]]:
    """Containers a test starts with `docker run`, removed afterwards with their volumes
    (anonymous, and the `<name>-data` of the README's command)."""
    names: list[str] = []
    yield names
    for name in names:
        docker("rm", "--force", "--volumes", name, check=False)
        docker("volume", "rm", f"{name}-data", check=False)
