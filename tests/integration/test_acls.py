"""ACLs enforced for real clients over SASL_PLAINTEXT (PLAIN): an admin (super user) manages
them with kafka-python's KafkaAdminClient; alice may read a topic but not write it, and may
use one group but not another."""

from __future__ import annotations

from typing import Any

import pytest
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafka.errors import GroupAuthorizationFailedError, TopicAuthorizationFailedError

from tests.integration.harness import deadline, unique

pytestmark = pytest.mark.integration

PREFIXED = ACLResourcePatternType.PREFIXED
JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'user_admin="admin-pw" user_alice="alice-pw";'
)


def _conf(broker: Any, user: str) -> dict[str, Any]:
    return {
        "bootstrap_servers": broker.bootstrap_servers,
        "security_protocol": "SASL_PLAINTEXT",
        "sasl_mechanism": "PLAIN",
        "sasl_plain_username": user,
        "sasl_plain_password": f"{user}-pw",
        "request_timeout_ms": 10_000,
    }


@deadline(90)
def test_read_but_not_write_and_a_denied_group(fresh_broker: Any) -> None:
    broker = fresh_broker(
        **{
            "listeners": "SASL_PLAINTEXT://127.0.0.1:0",
            "listener.security.protocol.map": "SASL_PLAINTEXT:SASL_PLAINTEXT",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": "User:admin",
        }
    )
    topic, group, denied = unique("acl"), unique("g"), unique("denied")
    admin = KafkaAdminClient(**_conf(broker, "admin"))
    try:
        result = admin.create_acls(
            [
                ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.TOPIC, topic)),
                ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                    ResourcePattern(ResourceType.GROUP, group[:4], PREFIXED)),
                ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.DENY,
                    ResourcePattern(ResourceType.GROUP, denied)),
            ]
        )  # fmt: skip
        assert not result["failed"], result
        listed, error = admin.describe_acls(
            ACLFilter(
                "User:alice", None, ACLOperation.ANY, ACLPermissionType.ANY,
                ResourcePatternFilter(ResourceType.ANY, None, ACLResourcePatternType.ANY),
            )
        )  # fmt: skip
        assert error.errno == 0
        assert len(listed) == 3
    finally:
        admin.close()

    producer = KafkaProducer(**_conf(broker, "admin"))
    producer.send(topic, key=b"k", value=b"from admin").get(timeout=10)
    producer.close()

    alice = KafkaProducer(**_conf(broker, "alice"), max_block_ms=5000)
    with pytest.raises(TopicAuthorizationFailedError):
        alice.send(topic, key=b"k", value=b"from alice").get(timeout=10)
    alice.close()

    consumer = KafkaConsumer(
        topic, group_id=group, auto_offset_reset="earliest", enable_auto_commit=False,
        consumer_timeout_ms=15_000, **_conf(broker, "alice"),
    )  # fmt: skip
    try:
        message = next(iter(consumer))
        assert message.value == b"from admin"
        consumer.commit()
        assert consumer.committed(TopicPartition(topic, message.partition)) == 1
    finally:
        consumer.close()

    refused = KafkaConsumer(
        topic, group_id=denied, auto_offset_reset="earliest", consumer_timeout_ms=10_000,
        **_conf(broker, "alice"),
    )  # fmt: skip
    try:
        with pytest.raises(GroupAuthorizationFailedError):
            next(iter(refused))
    finally:
        refused.close()

    admin = KafkaAdminClient(**_conf(broker, "admin"))
    try:
        deleted = admin.delete_acls(
            [ACLFilter(
                "User:alice", None, ACLOperation.ANY, ACLPermissionType.DENY,
                ResourcePatternFilter(ResourceType.GROUP, None, ACLResourcePatternType.ANY),
            )]
        )  # fmt: skip
        assert len(deleted[0][1]) == 1
    finally:
        admin.close()
    assert (broker.broker.data_dir / "acls.json").read_text().count("User:alice") == 2
