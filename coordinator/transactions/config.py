"""TransactionConfig: the transaction coordinator's settings, under Kafka's names.

`TRANSACTION_SETTINGS` is the one table of them, in the form of `coordinator.config`'s
COORDINATOR_SETTINGS: each Kafka setting with kmock's default and the field it fills, so
that the broker's settings can take their defaults from here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from coordinator.config import CoordinatorSetting

__all__ = ["TRANSACTION_SETTINGS", "TransactionConfig"]

TRANSACTION_SETTINGS: dict[str, CoordinatorSetting] = {
    s.name: s
    for s in (
        CoordinatorSetting("transaction.max.timeout.ms", "transaction_max_timeout_ms", 900000),
        CoordinatorSetting(
            "transactional.id.expiration.ms", "transactional_id_expiration_ms", 604800000
        ),
        CoordinatorSetting(
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            "transaction_abort_timed_out_transaction_cleanup_interval_ms",
            10000,
        ),
        CoordinatorSetting(
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            "transaction_remove_expired_transaction_cleanup_interval_ms",
            3600000,
        ),
        CoordinatorSetting(
            "transaction.state.log.num.partitions", "transaction_state_log_num_partitions", 50
        ),
        # Not a broker property in Kafka but the cluster's transaction.version feature level
        # (kafka-features / kafka-storage format --feature); 2, Kafka 4.x's default for new
        # clusters, bumps the epoch per transaction for clients that send EndTxn v5 and
        # writes TransactionLogValue v1.
        CoordinatorSetting("transaction.version", "transaction_version", 2),
    )
}
_DEFAULTS = {s.field: s.default for s in TRANSACTION_SETTINGS.values()}


# A NamedTuple, as CoordinatorConfig.
class TransactionConfig(NamedTuple):
    transaction_max_timeout_ms: int = _DEFAULTS["transaction_max_timeout_ms"]
    transactional_id_expiration_ms: int = _DEFAULTS["transactional_id_expiration_ms"]
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = _DEFAULTS[
        "transaction_abort_timed_out_transaction_cleanup_interval_ms"
    ]
    transaction_remove_expired_transaction_cleanup_interval_ms: int = _DEFAULTS[
        "transaction_remove_expired_transaction_cleanup_interval_ms"
    ]
    transaction_state_log_num_partitions: int = _DEFAULTS["transaction_state_log_num_partitions"]
    transaction_version: int = _DEFAULTS["transaction_version"]

    @classmethod
    def from_settings(cls, setting: Callable[[str], int]) -> TransactionConfig:
        """The config from a lookup of Kafka setting names (the broker's settings)."""
        return cls(**{s.field: setting(s.name) for s in TRANSACTION_SETTINGS.values()})


# Every field has its row, and every row its field.
assert set(TransactionConfig._fields) == set(_DEFAULTS)
