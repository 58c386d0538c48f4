"""Write N offset-commit records into a kmock data dir's __consumer_offsets, with kmock's code.

kmock creates __consumer_offsets only on first group use, so `generate` creates it when the
data dir does not have it yet, with kmock's own TopicRegistry and offsets.topic.* settings
(topics.json and the __consumer_offsets-<n> partition directories). The records are what
kmock's coordinator itself writes for OffsetCommit: key OffsetCommitKey v1 and value
OffsetCommitValue v3 (`protocol.consumer_offsets.encode_key/encode_value`), one batch per
commit request (`protocol.records.build_batch`), appended with `storage.Log` to the group's
partition (`GroupCoordinator.partition_for`, Kafka's hash).

Shape: GROUPS groups, each with one consumer committing PARTITIONS partitions of one topic
per commit; commits go round-robin over the groups until N records are written. So the
records fold into GROUPS * PARTITIONS keys (each key overwritten N / keys times), as a
long-running cluster's uncompacted __consumer_offsets does.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from coordinator.coordinator import CoordinatorConfig, GroupCoordinator
from protocol.consumer_offsets import OffsetCommitKey, OffsetCommitValue, encode_key, encode_value
from protocol.records import build_batch
from storage import Log, LogConfig

OFFSETS_TOPIC = "__consumer_offsets"
VALUE_VERSION = 3  # what coordinator/records.py writes without an expire timestamp


def _ensure_layout(data_dir: Path) -> None:
    """Create __consumer_offsets with kmock's own registry, as the broker would on first use."""
    from broker.config import load_config
    from broker.topics import TopicRegistry

    cfg = load_config(overrides={"log.dirs": str(data_dir)})
    registry = TopicRegistry(cfg, data_dir)
    registry.load(int(time.time() * 1000))
    if registry.get(OFFSETS_TOPIC) is None:
        registry.create(
            OFFSETS_TOPIC,
            cfg["offsets.topic.num.partitions"],
            {"cleanup.policy": "compact", "segment.bytes": str(cfg["offsets.topic.segment.bytes"])},
            now_wall_ms=int(time.time() * 1000),
            internal=True,
        )
    registry.close()


def generate(data_dir: Path, records: int, groups: int = 1000, partitions: int = 20) -> dict:
    _ensure_layout(data_dir)
    table = json.loads((data_dir / "topics.json").read_text())
    entry = table[OFFSETS_TOPIC]
    n_partitions = int(entry["partitions"])
    segment_bytes = int(entry["configs"].get("segment.bytes", 104857600))
    coordinator = GroupCoordinator(CoordinatorConfig(offsets_topic_num_partitions=n_partitions))
    now = int(time.time() * 1000)
    config = LogConfig(cleanup_policy="compact", segment_bytes=segment_bytes)
    logs = {
        p: Log.open(data_dir / f"{OFFSETS_TOPIC}-{p}", config, now_wall_ms=now)
        for p in range(n_partitions)
    }
    group_ids = [f"replay-group-{g:05d}" for g in range(groups)]
    placement = [coordinator.partition_for(g) for g in group_ids]
    keys = [
        [
            encode_key(OffsetCommitKey(group=g, topic="orders", partition=p))
            for p in range(partitions)
        ]
        for g in group_ids
    ]
    written = 0
    batches = 0
    rounds = 0
    t0 = time.perf_counter()
    try:
        while written < records:
            for gi in range(groups):
                take = min(partitions, records - written)
                if take <= 0:
                    break
                offset_base = rounds * 1000
                batch = build_batch(
                    (
                        keys[gi][p],
                        encode_value(
                            OffsetCommitValue(
                                offset=offset_base + p,
                                leader_epoch=0,
                                metadata="",
                                commit_timestamp=now,
                            ),
                            VALUE_VERSION,
                        ),
                        (),
                        now,
                    )
                    for p in range(take)
                )
                logs[placement[gi]].append(batch, wall_ms=now)
                written += take
                batches += 1
            rounds += 1
    finally:
        for log in logs.values():
            log.close()  # fsyncs and writes the index files
    used = len(set(placement))
    size = sum(
        f.stat().st_size
        for p in range(n_partitions)
        for f in (data_dir / f"{OFFSETS_TOPIC}-{p}").glob("*.log")
    )
    return {
        "records": written,
        "batches": batches,
        "groups": groups,
        "partitions": partitions,
        "keys": groups * partitions,
        "partitions_used": used,
        "offsets_partitions": n_partitions,
        "bytes": size,
        "seconds": time.perf_counter() - t0,
    }
