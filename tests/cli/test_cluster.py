"""`kmock cluster show | leader | coordinator | stop | start` against a 3-broker kmock, and
`kmock serve --brokers` refusing what it cannot serve."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

from broker.config import ConfigError
from cli.commands.serve import serve_config
from cli.main import build_parser
from tests.cli.harness import SCENARIO_S, cli
from tests.reliability import inproc

SETTINGS = {
    "admin.port": 0,
    "kmock.brokers": 3,
    "default.replication.factor": 3,
    "offsets.topic.replication.factor": 3,
    "offsets.topic.num.partitions": 3,
    "kmock.create.topics": "orders:1",
}


async def test_cluster_commands(tmp_path: Path) -> None:
    with trio.fail_after(SCENARIO_S):
        async with inproc.running(tmp_path / "data", **SETTINGS) as broker:
            host, port = broker.admin_address
            admin = ("--admin-server", f"{host}:{port}")
            code, out, err = await cli("cluster", "show", "--output", "json", *admin)
            assert code == 0, err
            shown = json.loads(out)
            assert [b["id"] for b in shown["brokers"]] == [1, 2, 3]
            [orders] = [p for p in shown["partitions"] if p["topic"] == "orders"]
            other = next(b for b in orders["replicas"] if b != orders["leader"])
            code, out, err = await cli("cluster", "leader", "orders", "0", str(other), *admin)
            assert code == 0, err
            assert out.split("\n")[-2].split()[:4] == ["orders", "0", str(other), "1"]
            code, out, err = await cli(
                "cluster", "coordinator", "2", "--group-id", "g", "--output", "json", *admin
            )
            assert code == 0, err
            assert json.loads(out)[0]["leader"] == 2
            code, out, err = await cli("cluster", "stop", "2", *admin)
            assert (code, out.strip()) == (0, "broker 2 stopped; running: [1, 3]"), err
            code, out, err = await cli("cluster", "stop", "2", *admin)
            assert code == 2
            assert "already stopped" in err
            code, out, err = await cli("cluster", "start", "2", *admin)
            assert (code, out.strip()) == (0, "broker 2 started; running: [1, 2, 3]"), err
            code, out, err = await cli("cluster", "leader", "orders", "0", "7", *admin)
            assert code == 2
            assert "no broker 7" in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--brokers", "2", "--create-topics", "orders:1:3"],
            "kmock.create.topics: 'orders:1:3': Unable to replicate the partition 3 time(s): "
            "The target replication factor of 3 cannot be reached because only 2 broker(s) "
            "are registered.",
        ),
        (["--brokers", "0"], "kmock.brokers"),
    ],
)
def test_serve_refuses_what_the_brokers_cannot_serve(argv: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        serve_config(build_parser().parse_args(["serve", *argv]), {})
    assert message in str(refused.value)


def test_brokers_from_the_environment() -> None:
    config = serve_config(build_parser().parse_args(["serve"]), {"KAFKA_KMOCK_BROKERS": "3"})
    assert config["kmock.brokers"] == 3
    with pytest.raises(ConfigError, match=r"kmock\.brokers"):
        serve_config(build_parser().parse_args(["serve"]), {"KAFKA_KMOCK_BROKERS": "0"})


async def test_admin_commands_follow_leaders_and_coordinators(tmp_path: Path) -> None:
    from tests.cli.harness import cli_json

    settings = {**SETTINGS, "kmock.create.topics": "spread:3"}
    with trio.fail_after(SCENARIO_S):
        async with inproc.running(tmp_path / "data", **settings) as broker:
            leaders = {p.leader for p in broker.topics.get("spread").partitions}
            assert len(leaders) > 1  # the partitions are led by different brokers
            # Bootstrapped at one broker only: the others are found through it.
            host, port = broker.node_advertised[1]["PLAINTEXT"]
            at_one = ("--bootstrap-server", f"{host}:{port}")
            lines = "".join(f"key-{i}:v{i}\n" for i in range(30))
            produced = await cli_json(
                "produce", "spread", "--key-separator", ":", *at_one, stdin=lines
            )
            assert produced["records"] == 30
            code, out, err = await cli(
                "consume", "spread", "--from-beginning", "--max-messages", "30",
                "--output", "json", *at_one,
            )  # fmt: skip
            assert code == 0, err
            got = sorted(json.loads(line)["value"] for line in out.splitlines())
            assert got == sorted(f"v{i}" for i in range(30))
            # The group's coordinator is another broker; offsets reset and show find it.
            index = broker.coordinator.offsets_topic() and (
                broker.coordinator.coordinator.partition_for("readers")
            )
            coordinator = broker.topics.partition("__consumer_offsets", index)
            if coordinator.leader == 1:
                broker.cluster.move_leader(coordinator, 2)
            for to in ("--to-latest", "--to-earliest"):
                code, out, err = await cli(
                    "offsets", "reset", "readers", "--topic", "spread", to, "--execute", *at_one,
                )  # fmt: skip
                assert code == 0, err
                shown = await cli_json("offsets", "show", "readers", *at_one)
                committed = sum(r["committed_offset"] for r in shown["offsets"])
                assert committed == (30 if to == "--to-latest" else 0)
