from coordinator.transactions.config import TRANSACTION_SETTINGS, TransactionConfig


def test_defaults_are_kafkas():
    assert TransactionConfig() == TransactionConfig(
        transaction_max_timeout_ms=900000,
        transactional_id_expiration_ms=604800000,
        transaction_abort_timed_out_transaction_cleanup_interval_ms=10000,
        transaction_remove_expired_transaction_cleanup_interval_ms=3600000,
        transaction_state_log_num_partitions=50,
        transaction_version=2,
    )
    assert all(s.kafka_default is None for s in TRANSACTION_SETTINGS.values())


def test_from_settings_reads_each_kafka_name():
    settings = {name: i + 1 for i, name in enumerate(TRANSACTION_SETTINGS)}
    config = TransactionConfig.from_settings(settings.__getitem__)
    assert config.transaction_max_timeout_ms == settings["transaction.max.timeout.ms"]
    assert config.transaction_version == settings["transaction.version"]
    assert config.transactional_id_expiration_ms == settings["transactional.id.expiration.ms"]
