"""Crash cycles: real clients keep producing and committing while the broker is SIGKILLed
at random moments and restarted, and after every restart the broker must still hold
everything it acknowledged.

One cycle:
  1. let the producers send a random number of records, and wait until the clients got a
     random share of them acknowledged, and a new commit (the random moment);
  2. SIGKILL the broker process;
  3. on about half the cycles, tear the tail of one partition's active segment (a topic or
     __consumer_offsets), as an OS crash in the middle of a write would;
  4. restart it on the same port and data directory: it must come up, report the torn
     tail it cut (and nothing at ERROR);
  5. verify, against the acknowledgements recorded before this point: every acknowledged
     record is at its offset with its value, every acknowledged commit is committed (or a
     later one is), committed offsets never went backward, the idempotent producer wrote
     nothing twice, nothing from a torn tail is served, and every served batch passes its
     CRC.
After the last cycle the clients stop (flushing what they still hold) and everything is
verified once more.

Modes: "fsync" (log.flush.interval.messages=1: an fsync before every acknowledgement),
"default" (Kafka's: answered from the page cache, no fsync before an answer), "strict"
(kmock.durability=strict: group commit, acks=all and commits answered after their fsync)
and "small-segments" (rolls and compaction under the kills). A process crash must lose
nothing acknowledged in any: acknowledged data is always in the page cache already.

`--cycles N` (default 3; `make reliability` runs 100). The seed is printed on failure; set
KMOCK_RELIABILITY_SEED to replay a run's choices.
"""

from __future__ import annotations

import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from client import KafkaClient
from tests.reliability.damage import partitions_with_data, tear_tail
from tests.reliability.process import BrokerProcess
from tests.reliability.verify import Findings, verify
from tests.reliability.workload import Workload, wait_for_progress

TOPIC = "reliability"
PARTITIONS = 3
MODES = {
    "fsync": {"log.flush.interval.messages": 1},
    "default": {},
    "strict": {"kmock.durability": "strict"},
    # Small segments: the data topic rolls every few dozen records, and __consumer_offsets
    # rolls and is compacted every quarter second, so kills also land in rolls and in
    # compaction (whose output must replace the segments it cleaned, or not at all).
    "small-segments": {
        "log.segment.bytes": 64 * 1024,
        "offsets.topic.segment.bytes": 4 * 1024,
        "log.cleaner.backoff.ms": 250,
    },
}
PROGRESS_TIMEOUT_S = 90.0
# Records granted to the producers per cycle.
MIN_RECORDS = 50
MAX_RECORDS = 2000


@pytest.mark.reliability
@pytest.mark.parametrize("mode", list(MODES))
def test_crash_cycles_lose_no_acknowledged_record_or_commit(
    mode: str, cycles: int, tmp_path: Path, reliability_report: Any
) -> None:
    seed = int(os.environ.get("KMOCK_RELIABILITY_SEED", random.randrange(1 << 32)))
    rng = random.Random(seed)
    started = time.monotonic()
    broker = BrokerProcess(tmp_path / "data", tmp_path / "logs", overrides=MODES[mode])
    workload: Workload | None = None
    previous_committed: dict[tuple[str, str, int], int] = {}
    damages = 0
    last = Findings()
    context = f"mode={mode} seed={seed}"

    def verify_acknowledged() -> Findings:
        """Check the broker against everything the clients got acknowledged so far."""
        assert workload is not None
        records, commits = workload.ledger.snapshot()
        return verify(
            broker.bootstrap,
            TOPIC,
            PARTITIONS,
            Workload.GROUPS,
            records,
            commits,
            previous_committed,
        )

    try:
        broker.start()
        with KafkaClient(broker.bootstrap) as client:
            client.create_topic(TOPIC, num_partitions=PARTITIONS)
        workload = Workload(broker.bootstrap, TOPIC, PARTITIONS).start()
        for cycle in range(1, cycles + 1):
            where = f"{context} cycle {cycle}/{cycles}"
            # The random moment: after a random share of a random number of records.
            granted = rng.randint(MIN_RECORDS, MAX_RECORDS)
            workload.budget.grant(granted)
            wait_for_progress(
                workload.ledger,
                rng.randint(1, granted),
                1,
                PROGRESS_TIMEOUT_S,
                workload.check_alive,
            )
            broker.kill()
            damage = None
            if rng.random() < 0.5:
                damage = tear_tail(
                    rng.choice(partitions_with_data(broker.data_dir)), rng, label=str(cycle)
                )
                damages += 1
            broker.start()
            problems = broker.problems()
            assert not problems, f"{where}: the broker logged problems on restart:\n" + "\n".join(
                problems
            )
            if damage is not None:
                notes = [n for n in broker.recovery_notes() if f" {damage.partition_dir}:" in n]
                assert any(
                    "truncated" in n and f"bytes={damage.bytes_added}," in n for n in notes
                ), (
                    f"{where}: recovery did not report cutting the {damage.kind} "
                    f"({damage.bytes_added} bytes) from {damage.segment}: {notes}"
                )
            last = verify_acknowledged()
            assert last.ok, f"{where}:\n{last.summary()}"
        workload.stop()
        last = verify_acknowledged()
        assert last.ok, f"{context} after the last cycle:\n{last.summary()}"
        assert not broker.problems(), "\n".join(broker.problems())
    finally:
        if workload is not None and not workload.stopping.is_set():
            workload.stopping.set()
        if broker.is_running():
            broker.kill()
        ledger = workload.ledger if workload else None
        reliability_report(
            f"crash cycles [{mode}] seed={seed}: {broker.starts - 1 if broker.starts else 0} "
            f"kills, {damages} torn tails, {last.acked_records} acknowledged records "
            f"({len(last.lost_records)} lost), {last.acked_commits} acknowledged commits "
            f"({len(last.lost_commits)} lost, {len(last.backward_commits)} backward), "
            f"duplicates {last.duplicates or 0}, "
            f"failed sends {ledger.failed_sends if ledger else 0}, "
            f"client errors {len(ledger.client_errors) if ledger else 0}, "
            f"{time.monotonic() - started:.0f} s"
        )
    if workload.ledger.client_errors:
        pytest.fail(
            f"{context}: clients hit fatal errors:\n"
            + "\n".join(workload.ledger.client_errors[:20])
        )


def test_the_verification_sees_a_lost_record_and_a_lost_commit(tmp_path: Path) -> None:
    """The checker itself: cut the last acknowledged batch of the topic and of the group's
    __consumer_offsets partition while the broker is down (a loss no recovery would report),
    and the verification must name both, and the commit going backward."""
    from protocol.records import build_batch, iter_batches
    from tests.reliability.workload import AckedCommit, AckedRecord

    broker = BrokerProcess(
        tmp_path / "data", tmp_path / "logs", overrides={"offsets.topic.num.partitions": 1}
    )
    group = Workload.GROUPS[0]
    try:
        broker.start()
        records, commits = [], []
        with KafkaClient(broker.bootstrap) as client:
            client.create_topic(TOPIC, num_partitions=PARTITIONS)
            for i in range(5):
                value = f"ck-{i}"
                offset = client.produce(TOPIC, 0, build_batch([(None, value.encode(), (), i)]))
                records.append(AckedRecord(TOPIC, 0, offset, value))
                client.commit_offsets(group, {(TOPIC, 0): offset + 1})
                commits.append(AckedCommit(group, TOPIC, 0, offset + 1))
        previous: dict[tuple[str, str, int], int] = {}
        assert verify(broker.bootstrap, TOPIC, PARTITIONS, (group,), records, commits, previous).ok
        broker.kill()
        for directory in (f"{TOPIC}-0", "__consumer_offsets-0"):
            segment = max((broker.data_dir / directory).glob("*.log"))
            data = segment.read_bytes()
            last = [pos for pos, _ in iter_batches(data)][-1]
            segment.write_bytes(data[:last])
        broker.start()
        found = verify(broker.bootstrap, TOPIC, PARTITIONS, (group,), records, commits, previous)
    finally:
        if broker.is_running():
            broker.kill()
    assert [r.split(" ")[0] for r in found.lost_records] == [f"{TOPIC}-0@4"]
    assert len(found.lost_commits) == 1
    assert "acknowledged 5" in found.lost_commits[0]
    assert found.backward_commits == [f"{group} {TOPIC}-0: 5 -> 4"]
    assert not found.ok
