"""What `kmock serve` does (its parser is `cli.serve`): settings from every source, then
the broker until a signal.

Later sources win: defaults, the properties file, `KAFKA_*` variables, flags
(`--override key=value` last of all). A `KAFKA_*` variable that names no setting is ignored
with a warning rather than refused: Kafka's own scripts and images use KAFKA_HOME,
KAFKA_OPTS, KAFKA_HEAP_OPTS and friends for other things, and a broker that refuses to start
because of them is no drop-in replacement. A bad value in a variable is still an error.
"""

from __future__ import annotations

import argparse
import errno
import gc
import logging
import os
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import trio

from broker.broker import listener_setup
from broker.cluster_state import check_settings as check_cluster_settings
from broker.config import (
    ALIASES,
    SETTINGS,
    ConfigError,
    consumer_group_config,
    env_to_name,
    load_config,
    parse_properties,
)
from broker.limits import raise_open_files_limit
from broker.logging_setup import setup_logging
from broker.security.tls import TlsError, tls_contexts
from broker.server import serve
from broker.startup_topics import startup_topics
from cli.output import (
    EXIT_ERROR,
    EXIT_OK,
    EXIT_USAGE,
    Output,
    UsageError,
    kmock_version,
    parse_assignments,
)
from protocol.errors import KafkaError

__all__ = ["run", "serve_config"]

log = logging.getLogger("cli.serve")


def _environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The KAFKA_* variables that name a setting; the others are ignored with a warning."""
    kept = {}
    for var, value in environ.items():
        name = env_to_name(var)
        if name is None:
            continue
        if name in SETTINGS or name in ALIASES:
            kept[var] = value
        else:
            log.warning("ignoring %s: %s is not a kmock setting", var, name)
    return kept


def serve_config(args: argparse.Namespace, environ: Mapping[str, str]) -> Any:
    """The Config `kmock serve` runs with: defaults < file < KAFKA_* < flags < --override.

    Raises:
      ConfigError: an unknown setting, a value of the wrong type, an unreadable file,
        listeners Kafka would refuse (or that are not PLAINTEXT), or a malformed
        kmock.create.topics.
    """
    overrides: dict[str, str] = {
        key.removeprefix("setting:"): value
        for key, value in vars(args).items()
        if key.startswith("setting:") and value is not None
    }
    try:
        overrides.update(parse_assignments(args.override, "--override"))
    except UsageError as e:
        raise ConfigError(str(e)) from None
    properties = None
    if args.properties:
        try:
            properties = parse_properties(Path(args.properties).read_text(encoding="utf-8"))
        except OSError as e:
            raise ConfigError(f"cannot read {args.properties}: {e.strerror}") from None
    config = load_config(properties=properties, environ=_environment(environ), overrides=overrides)
    # What the broker checks before it writes anything, checked here too so that a bad
    # setting is a usage error (exit 2) with one line naming it.
    setup = listener_setup(config)
    try:
        tls_contexts(config, setup.listeners)
    except TlsError as e:
        raise ConfigError(str(e)) from None
    check_cluster_settings(config)
    startup_topics(config)
    consumer_group_config(config)
    return config


def run(args: argparse.Namespace, out: Output) -> int:
    setup_logging(args.log_level, args.log_format, out.stderr)
    try:
        config = serve_config(args, os.environ)
    except ConfigError as e:
        out.error(str(e))
        return EXIT_USAGE
    try:
        _add_scram(config, args.add_scram)
    except ValueError as e:
        out.error(str(e))
        return EXIT_USAGE
    # Passwords and keys (Kafka's PASSWORD settings) are never logged.
    explicit = {
        name: "[hidden]" if _sensitive(name) else config[name] for name in sorted(config.explicit)
    }
    log.info("starting kmock", extra=explicit)
    raise_open_files_limit()
    # What was imported so far (cli.main turned the collector off for it) lives as long as
    # the process: frozen, no pass of the collector walks it again.
    gc.freeze()
    gc.enable()
    try:
        trio.run(_serve_until_signal, config)
    except Exception as e:
        # The nursery wraps failures in groups. A failure we can explain (a port in use, a
        # data directory we cannot write, a log we cannot open) is one line and exit 1;
        # anything else is a bug and keeps its traceback.
        leaves = list(_leaves(e))
        if not all(isinstance(leaf, OSError | KafkaError) for leaf in leaves):
            raise
        out.error(_startup_error(leaves[0]))
        return EXIT_ERROR
    return EXIT_OK


def _leaves(e: BaseException) -> list[BaseException]:
    if isinstance(e, BaseExceptionGroup):
        return [leaf for sub in e.exceptions for leaf in _leaves(sub)]
    return [e]


def _startup_error(e: BaseException) -> str:
    if isinstance(e, OSError) and e.errno == errno.EADDRINUSE:
        return f"cannot start: address already in use ({e})"
    if isinstance(e, OSError) and e.errno == errno.EACCES:
        return f"cannot start: permission denied ({e})"
    return f"cannot start: {e}"


def _sensitive(name: str) -> bool:
    from broker.config import SETTINGS
    from broker.security_settings import listener_prefixed

    setting = SETTINGS.get(name) or listener_prefixed(name, SETTINGS)
    return setting is not None and setting.sensitive


def _add_scram(config: Any, specs: list[str]) -> None:
    """Write the --add-scram users into the data directory's SCRAM store.

    Raises:
      ValueError: a malformed spec; the message names --add-scram, never the password.
    """
    if not specs:
        return
    from broker.security.authenticator import STORE_FILE
    from broker.security.scram import ScramStore, parse_add_scram

    data_dir = Path(config["log.dirs"])
    parsed = [parse_add_scram(spec) for spec in specs]
    data_dir.mkdir(parents=True, exist_ok=True)
    store = ScramStore(data_dir / STORE_FILE)
    for mechanism, user, credential in parsed:
        store.set(mechanism, user, credential)
        log.info("SCRAM user added", extra={"mechanism": mechanism, "user": user})
    store.save()


async def _serve_until_signal(config: Any) -> None:
    """serve() in a nursery; SIGINT/SIGTERM stop it gracefully (main thread only)."""
    broker: Any = None

    async def watch_signals(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
            task_status.started()
            async for signum in signals:
                log.info("stopping", extra={"signal": signal.Signals(signum).name})
                if broker is None:  # still starting: nothing to drain yet
                    nursery.cancel_scope.cancel()
                else:
                    broker.shutdown()

    async def run_broker(task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        await serve(config, own_process=True, task_status=task_status)
        nursery.cancel_scope.cancel()  # serve returned (shutdown): stop watching signals

    async with trio.open_nursery() as nursery:
        await nursery.start(watch_signals)
        broker = await nursery.start(run_broker)
        # After the listeners are up: reading it lists every sys.path directory
        # (cli.output.kmock_version), which the port need not wait for.
        log.info("kmock version %s", kmock_version())
