"""What `kmock serve` leaves out of its start: modules imported by the first use of what
needs them (the message modules of most APIs, JSON, compaction), and that first use."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.reliability.inproc import running
from tests.reliability.process import run_python


def test_serve_starts_without_the_modules_its_first_requests_import(tmp_path):
    # The start as `kmock serve` makes it up to trio.run, then what serve() imports before
    # it binds (the coordinators).
    code = (
        "import sys, trio, cli.main; trio.run = lambda *a: None;"
        "code = cli.main.main(['serve', '--log-dirs', sys.argv[1],"
        " '--listeners', 'PLAINTEXT://127.0.0.1:0']);"
        "import broker.server, broker.runtime, broker.txn_runtime;"
        "names = ('produce', 'fetch', 'metadata', 'list_offsets', 'create_topics',"
        " 'describe_configs', 'find_coordinator', 'sasl_handshake');"
        "print(code, [n for n in names if 'protocol.messages.' + n in sys.modules],"
        " [m for m in ('json', 'storage.compaction', 'broker.coordinator_guard')"
        " if m in sys.modules])"
    )
    assert run_python(code, str(tmp_path)) == "0 [] []\n"


async def test_compaction_runs_after_log_cleaner_backoff(tmp_path: Path, monkeypatch) -> None:
    # broker.server's housekeeping imports storage.compaction's compact when it first
    # compacts: a recording stand-in put there is what it calls.
    import storage.compaction

    calls: list[Any] = []
    real = storage.compaction.compact

    def recording(log: Any, now_ms: int) -> Any:
        calls.append(log)
        return real(log, now_ms)

    monkeypatch.setattr(storage.compaction, "compact", recording)
    settings = {"kmock.clock": "virtual", "log.cleaner.backoff.ms": 1000}
    async with running(tmp_path, **settings) as broker:
        offsets = broker.coordinator.offsets_topic()  # cleanup.policy=compact
        await broker.clock.advance(999)
        assert calls == []
        await broker.clock.advance(1)
        assert calls == [p.log for p in offsets.partitions]
        await broker.clock.advance(1000)
        assert len(calls) == 2 * len(offsets.partitions)
