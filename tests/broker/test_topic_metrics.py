"""kmock_records_in, counted by Partition.append: per topic, from the first append on."""

from __future__ import annotations

from pathlib import Path

from broker.metrics import Metrics
from broker.topics import TopicRegistry
from protocol.records import build_batch
from tests.conftest import broker_config

T0 = 1_700_000_000_000


def batch(count: int) -> bytes:
    return build_batch([(None, b"v%d" % i, (), T0) for i in range(count)])


def series(metrics: Metrics) -> list[str]:
    return [
        line
        for line in metrics.render().decode().splitlines()
        if line.startswith("kmock_records_in_total")
    ]


def test_records_in_counts_each_topics_appends_and_shows_no_series_before(tmp_path: Path) -> None:
    metrics = Metrics()
    registry = TopicRegistry(broker_config(tmp_path), tmp_path, metrics)
    a = registry.create("a", 2, {}, now_wall_ms=T0)
    registry.create("b", 1, {}, now_wall_ms=T0)
    assert series(metrics) == []
    a.partitions[0].append(batch(3), wall_ms=T0)
    a.partitions[1].append(batch(2), wall_ms=T0)
    a.partitions[0].append(batch(1), wall_ms=T0)
    assert series(metrics) == ['kmock_records_in_total{topic="a"} 6.0']
    # A topic deleted and created again keeps counting in the same series.
    registry.delete("a")
    again = registry.create("a", 1, {}, now_wall_ms=T0)
    again.partitions[0].append(batch(4), wall_ms=T0)
    assert series(metrics) == ['kmock_records_in_total{topic="a"} 10.0']
    registry.close()


def test_a_registry_without_metrics_appends_uncounted(tmp_path: Path) -> None:
    registry = TopicRegistry(broker_config(tmp_path), tmp_path)
    partition = registry.create("a", 1, {}, now_wall_ms=T0).partitions[0]
    info = partition.append(batch(2), wall_ms=T0)
    assert (info.base_offset, info.last_offset) == (0, 1)
    assert partition.records_in is None
    registry.close()
