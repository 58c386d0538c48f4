"""pytest fixtures that give a test a real kmock broker (the `kmock` pytest11 plugin).

    def test_orders(kmock):
        producer = KafkaProducer(bootstrap_servers=kmock.bootstrap_servers)
        ...
        kmock.restart()          # graceful stop, then start again: same port, same data

`kmock` is a fresh broker per test (its own data directory); `kmock_session` is one broker
for the whole session. Each runs in a background thread with its own `trio.run`, so the
test itself can be sync, asyncio or anything else, and listens on 127.0.0.1 at a port the
OS picks on first start. The port is then pinned, so clients keep working across
`restart()`.

Settings, by Kafka name, in increasing precedence:
  * ini:   `kmock_config` lines, e.g. in pytest.ini  `kmock_config = num.partitions=3`
  * flag:  `--kmock-config num.partitions=3` (repeatable)
  * mark:  `@pytest.mark.kmock_config({"num.partitions": 3})` or
           `@pytest.mark.kmock_config(num_partitions=3)` (`_` for `.`), `kmock` only.
`KAFKA_*` environment variables are not read: a test suite gets the same broker on every
machine.

Test controls (docs/controls.md), as methods that call the broker's /v1 admin endpoint:

    kmock.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)   # the next 2 Produce fail
    kmock.fail("Fetch", delay_ms=500)  /  kmock.fail("JoinGroup", action="disconnect")
    kmock.advance(ms=45_000)           # with @pytest.mark.kmock_config(kmock_clock="virtual")
    kmock.journal(api="OffsetCommit")  # decoded requests and answers, oldest first
    kmock.close_connections()          # what a network blip looks like to a client

Two defaults differ from `kmock serve`'s (FIXTURE_DEFAULTS): offsets.topic.num.partitions is
1, so that a fresh broker per test does not create 50 __consumer_offsets partitions when its
test first uses a group (clients cannot tell: they ask FindCoordinator, and the answer is
this broker either way); and admin.port is 0, so that the controls are on, on a free port of
127.0.0.1.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

__all__ = ["KmockBroker", "kmock", "kmock_session"]

START_TIMEOUT_S = 30.0
STOP_TIMEOUT_S = 30.0
# Settings the fixtures use unless told otherwise (see the module docstring).
FIXTURE_DEFAULTS = {"offsets.topic.num.partitions": 1, "admin.port": 0}


class KmockBroker:
    """A kmock broker in a background thread: `start()`, `stop()`, `restart()`.

    Attributes:
      data_dir: the broker's log.dirs, kept across restarts.
      config: the `broker.config.Config` it runs with (after the first start, its
        listener names the pinned port).
      broker: the running `broker.broker.Broker`, or None. It belongs to the broker's
        thread: read from it, do not call into it.
    """

    def __init__(self, data_dir: Path, overrides: Mapping[str, Any] | None = None) -> None:
        from broker.config import load_config

        self._overrides: dict[str, Any] = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data_dir),
            **(overrides or {}),
        }
        self.config = load_config(overrides=self._overrides)
        self.data_dir = Path(self.config["log.dirs"])
        self.broker: Any = None
        self._thread: threading.Thread | None = None
        self._started = threading.Event()
        self._token: Any = None
        self._error: BaseException | None = None

    def __repr__(self) -> str:
        state = self.bootstrap_servers if self.running else "stopped"
        return f"<KmockBroker {state} data_dir={str(self.data_dir)!r}>"

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive() and self.broker is not None

    @property
    def bootstrap_servers(self) -> str:
        """ "127.0.0.1:PORT", for any Kafka client's bootstrap_servers."""
        if self.broker is None:
            raise RuntimeError("kmock is not running")
        return str(self.broker.bootstrap_servers)

    @property
    def port(self) -> int:
        if self.broker is None:
            raise RuntimeError("kmock is not running")
        return int(self.broker.addresses[0][1])

    # --- test controls (broker.controls.api over HTTP) ----------------------------------------

    @property
    def admin_address(self) -> str:
        """ "127.0.0.1:PORT" of the admin endpoint (the /v1 controls)."""
        if self.broker is None:
            raise RuntimeError("kmock is not running")
        if self.broker.admin_address is None:
            raise RuntimeError("the admin endpoint is off (admin.port=-1): no controls")
        host, port = self.broker.admin_address
        return f"{host}:{port}"

    def control(
        self, method: str, path: str, body: Any = None, query: dict[str, Any] | None = None
    ) -> Any:
        """Any /v1 control: `kmock.control("GET", "/v1/clock")`.

        Raises:
          broker.controls.http_client.ControlRefused (a ValueError): bad input, with the
            broker's message naming the field; nothing changed.
        """
        from broker.controls.http_client import call

        return call(self.admin_address, method, path, body, query=query)

    def fail(
        self, api: str | int, error: str | int | None = None, count: int = 1, **options: Any
    ) -> dict[str, Any]:
        """Answer the next `count` requests of `api` with `error` (by name or code), where
        Kafka places it. `options`: topic, partition, group_id, client_id, delay_ms,
        action ("disconnect" or "drop"). Returns the fault as the broker lists it."""
        spec = {"api": api, "count": count, **options}
        if error is not None:
            spec["error"] = error
        return dict(self.control("POST", "/v1/faults", spec)["faults"][0])

    def fail_storage(self, what: str, count: int = 1, **options: Any) -> dict[str, Any]:
        """Fail the next `count` appends or fsyncs (`what`: "append" or "fsync") with
        KAFKA_STORAGE_ERROR; `options`: topic, partition."""
        spec = {"storage": what, "count": count, **options}
        return dict(self.control("POST", "/v1/faults", spec)["faults"][0])

    def faults(self) -> list[dict[str, Any]]:
        return list(self.control("GET", "/v1/faults")["faults"])

    def clear_faults(self) -> int:
        return int(self.control("DELETE", "/v1/faults")["cleared"])

    def advance(self, ms: int) -> dict[str, Any]:
        """Move a virtual clock `ms` on; every timer due fires before this returns."""
        return dict(self.control("POST", "/v1/clock/advance", {"ms": ms}))

    def clock(self) -> dict[str, Any]:
        return dict(self.control("GET", "/v1/clock"))

    def journal(
        self,
        api: str | int | None = None,
        *,
        group_id: str | None = None,
        client_id: str | None = None,
        topic: str | None = None,
        since: int | None = None,
    ) -> list[dict[str, Any]]:
        """The journal's entries (oldest first) that match every filter given."""
        query = {
            "api": api,
            "group_id": group_id,
            "client_id": client_id,
            "topic": topic,
            "since": since,
        }
        return list(self.control("GET", "/v1/journal", query=query)["entries"])

    def clear_journal(self) -> None:
        self.control("DELETE", "/v1/journal")

    def connections(self) -> list[dict[str, Any]]:
        return list(self.control("GET", "/v1/connections")["connections"])

    def close_connections(self, **filters: Any) -> list[dict[str, Any]]:
        """Close the client connections (all, or those matching connection=, client_id=,
        address=); returns what was closed."""
        return list(self.control("POST", "/v1/connections/close", filters)["closed"])

    def start(self, timeout_s: float = START_TIMEOUT_S) -> None:
        """Start the broker and wait until it listens.

        Raises:
          RuntimeError: it is already running, or did not start in time.
          Exception: whatever stopped it from starting (a bad setting, a port in use).
        """
        if self._thread is not None:
            raise RuntimeError("kmock is already running")
        self._started.clear()
        self._error = None
        self._thread = threading.Thread(target=self._thread_main, name="kmock-broker", daemon=True)
        self._thread.start()
        if not self._started.wait(timeout_s):
            raise RuntimeError(f"kmock did not start within {timeout_s} s")
        if self._error is not None:
            self._thread.join()
            self._thread = None
            error, self._error = self._error, None
            raise _unwrap(error)
        # Pin the port the OS picked, so that restart() comes back where clients expect it.
        host, port = self.broker.addresses[0]
        if self._overrides["listeners"].endswith(":0"):
            self._overrides["listeners"] = f"PLAINTEXT://{host}:{port}"
            from broker.config import load_config

            self.config = load_config(overrides=self._overrides)

    def stop(self, timeout_s: float = STOP_TIMEOUT_S) -> None:
        """Stop gracefully (logs fsynced and closed) and wait for it.

        Raises:
          Exception: whatever made the broker fail while it ran.
        """
        import trio

        thread = self._thread
        if thread is None:
            return
        if thread.is_alive() and self.broker is not None:
            # RunFinishedError: it ended on its own; the error (if any) is in self._error.
            with contextlib.suppress(trio.RunFinishedError):
                trio.from_thread.run_sync(self.broker.shutdown, trio_token=self._token)
        thread.join(timeout_s)
        if thread.is_alive():
            raise RuntimeError(f"kmock did not stop within {timeout_s} s")
        self._thread = None
        self.broker = None
        if self._error is not None:
            error, self._error = self._error, None
            raise _unwrap(error)

    def restart(self) -> None:
        """stop(), then start() on the same port with the same data directory."""
        self.stop()
        self.start()

    def kill(self) -> None:
        """Stop as a killed process would (SIGKILL): no final fsync, no index files, no clean
        close. What was written stays, as it does in the OS page cache after a real kill, and
        the next `start()` runs crash recovery on the logs."""
        if self.broker is not None:
            self.broker.close = _skip_close  # serve() calls it on the way out
        self.stop()

    def _thread_main(self) -> None:
        import trio

        try:
            trio.run(self._run)
        except Exception as e:  # handed to the test's thread by start()/stop()
            self._error = e
        finally:
            self._started.set()

    async def _run(self) -> None:
        import trio

        from broker.server import serve

        async with trio.open_nursery() as nursery:
            self.broker = await nursery.start(serve, self.config)
            self._token = trio.lowlevel.current_trio_token()
            self._started.set()


def _unwrap(error: BaseException) -> BaseException:
    """The one exception inside nested single-exception groups (trio's nurseries wrap every
    failure), so that a test sees `OSError: Address already in use`; otherwise `error`."""
    leaf = error
    while isinstance(leaf, BaseExceptionGroup) and len(leaf.exceptions) == 1:
        leaf = leaf.exceptions[0]
    return leaf


def _skip_close() -> None:
    """Broker.close for kill(): the logs' descriptors close when they are garbage collected."""


# --- settings ------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("kmock", "kmock broker fixtures")
    group.addoption(
        "--kmock-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a broker setting by its Kafka name for the kmock fixtures "
        "(repeatable), e.g. --kmock-config num.partitions=3",
    )
    parser.addini(
        "kmock_config",
        type="linelist",
        default=[],
        help="broker settings for the kmock fixtures, one KEY=VALUE per line",
    )


_SETTINGS_KEY = pytest.StashKey[dict[str, Any]]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "kmock_config(settings=None, **kw): broker settings (Kafka names; `_` for `.` in "
        "keywords) for this test's `kmock` fixture",
    )
    # Checked here, so that a typo fails the run at once rather than every test using kmock.
    config.stash[_SETTINGS_KEY] = {
        **_parse(config.getini("kmock_config"), "ini kmock_config"),
        **_parse(config.getoption("kmock_config"), "--kmock-config"),
    }


def _parse(lines: list[str], where: str) -> dict[str, str]:
    from broker.config import SETTINGS

    out = {}
    for line in lines:
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise pytest.UsageError(f"{where}: {line!r} is not KEY=VALUE")
        if key not in SETTINGS and key != "broker.id":
            raise pytest.UsageError(f"{where}: unknown kmock setting {key!r}")
        out[key] = value.strip()
    return out


def _session_overrides(config: pytest.Config) -> dict[str, Any]:
    return config.stash[_SETTINGS_KEY]


def _marker_overrides(node: pytest.Item) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for marker in reversed(list(node.iter_markers("kmock_config"))):  # closest wins
        for settings in marker.args:
            out.update(settings)
        out.update({k.replace("_", "."): v for k, v in marker.kwargs.items()})
    return out


@pytest.fixture(scope="session")
def kmock_session(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[KmockBroker]:
    """One kmock broker shared by the whole session (topics and groups carry over)."""
    broker = KmockBroker(
        tmp_path_factory.mktemp("kmock-session"),
        {**FIXTURE_DEFAULTS, **_session_overrides(pytestconfig)},
    )
    broker.start()
    yield broker
    broker.stop()


@pytest.fixture
def kmock(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    pytestconfig: pytest.Config,
) -> Iterator[KmockBroker]:
    """A fresh kmock broker for this test, with its own empty data directory."""
    overrides = {
        **FIXTURE_DEFAULTS,
        **_session_overrides(pytestconfig),
        **_marker_overrides(request.node),
    }
    broker = KmockBroker(tmp_path_factory.mktemp("kmock"), overrides)
    broker.start()
    yield broker
    broker.stop()
