"""The live fuzz's well-behaved client must hold up against a broker that behaves as
Kafka does: here, one whose retention check runs every few milliseconds instead of every
5 minutes. Its records once carried a fixed 2023 timestamp, older than retention.ms (7
days), so the check deleted them between the client's Produce and its Fetch (the long
run at fecbcbb, seed 178087005, round 17,171: an empty Fetch answer, read as "batch
header at 0 cut short").
"""

from __future__ import annotations

from pathlib import Path

import trio

from client import KafkaClient
from tests.fuzz import live
from tests.reliability.process import BrokerProcess

ROUNDS = 200


def _rounds(broker: BrokerProcess) -> int | None:
    with KafkaClient(broker.bootstrap) as admin:
        admin.create_topic(live.CANARY_TOPIC, num_partitions=1)
    with KafkaClient(broker.bootstrap, timeout_s=live.CANARY_DEADLINE_S) as client:
        expected = None
        for n in range(ROUNDS):
            expected = live._canary_round(client, n, expected)
    return expected


async def test_canary_records_outlive_the_retention_check(tmp_path: Path) -> None:
    settings = {**live.BROKER_SETTINGS, "log.retention.check.interval.ms": 5}
    broker = BrokerProcess(tmp_path / "data", tmp_path / "logs", overrides=settings)
    await trio.to_thread.run_sync(broker.start)
    try:
        with trio.fail_after(60):
            assert await trio.to_thread.run_sync(_rounds, broker) == ROUNDS
        assert broker.problems() == []
    finally:
        broker.kill()
