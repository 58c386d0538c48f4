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

Topics the test needs are created before it starts, with `topics=` (kmock.create.topics,
`name:partitions[:replication][:config=value,...]`, one spec per topic or one string):

    @pytest.mark.kmock_config(topics=["orders:3", "events:1:1:cleanup.policy=compact"])
    def test_orders(kmock): ...

    KmockBroker(data_dir, topics=["orders:3"])   # outside the fixtures

A schema registry (Confluent's REST API, kmock.schema.registry.port) beside the broker, on
a port the OS picks and pinned like the broker's, with `schema_registry=True`:

    @pytest.mark.kmock_config(schema_registry=True)
    def test_avro(kmock):
        client = SchemaRegistryClient({"url": kmock.schema_registry_url})

    KmockBroker(data_dir, schema_registry=True)   # outside the fixtures
`KAFKA_*` environment variables are not read: a test suite gets the same broker on every
machine.

A TLS or SASL broker, and each client's settings for it (broker.pytest_security):

    @pytest.mark.kmock_config(security_protocol="SASL_SSL", sasl_mechanism="SCRAM-SHA-512",
                              users={"alice": "secret"}, ssl_client_auth="required")
    def test_secured(kmock):
        producer = KafkaProducer(**kmock.kafka_python_config())
        # kmock.confluent_config(), kmock.aiokafka_config(), kmock.certs.ca, ...

The same options in the ini `kmock_config` lines or --kmock-config secure `kmock_session`
(and every `kmock` whose marks do not secure it), users as name:password pairs:

    kmock_config =
        security_protocol=SASL_SSL
        sasl_mechanism=SCRAM-SHA-512
        users=alice:secret,bob:other-secret

Seed data, produced before the test body runs and read back by any client like produced data:
  * `kmock.seed("orders", [{"key": "k", "value": "v", "headers": {"h": "1"}}, b"raw", ...])`
  * `kmock.seed_file("tests/data/orders.jsonl")` (the jsonl, lines and keyed formats of
    `kmock produce --file`; see protocol.record_file)
  * `@pytest.mark.kmock_seed("data/orders.jsonl")` or
    `@pytest.mark.kmock_seed(topic="orders", records=[...])` (`kmock` only; a relative path is
    relative to the test's file; module and class marks are seeded before the function's)
Each call checks every record before it writes the first, then appends them through the
broker's own Metadata (topic auto-creation) and Produce (acks=all) handlers, so they are
validated and stored exactly as a producer's.


Test controls (docs/controls.md), as methods that call the broker's /v1 admin endpoint:

    kmock.fail("Produce", "NOT_LEADER_OR_FOLLOWER", count=2)   # the next 2 Produce fail
    kmock.fail("Fetch", delay_ms=500)  /  kmock.fail("JoinGroup", action="disconnect")
    kmock.advance(ms=45_000)           # with @pytest.mark.kmock_config(kmock_clock="virtual")
    kmock.journal(api="OffsetCommit")  # decoded requests and answers, oldest first
    kmock.close_connections()          # what a network blip looks like to a client

Several brokers in the one process (README, Several brokers), with `brokers=N`: the
listeners are on N consecutive free ports, and `bootstrap_servers` lists them all:

    @pytest.mark.kmock_config(brokers=3, default_replication_factor=3)
    def test_failover(kmock):
        kmock.move_leader("orders", 0, broker=2)
        kmock.move_coordinator(group_id="g", broker=3)
        kmock.stop_broker(1); ...; kmock.start_broker(1)

Two defaults differ from `kmock serve`'s (FIXTURE_DEFAULTS): offsets.topic.num.partitions is
1, so that a fresh broker per test does not create 50 __consumer_offsets partitions when its
test first uses a group (clients cannot tell: they ask FindCoordinator, and the answer is
this broker either way); and admin.port is 0, so that the controls are on, on a free port of
127.0.0.1.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterable, Iterator, Mapping
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

    def __init__(
        self,
        data_dir: Path,
        overrides: Mapping[str, Any] | None = None,
        *,
        topics: str | Iterable[str] | None = None,
        schema_registry: bool = False,
        brokers: int | None = None,
        security_protocol: str = "PLAINTEXT",
        sasl_mechanism: str | None = None,
        users: Mapping[str, str] | None = None,
        ssl_client_auth: str | None = None,
    ) -> None:
        from broker.config import load_config
        from broker.pytest_security import FixtureSecurity

        # broker.pytest_security: a TLS or SASL listener, its certificates and users
        self.security, secured = FixtureSecurity.prepare(
            Path(data_dir),
            security_protocol=security_protocol,
            sasl_mechanism=sasl_mechanism,
            users=users,
            ssl_client_auth=ssl_client_auth,
        )
        self._overrides: dict[str, Any] = {
            "listeners": "PLAINTEXT://127.0.0.1:0",
            "log.dirs": str(data_dir),
            **secured,
            **(overrides or {}),
        }
        if brokers is not None:
            self._overrides["kmock.brokers"] = brokers
        count = int(self._overrides.get("kmock.brokers", 1))
        if count > 1 and self._overrides["listeners"] == "PLAINTEXT://127.0.0.1:0":
            # N brokers bind N consecutive ports: find a free run now, so that restart()
            # comes back on the same ones.
            port = _free_ports(count)
            self._overrides["listeners"] = f"PLAINTEXT://127.0.0.1:{port}"
        if topics is not None:
            self._overrides["kmock.create.topics"] = _topics_setting(topics)
        if schema_registry:
            self._overrides.setdefault("kmock.schema.registry.port", 0)
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
    def schema_registry_url(self) -> str:
        """ "http://127.0.0.1:PORT" of the schema registry (`schema_registry=True`)."""
        address = None if self.broker is None else self.broker.schema_registry_address
        if address is None:
            raise RuntimeError("kmock's schema registry is not running (schema_registry=True)")
        return f"http://{address[0]}:{address[1]}"

    # --- client settings for a secured broker (broker.pytest_security) --------------------

    @property
    def certs(self) -> Any:
        """The PEM files (`.ca`, `.client_cert`, `.client_key`, `.server`) of a TLS broker."""
        if self.security.certs is None:
            raise RuntimeError("kmock has no certificates: security_protocol is not SSL/SASL_SSL")
        return self.security.certs

    def kafka_python_config(
        self, user: str | None = None, password: str | None = None
    ) -> dict[str, Any]:
        """kafka-python's keyword arguments (bootstrap_servers, security_protocol, ssl_*,
        sasl_*): `KafkaProducer(**kmock.kafka_python_config())`."""
        return self.security.kafka_python(self.bootstrap_servers, user, password)

    def confluent_config(
        self, user: str | None = None, password: str | None = None
    ) -> dict[str, Any]:
        """confluent-kafka's (librdkafka's) config: `Producer(kmock.confluent_config())`."""
        return self.security.confluent(self.bootstrap_servers, user, password)

    def aiokafka_config(
        self, user: str | None = None, password: str | None = None
    ) -> dict[str, Any]:
        """aiokafka's keyword arguments, TLS as an ssl.SSLContext (`ssl_context`)."""
        return self.security.aiokafka(self.bootstrap_servers, user, password)

    def client_properties(self, user: str | None = None, password: str | None = None) -> str:
        """A Kafka client.properties (security.protocol, sasl.*, ssl.* with PEM stores), for
        Java tools and `kmock ... --command-config`; write it to a file."""
        from broker.pytest_security import properties_text

        return properties_text(self.security.properties(user, password))

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

    def cluster(self) -> dict[str, Any]:
        """The brokers, which run, and every partition's leader, epoch, replicas and ISR."""
        return dict(self.control("GET", "/v1/cluster"))

    def move_leader(self, topic: str, partition: int, broker: int) -> dict[str, Any]:
        """Make `broker` (a running in-sync replica) the partition's leader."""
        spec = {"topic": topic, "partition": partition, "broker": broker}
        return dict(self.control("POST", "/v1/cluster/leader", spec))

    def move_coordinator(
        self, *, broker: int, group_id: str | None = None, transactional_id: str | None = None
    ) -> dict[str, Any]:
        """Move the coordinator of a group (or a transactional id) to `broker`."""
        spec: dict[str, Any] = {"broker": broker}
        if group_id is not None:
            spec["group_id"] = group_id
        if transactional_id is not None:
            spec["transactional_id"] = transactional_id
        return dict(self.control("POST", "/v1/cluster/coordinator", spec))

    def stop_broker(self, broker: int) -> dict[str, Any]:
        """Stop one broker of the process: its connections drop, its leaderships move."""
        return dict(self.control("POST", f"/v1/brokers/{broker}/stop", {}))

    def start_broker(self, broker: int) -> dict[str, Any]:
        """Start a stopped broker again on its ports."""
        return dict(self.control("POST", f"/v1/brokers/{broker}/start", {}))

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
        # Pin the ports the OS picked, so that restart() comes back where clients expect it.
        pinned = self.broker.pinned_listeners()
        registry = self.broker.schema_registry_address
        if registry is not None:
            self._overrides["kmock.schema.registry.port"] = registry[1]
        if pinned != self._overrides["listeners"] or registry is not None:
            self._overrides["listeners"] = pinned
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

    def seed(self, topic: str | None, records: Iterable[Any]) -> list[tuple[str, int, int]]:
        """Produce `records` (acks=all) before going on; returns each record's
        (topic, partition, offset), in order.

        A record is a mapping with the fields of a jsonl line (protocol.record_file: topic,
        partition, timestamp, key, value, headers, and the *_b64 forms), where key, value
        and header values may also be bytes; or just its value (bytes or str). `topic` is
        for the records that name none. Keyless records that name no partition go to
        partition 0, so that a test knows where they are; keyed ones go where Kafka's
        partitioner puts them. Every record is checked before the first is written.

        Raises:
          ValueError: a record that is not one, or names no topic ("records[3]: ...").
          KafkaError: what the broker answered (no such partition, topic not auto-created).
        """
        from protocol.record_file import record_from_mapping

        parsed = []
        for i, item in enumerate(records):
            if isinstance(item, bytes | bytearray | str):
                item = {"value": item}
            try:
                parsed.append(record_from_mapping(item, line=i, allow_bytes=True))
            except ValueError as e:
                raise ValueError(f"records[{i}]: {e}") from None
        return self._seed(parsed, topic, lambda i: f"records[{i}]")

    def seed_file(
        self,
        path: str | Path,
        *,
        topic: str | None = None,
        format: str | None = None,
        key_separator: str = "\t",
    ) -> list[tuple[str, int, int]]:
        """Produce the records of a file, as `kmock produce --file` does; see `seed`.

        `format` is jsonl, lines or keyed; by default jsonl for *.jsonl and *.ndjson files,
        else lines. `topic` is for the records that name none (required for lines/keyed).

        Raises:
          ValueError: a line that is not a record ("orders.jsonl line 3: not JSON ...").
        """
        from protocol.record_file import read_records

        path = Path(path)
        fmt = format or ("jsonl" if path.suffix in (".jsonl", ".ndjson") else "lines")
        with path.open("rb") as f:
            parsed = list(read_records(f, fmt, str(path), key_separator=key_separator))
        return self._seed(parsed, topic, lambda line: f"{path} line {line}")

    def _seed(
        self, records: list[Any], topic: str | None, where: Any
    ) -> list[tuple[str, int, int]]:
        import trio

        from broker.pytest_seed import seed_records

        for r in records:
            if r.topic is None and topic is None:
                raise ValueError(f"{where(r.line)}: no topic (name one in the record or the call)")
        if self.broker is None:
            raise RuntimeError("kmock is not running")
        return trio.from_thread.run(
            seed_records, self.broker, records, topic, where, trio_token=self._token
        )

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
        "kmock_config(settings=None, *, topics=None, schema_registry=False, "
        "security_protocol=None, sasl_mechanism=None, users=None, ssl_client_auth=None, **kw): "
        "broker settings (Kafka names; `_` for `.` in keywords) for this test's `kmock` "
        "fixture; topics=['orders:3', ...] creates topics before the test starts "
        "(kmock.create.topics); schema_registry=True serves kmock.schema_registry_url; "
        "security_protocol='SASL_SSL' etc. starts a TLS or SASL broker whose client settings "
        "kmock.kafka_python_config() / confluent_config() / aiokafka_config() give",
    )
    config.addinivalue_line(
        "markers",
        "kmock_seed(path=None, *, topic=None, records=None, format=None): records the `kmock` "
        "fixture produces before the test runs (a file, relative to the test's file, or a list)",
    )
    # Checked here, so that a typo fails the run at once rather than every test using kmock.
    config.stash[_SETTINGS_KEY] = {
        **_parse(config.getini("kmock_config"), "ini kmock_config"),
        **_parse(config.getoption("kmock_config"), "--kmock-config"),
    }


def _parse(lines: list[str], where: str) -> dict[str, Any]:
    from broker.config import ALIASES, SETTINGS
    from broker.pytest_security import OPTIONS, parse_option

    out: dict[str, Any] = {}
    for line in lines:
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not key:
            raise pytest.UsageError(f"{where}: {line!r} is not KEY=VALUE")
        if key in OPTIONS:  # the fixtures' security options (broker.pytest_security)
            try:
                out[key] = parse_option(key, value.strip())
            except ValueError as e:
                raise pytest.UsageError(f"{where}: {e}") from None
            continue
        if key not in SETTINGS and key not in ALIASES:
            raise pytest.UsageError(f"{where}: unknown kmock setting {key!r}")
        out[key] = value.strip()
    return out


def _session_overrides(config: pytest.Config) -> dict[str, Any]:
    from broker.pytest_security import OPTIONS

    return {k: v for k, v in config.stash[_SETTINGS_KEY].items() if k not in OPTIONS}


def _session_security(config: pytest.Config) -> dict[str, Any]:
    """The security options of the ini `kmock_config` lines and --kmock-config flags."""
    from broker.pytest_security import OPTIONS

    return {k: v for k, v in config.stash[_SETTINGS_KEY].items() if k in OPTIONS}


def _marker_overrides(node: pytest.Item) -> dict[str, Any]:
    from broker.pytest_security import OPTIONS

    out: dict[str, Any] = {}
    for marker in reversed(list(node.iter_markers("kmock_config"))):  # closest wins
        for settings in marker.args:
            out.update(settings)
        kwargs = {k: v for k, v in marker.kwargs.items() if k not in OPTIONS}
        if "topics" in kwargs:
            out["kmock.create.topics"] = _topics_setting(kwargs.pop("topics"))
        if kwargs.pop("schema_registry", False):
            out["kmock.schema.registry.port"] = 0
        if "brokers" in kwargs:
            out["kmock.brokers"] = kwargs.pop("brokers")
        out.update({k.replace("_", "."): v for k, v in kwargs.items()})
    return out


def _marker_security(node: pytest.Item) -> dict[str, Any]:
    """The security options of the `kmock_config` marks (broker.pytest_security)."""
    from broker.pytest_security import OPTIONS

    out: dict[str, Any] = {}
    for marker in reversed(list(node.iter_markers("kmock_config"))):  # closest wins
        out.update({k: v for k, v in marker.kwargs.items() if k in OPTIONS})
    return out


def _free_ports(count: int) -> int:
    """The first of `count` consecutive ports of 127.0.0.1 that are free just now."""
    import socket

    for _ in range(100):
        held: list[socket.socket] = []
        try:
            first = socket.socket()
            held.append(first)
            first.bind(("127.0.0.1", 0))
            base = first.getsockname()[1]
            if base + count > 65535:
                continue
            for port in range(base + 1, base + count):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", port))
            return int(base)
        except OSError:
            continue
        finally:
            for s in held:
                s.close()
    raise RuntimeError(f"no {count} consecutive free ports on 127.0.0.1")


def _topics_setting(topics: str | Iterable[str]) -> str:
    """`topics=` as kmock.create.topics: one spec string, or specs one per topic."""
    return topics if isinstance(topics, str) else ",".join(topics)


@pytest.fixture(scope="session")
def kmock_session(
    tmp_path_factory: pytest.TempPathFactory, pytestconfig: pytest.Config
) -> Iterator[KmockBroker]:
    """One kmock broker shared by the whole session (topics and groups carry over), with
    the ini and flag settings, security options included."""
    broker = KmockBroker(
        tmp_path_factory.mktemp("kmock-session"),
        {**FIXTURE_DEFAULTS, **_session_overrides(pytestconfig)},
        **_session_security(pytestconfig),
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
    # a test's marks that secure its broker replace the session's security options whole
    security = _marker_security(request.node) or _session_security(pytestconfig)
    broker = KmockBroker(tmp_path_factory.mktemp("kmock"), overrides, **security)
    broker.start()
    try:
        _seed_from_markers(broker, request)
    except BaseException:
        broker.stop()
        raise
    yield broker
    broker.stop()


def _seed_from_markers(broker: KmockBroker, request: pytest.FixtureRequest) -> None:
    """Seed what the test's `kmock_seed` marks name: module and class marks first."""
    for marker in reversed(list(request.node.iter_markers("kmock_seed"))):
        kwargs = dict(marker.kwargs)
        records = kwargs.pop("records", None)
        topic = kwargs.pop("topic", None)
        if marker.args and records is None:
            path = Path(marker.args[0])
            if not path.is_absolute():
                path = request.path.parent / path
            broker.seed_file(path, topic=topic, **kwargs)
        elif records is not None and not marker.args and not kwargs:
            broker.seed(topic, records)
        else:
            raise pytest.UsageError(
                f"{request.node.nodeid}: kmock_seed takes a path or records=[...], "
                f"not {marker.args!r} {marker.kwargs!r}"
            )
