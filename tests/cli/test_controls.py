"""`kmock faults | clock | journal | connections` against a live broker's admin endpoint."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import trio

from protocol.errors import ErrorCode
from tests.cli.harness import SCENARIO_S, cli
from tests.reliability import inproc
from tests.reliability.inproc import create, produce
from tests.wire import WireClient

ROOT = Path(__file__).resolve().parents[2]


def running(tmp_path: Path) -> Any:
    settings = {"admin.port": 0, "kmock.clock": "virtual", "offsets.topic.num.partitions": 1}
    return inproc.running(tmp_path / "data", **settings)


def admin(broker: Any) -> tuple[str, str]:
    host, port = broker.admin_address
    return ("--admin-server", f"{host}:{port}")


async def test_faults_clock_journal_connections(tmp_path: Path) -> None:
    with trio.fail_after(SCENARIO_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            code, out, err = await cli(
                "faults", "add", "Produce", "NOT_LEADER_OR_FOLLOWER", "--count", "2",
                "--topic", "t", *admin(broker),
            )  # fmt: skip
            assert code == 0, err
            assert "NOT_LEADER_OR_FOLLOWER" in out
            code, out, err = await cli("faults", "list", "--output", "json", *admin(broker))
            assert [(f["api"], f["count"], f["topic"]) for f in json.loads(out)] == [
                ("Produce", 2, "t")
            ]
            assert (await produce(client, "t", b"a"))[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
            code, out, err = await cli("journal", "--api", "Produce", *admin(broker))
            assert code == 0, err
            lines = out.splitlines()
            assert len(lines) == 1
            assert "Produce v9" in lines[0]
            assert "NOT_LEADER_OR_FOLLOWER" in lines[0]
            assert "fault=1" in lines[0]
            code, out, err = await cli("faults", "clear", *admin(broker))
            assert out.strip() == "cleared 1 fault(s)"
            assert (await produce(client, "t", b"b"))[0] == ErrorCode.NONE
            code, out, err = await cli(
                "clock", "advance", "1500", "--output", "json", *admin(broker)
            )
            assert code == 0, err
            assert json.loads(out)["elapsed_ms"] == 1500
            code, out, err = await cli("clock", "show", *admin(broker))
            assert "virtual clock" in out
            assert "elapsed_ms=1500" in out
            code, out, err = await cli("connections", "list", "--output", "json", *admin(broker))
            (conn,) = json.loads(out)
            assert conn["client_id"] == "kmock-test"
            code, out, err = await cli(
                "connections", "close", "--connection", str(conn["connection"]), *admin(broker)
            )
            assert code == 0, err
            assert await client.is_closed_by_peer()
            code, out, err = await cli("journal", "--clear", *admin(broker))
            assert out.startswith("cleared ")


async def test_refused_input_and_unreachable_broker(tmp_path: Path) -> None:
    with trio.fail_after(SCENARIO_S):
        async with running(tmp_path) as broker:
            code, out, err = await cli("faults", "add", "Prodce", "X", *admin(broker))
            assert code == 2
            assert "refused by the broker: api: unknown API 'Prodce'" in err
            code, out, err = await cli(
                "faults", "add", "Produce", "6", "--count", "-1", *admin(broker)
            )
            assert code == 2
            assert "count" in err
            code, out, err = await cli("faults", "list", "--output", "json", *admin(broker))
            assert json.loads(out) == []
            code, out, err = await cli("clock", "advance", "-5", *admin(broker))
            assert code == 2
            assert "ms: must be 0 or more" in err
        code, out, err = await cli("clock", "show", "--admin-server", "127.0.0.1:1")
        assert code == 1
        assert "cannot reach the admin endpoint at 127.0.0.1:1" in err


async def test_journal_follow_prints_requests_as_they_come(tmp_path: Path) -> None:
    with trio.fail_after(SCENARIO_S):
        async with running(tmp_path) as broker:
            client = await WireClient.connect(broker)
            await create(client, "t")
            env = {**os.environ, "PYTHONPATH": str(ROOT)}
            argv = [sys.executable, "-m", "cli.main", "journal", "--follow", "--api", "Produce"]
            proc = await trio.lowlevel.open_process(
                [*argv, *admin(broker)], stdout=-1, stderr=-1, env=env
            )
            try:
                await produce(client, "t", b"x")
                got = b""
                while b"\n" not in got:
                    got += await proc.stdout.receive_some()
                line = got.decode().splitlines()[0]
                assert " Produce v9 " in line
                assert "client=kmock-test" in line
                await produce(client, "t", b"y")
                while got.count(b"\n") < 2:
                    got += await proc.stdout.receive_some()
                assert got.decode().count(" Produce v9 ") == 2
            finally:
                proc.kill()
                await proc.wait()
            await client.aclose()


async def test_serve_clock_flag_and_a_bad_clock() -> None:
    from cli.commands.serve import serve_config
    from cli.main import build_parser

    args = build_parser(serve_only=True).parse_args(["serve", "--clock", "virtual"])
    assert serve_config(args, {})["kmock.clock"] == "virtual"
    code, out, err = await cli("serve", "--clock", "sundial")
    assert (code, out) == (2, "")
    assert "kmock.clock: 'sundial' is not one of wall, virtual" in err
