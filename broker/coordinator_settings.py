"""The broker settings of the coordinators (groups, KIP-848 consumer groups, transactions),
under Kafka's names: rows of broker.config.SETTINGS, kept here so that the table stays
readable. Their defaults come from the coordinators' own tables (coordinator.config,
coordinator.transactions.config, coordinator.consumer), stated once there."""

from __future__ import annotations

from typing import Any

from coordinator.config import COORDINATOR_SETTINGS
from coordinator.consumer import ConsumerGroupConfig
from coordinator.transactions.config import TRANSACTION_SETTINGS

__all__ = ["COORDINATOR_BROKER_SETTINGS"]

_GROUP = COORDINATOR_SETTINGS
_TXN = TRANSACTION_SETTINGS
_CONSUMER = ConsumerGroupConfig()  # the group.consumer.* defaults, which are Kafka's


def _s(name: str, type: str, default: Any, doc: str, **kw: Any) -> dict[str, Any]:
    """A row, as broker.config.Setting's fields."""
    return {"name": name, "type": type, "default": default, "doc": doc, **kw}


COORDINATOR_BROKER_SETTINGS: list[dict[str, Any]] = [
    # --- group coordinator ---
    _s(
        "offsets.topic.num.partitions",
        "int",
        _GROUP["offsets.topic.num.partitions"].default,
        "Partitions of __consumer_offsets.",
        min_value=1,
    ),
    _s(
        "offsets.topic.segment.bytes",
        "int",
        104857600,
        "Segment size of __consumer_offsets.",
        min_value=1,
    ),
    _s(
        "offsets.retention.minutes",
        "int",
        _GROUP["offsets.retention.minutes"].default,
        "How long committed offsets are kept.",
        min_value=1,
    ),
    _s(
        "offsets.retention.check.interval.ms",
        "long",
        _GROUP["offsets.retention.check.interval.ms"].default,
        "How often expired offsets are removed.",
        min_value=1,
    ),
    _s(
        "offset.metadata.max.bytes",
        "int",
        _GROUP["offset.metadata.max.bytes"].default,
        "Largest commit metadata string.",
    ),
    _s(
        "group.min.session.timeout.ms",
        "int",
        _GROUP["group.min.session.timeout.ms"].default,
        "Smallest session timeout accepted.",
    ),
    _s(
        "group.max.session.timeout.ms",
        "int",
        _GROUP["group.max.session.timeout.ms"].default,
        "Largest session timeout accepted.",
    ),
    _s(
        "group.initial.rebalance.delay.ms",
        "int",
        _GROUP["group.initial.rebalance.delay.ms"].default,
        "Wait for more members before the first rebalance of an empty group.",
        kafka_default=_GROUP["group.initial.rebalance.delay.ms"].kafka_default,
    ),
    _s(
        "group.max.size",
        "int",
        _GROUP["group.max.size"].default,
        "Members a group may have.",
        min_value=1,
    ),
    # --- transaction coordinator ---
    _s(
        "transaction.state.log.num.partitions",
        "int",
        _TXN["transaction.state.log.num.partitions"].default,
        "Partitions of __transaction_state.",
        min_value=1,
    ),
    _s(
        "transaction.state.log.segment.bytes",
        "int",
        104857600,
        "Segment size of __transaction_state.",
        min_value=1,
    ),
    _s(
        "transaction.max.timeout.ms",
        "int",
        _TXN["transaction.max.timeout.ms"].default,
        "Largest transaction.timeout.ms a producer may ask for.",
        min_value=1,
    ),
    _s(
        "transactional.id.expiration.ms",
        "int",
        _TXN["transactional.id.expiration.ms"].default,
        "How long an idle transactional id is kept.",
        min_value=1,
    ),
    _s(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        "int",
        _TXN["transaction.abort.timed.out.transaction.cleanup.interval.ms"].default,
        "How often transactions past their timeout are aborted.",
        min_value=1,
    ),
    _s(
        "transaction.remove.expired.transaction.cleanup.interval.ms",
        "int",
        _TXN["transaction.remove.expired.transaction.cleanup.interval.ms"].default,
        "How often expired transactional ids are removed.",
        min_value=1,
    ),
    _s(
        "transaction.version",
        "int",
        _TXN["transaction.version"].default,
        "The transaction.version feature level (Kafka sets it with kafka-features): 2 "
        "bumps the epoch per transaction for clients that speak it (KIP-890).",
        choices=None,
        min_value=0,
    ),
    # --- KIP-848 consumer groups (group.protocol=consumer) ---
    _s(
        "group.consumer.session.timeout.ms",
        "int",
        _CONSUMER.session_timeout_ms,
        "A consumer group member that does not heartbeat for this long is removed.",
        min_value=1,
    ),
    _s(
        "group.consumer.heartbeat.interval.ms",
        "int",
        _CONSUMER.heartbeat_interval_ms,
        "How often consumer group members heartbeat (sent to them); below the session timeout.",
        min_value=1,
    ),
    _s(
        "group.consumer.max.size",
        "int",
        _CONSUMER.max_size,
        "Members a consumer group may have.",
        min_value=1,
    ),
    _s(
        "group.consumer.assignors",
        "list",
        ",".join(_CONSUMER.assignors),
        "Server-side assignors (uniform, range); the first is the default, a member may "
        "name another.",
    ),
    _s(
        "group.consumer.migration.policy",
        "string",
        str(_CONSUMER.migration_policy),
        "Online conversion between classic and consumer groups: upgrade (a classic group "
        "becomes a consumer group when a consumer-protocol member joins it), downgrade (back, "
        "when its last consumer-protocol member leaves), bidirectional (both), or disabled.",
        choices=("disabled", "upgrade", "downgrade", "bidirectional"),
        choices_ignore_case=True,  # GroupCoordinatorConfig: CaseInsensitiveValidString
    ),
]
