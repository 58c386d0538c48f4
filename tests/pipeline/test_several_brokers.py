"""The pipeline over the data dir of several brokers (`kmock.brokers` = 3): one log dir per
broker, `broker-<id>/`, each partition's log in one of them. Discovery reads every
partition once and never takes a broker dir for a partition of a topic named "broker"."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from pipeline.segments import partition_dirs
from protocol.errors import ErrorCode
from tests.broker.test_cluster import THREE, at, find_coordinator, metadata
from tests.reliability.inproc import commit, create, produce, running


def write_cluster(data_dir: Path) -> dict[int, list[bytes]]:
    """A 3-broker process leaves `data_dir`: orders (3 partitions, 2 replicas), each
    partition written at its leader, and a group's offsets committed at its coordinator.
    Returns partition -> values."""
    sent: dict[int, list[bytes]] = {0: [b"a", b"b"], 1: [b"c"], 2: [b"d", b"e", b"f"]}

    async def main() -> None:
        settings = {**THREE, "default.replication.factor": 2, "num.partitions": 3}
        async with running(data_dir, **settings) as broker:
            await create(await at(broker, 1), "orders")
            await metadata(await at(broker, 1), "orders")
            for index, values in sent.items():
                leader = broker.topics.partition("orders", index).leader
                for value in values:
                    code, _ = await produce(
                        await at(broker, leader), "orders", value, partition=index
                    )
                    assert code == ErrorCode.NONE
            [c] = await find_coordinator(await at(broker, 1), "billing")
            for index in sent:
                client = await at(broker, c.node_id)
                assert await commit(client, "billing", "orders", 1, partition=index) == 0

    trio.run(main)
    return sent


def test_partition_dirs_reads_each_partition_once_through_the_broker_dirs(tmp_path: Path) -> None:
    write_cluster(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == [
        "broker-1",
        "broker-2",
        "broker-3",
    ]
    found = partition_dirs([tmp_path])
    topics = {t for t, _, _ in found}
    assert "broker" not in topics
    orders = [(p, d) for t, p, d in found if t == "orders"]
    assert [p for p, _ in orders] == [0, 1, 2]
    assert {d.parent.parent for _, d in orders} == {tmp_path}
    offsets = [p for t, p, _ in found if t == "__consumer_offsets"]
    assert offsets == list(range(6))
    # A broker's own dir is a data dir too.
    one = tmp_path / "broker-1"
    assert [(t, p) for t, p, _ in partition_dirs([one])] == sorted(
        (t, p) for t, p, d in found if d.parent == one
    )


def test_a_topic_named_broker_is_still_a_topic(tmp_path: Path) -> None:
    for name in ("broker-0", "broker-1", "orders-0"):
        (tmp_path / name).mkdir()
    assert [(t, p) for t, p, _ in partition_dirs([tmp_path])] == [
        ("broker", 0),
        ("broker", 1),
        ("orders", 0),
    ]


@pytest.mark.pipeline
def test_records_and_committed_offsets_of_a_three_broker_data_dir(
    tmp_path: Path, spark: object
) -> None:
    from pipeline import jobs

    sent = write_cluster(tmp_path)
    rows = jobs.records(spark, [str(tmp_path)], topics=["orders"]).collect()
    got: dict[int, list[bytes]] = {}
    for r in sorted(rows, key=lambda r: (r["partition"], r["offset"])):
        got.setdefault(r["partition"], []).append(bytes(r["value"]))
    assert got == sent
    ends = {
        r["partition"]: r["log_end_offset"]
        for r in jobs.log_end_offsets(spark, [str(tmp_path)], topics=["orders"]).collect()
    }
    assert ends == {p: len(v) for p, v in sent.items()}
    committed = jobs.committed_offsets(spark, [str(tmp_path)], groups=["billing"]).collect()
    assert sorted((r["topic"], r["partition"], r["offset"]) for r in committed) == [
        ("orders", p, 1) for p in sorted(sent)
    ]
