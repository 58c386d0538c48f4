"""The broker settings of several brokers in one process (broker.cluster_state), under
Kafka's names where Kafka has them: rows of broker.config.SETTINGS, kept here so that the
table stays readable."""

from __future__ import annotations

from typing import Any

__all__ = ["CLUSTER_SETTINGS"]


def _s(name: str, type: str, default: Any, doc: str, **kw: Any) -> dict[str, Any]:
    """A row, as broker.config.Setting's fields."""
    return {"name": name, "type": type, "default": default, "doc": doc, **kw}


CLUSTER_SETTINGS: list[dict[str, Any]] = [
    _s(
        "kmock.brokers",
        "int",
        1,
        "Brokers served by this process (ids 1..N when N > 1), each on its own listeners at "
        "consecutive ports from the configured ones (port 0: each its own free port), all "
        "sharing one log per partition (README, Several brokers). kmock only.",
        min_value=1,
    ),
    _s(
        "offsets.topic.replication.factor",
        "int",
        1,
        "Replicas of each __consumer_offsets partition, at most kmock.brokers.",
        kafka_default=3,
        min_value=1,
    ),
    _s(
        "transaction.state.log.replication.factor",
        "int",
        1,
        "Replicas of each __transaction_state partition, at most kmock.brokers.",
        kafka_default=3,
        min_value=1,
    ),
    _s(
        "auto.leader.rebalance.enable",
        "boolean",
        True,
        "Give a restarted broker back the leadership of the partitions it is the preferred "
        "replica of (at once; Kafka checks every leader.imbalance.check.interval.seconds).",
    ),
]
